import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { AttemptResult, WebhookRequest } from '../domain/deliveries.js';
import { traceparentOf } from '../domain/trace.js';
import {
  blockedAddress,
  checkTargetUrl,
  type WebhookSecurity,
} from '../domain/webhook-security.js';

/**
 * One webhook delivery attempt (the reference's WebhookDelivery rules): a POST of the event's
 * JSON, byte for byte as stored, signed `X-Cycles-Signature: sha256=<hex HMAC-SHA256 of the raw
 * body>` with the subscription's secret, with the event's id, type and trace. The target's name
 * is resolved here and every address checked against the blocked ranges; the connection then
 * goes to the address checked (no second lookup a re-pointed name could win). Redirects are not
 * followed (a 3xx is a failure), the attempt has a deadline, and nothing of the answer but its
 * status is read.
 */
export const SIGNATURE_HEADER = 'x-cycles-signature';
export const USER_AGENT = 'budget-reservations-webhooks/2';

export const signatureOf = (secret: string, body: string): string =>
  `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;

/** Constant-time check of a delivery's signature, for receivers (and the tests). */
export function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  const expected = Buffer.from(signatureOf(secret, body));
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The headers of an attempt: the subscription's first, the protocol's over them. */
export function deliveryHeaders(r: WebhookRequest): Record<string, string> {
  const own = Object.fromEntries(
    Object.entries(r.headers ?? {}).filter(
      ([name]) => !/^(x-cycles-|content-type$|content-length$|host$|traceparent$)/i.test(name),
    ),
  );
  return {
    ...own,
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-cycles-event-id': r.eventId,
    'x-cycles-event-type': r.eventType,
    'x-cycles-delivery-id': r.deliveryId,
    'x-cycles-delivery-attempt': String(r.attempt),
    [SIGNATURE_HEADER]: signatureOf(r.secret, r.body),
    'x-cycles-trace-id': r.traceId,
    traceparent: traceparentOf({ traceId: r.traceId, flags: r.traceFlags }, freshSpan()),
    ...(r.requestId !== undefined && { 'x-request-id': r.requestId }),
  };
}

const freshSpan = () => {
  let span = randomBytes(8).toString('hex');
  while (/^0+$/.test(span)) span = randomBytes(8).toString('hex');
  return span;
};

/** Resolves a host to every address it has (an IP literal is itself). */
export type Resolve = (host: string) => Promise<string[]>;
export const resolveAll: Resolve = async (host) =>
  isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Why an attempt failed, in a form safe to keep and show (no URL path, no secret). */
const reason = (error: unknown): string => {
  const e = error as NodeJS.ErrnoException;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'ETIMEDOUT') {
    return 'timed out';
  }
  if (e?.code) return `connection failed (${e.code})`;
  return e instanceof Error ? e.message : String(error);
};

/**
 * Makes one attempt and answers what came of it: the status (0 when there was no answer), the
 * time it took, and why it failed. Never throws.
 */
export async function postWebhook(
  r: WebhookRequest,
  security: WebhookSecurity,
  timeoutMs: number,
  resolve: Resolve = resolveAll,
): Promise<AttemptResult> {
  const started = performance.now();
  const took = () => performance.now() - started;
  let target: URL;
  let address: string;
  try {
    target = checkTargetUrl(security, r.url);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const addresses = await resolve(host);
    const blocked = blockedAddress(security, addresses);
    if (blocked !== undefined) {
      return {
        status: 0,
        latencyMs: took(),
        error: `refused: resolves to ${blocked}, a blocked range`,
      };
    }
    const first = addresses[0];
    if (first === undefined) return { status: 0, latencyMs: took(), error: 'no address' };
    address = first;
  } catch (error) {
    return { status: 0, latencyMs: took(), error: reason(error) };
  }
  // The connection goes to the address just checked, whatever the name resolves to by now.
  const pinned: LookupFunction = (_host, options, callback) => {
    const family = isIP(address);
    if ((options as { all?: boolean }).all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((done) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: deliveryHeaders(r),
        lookup: pinned,
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        res.resume(); // only the status matters: the body is drained and dropped
        done({
          status: res.statusCode ?? 0,
          latencyMs: took(),
          ...(!(res.statusCode && res.statusCode >= 200 && res.statusCode < 300) && {
            error: `HTTP ${res.statusCode}`,
          }),
        });
      },
    );
    req.on('error', (error) => done({ status: 0, latencyMs: took(), error: reason(error) }));
    req.end(r.body);
  });
}
