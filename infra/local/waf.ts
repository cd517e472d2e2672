import type { IncomingHttpHeaders } from 'node:http';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { serverNow } from '../../functions/clock.js';
import { config } from '../../functions/config/settings.js';
import { isKeyShaped, KEY_HEADERS } from '../../functions/http/unknown-keys.js';
import type { Server } from '../../functions/routes.js';
import { EDGE_RESPONSES, EDGE_WINDOW_S, type EdgeResponse } from '../edge-responses.js';

/**
 * The edge's WAF rules, emulated in front of the local servers (docs/decisions.md § Edge, §
 * Rate limits; README § Limits), so tests and a local run see what AWS answers before any
 * function runs. The rules, in the web ACL's order (infra/edge-firewall.ts):
 *
 * 1. per source address: more than `perSourcePerMinute` requests in the trailing minute → 429;
 * 2. key format, on the runtime server's `/v1/` routes: no key header of our shape and no
 *    X-Admin-API-Key → 401;
 * 3. per API key, one rule per key header: more than `perKeyPerMinute` in the minute → 429.
 *
 * Like WAF, a rate rule counts every request it sees (blocked ones too, so a flood stays
 * blocked), a request the key-format rule blocks is not seen by the per-key rules, and counts
 * are approximate: a sliding window estimated from this minute's count and the last one's.
 * Not emulated: the admin allow-list and AWS's managed rule groups.
 */
export interface WafRules {
  readonly perSourcePerMinute: number;
  readonly perKeyPerMinute: number;
}

let shared: LocalWaf | undefined;

/**
 * The process's emulated web ACL, as the settings say, or undefined when it is off (LOCAL_WAF).
 * One for both servers, as one web ACL guards both APIs behind one distribution: a source's
 * requests to either count together.
 */
export function localWaf(): LocalWaf | undefined {
  if (!config.LOCAL_WAF) return undefined;
  shared ??= new LocalWaf({
    perSourcePerMinute: config.LOCAL_WAF_SOURCE_RATE_PER_MINUTE,
    perKeyPerMinute: config.LOCAL_WAF_KEY_RATE_PER_MINUTE,
  });
  return shared;
}

export interface WafRequest {
  readonly server: Server;
  /** The decoded path (API Gateway's), or undefined when the target is not one. */
  readonly path: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly sourceIp: string;
}

const WINDOW_MS = EDGE_WINDOW_S * 1000;
/** Aggregation keys kept at most (a flood of distinct keys costs bounded memory). */
const MAX_KEYS = 100_000;

/** A rate-based rule: requests per aggregation key in the trailing window. */
class RateRule {
  private window = 0;
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Counts one request of `key`; true when its rate is now over the limit (block). */
  over(key: string, now: number): boolean {
    this.roll(now);
    const count = (this.current.get(key) ?? 0) + 1;
    if (this.current.size >= MAX_KEYS && !this.current.has(key)) this.current.clear();
    this.current.set(key, count);
    const elapsed = (now - this.window) / WINDOW_MS;
    const estimate = count + (this.previous.get(key) ?? 0) * (1 - elapsed);
    return estimate > this.limit;
  }

  private roll(now: number): void {
    const window = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    if (window === this.window) return;
    this.previous = window - this.window === WINDOW_MS ? this.current : new Map();
    this.current = new Map();
    this.window = window;
  }
}

export class LocalWaf {
  private readonly perSource: RateRule;
  private readonly perKey: Record<(typeof KEY_HEADERS)[number], RateRule>;
  /** Blocks by rule since start: what a test or the bench reads (WAF's metrics). */
  readonly blocked = { PerSourceRate: 0, KeyFormat: 0, PerKeyRate: 0 };

  constructor(
    rules: WafRules,
    private readonly now: () => number = serverNow,
  ) {
    this.perSource = new RateRule(rules.perSourcePerMinute);
    this.perKey = {
      'x-cycles-api-key': new RateRule(rules.perKeyPerMinute),
      'x-service-api-key': new RateRule(rules.perKeyPerMinute),
    };
  }

  /** The edge's answer to a request it blocks; undefined: it passes to API Gateway. */
  inspect(request: WafRequest): APIGatewayProxyStructuredResultV2 | undefined {
    const now = this.now();
    if (this.perSource.over(request.sourceIp, now))
      return this.block('PerSourceRate', 'rateLimited');
    if (request.server === 'runtime' && request.path?.startsWith('/v1/') && !keyed(request.headers))
      return this.block('KeyFormat', 'unauthorized');
    for (const header of KEY_HEADERS) {
      const key = headerOf(request.headers, header);
      if (key !== undefined && this.perKey[header].over(key, now))
        return this.block('PerKeyRate', 'rateLimited');
    }
    return undefined;
  }

  private block(rule: keyof LocalWaf['blocked'], answer: EdgeResponse) {
    this.blocked[rule]++;
    const { status, body, headers } = EDGE_RESPONSES[answer];
    return {
      statusCode: status,
      headers: { 'content-type': 'application/json', ...headers },
      body,
    };
  }
}

const headerOf = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** The key-format rule's pass: a key header of our shape, or an operator's admin key. */
const keyed = (headers: IncomingHttpHeaders): boolean =>
  KEY_HEADERS.some((name) => isKeyShaped(headerOf(headers, name) ?? '')) ||
  (headerOf(headers, 'x-admin-api-key') ?? '').length > 0;
