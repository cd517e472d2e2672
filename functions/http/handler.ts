import { randomUUID } from 'node:crypto';
import type * as z from 'zod/mini';
import { config } from '../config/settings.js';
import { invalidRequest } from '../domain/errors.js';
import { illFormedStringAt, parseExactJson } from '../domain/json.js';
import type { RequestCount } from '../domain/rate-limits.js';
import type { Trace } from '../domain/trace.js';
import type { RouteId, routes } from '../routes.js';
import type { Invocation } from '../telemetry/invocation.js';
import { actorOf, type WriteContext } from '../use-cases/context.js';
import { type AdminCaller, authenticate, type RouteCaller, type TenantCaller } from './auth.js';
import type { contracts } from './contracts.js';
import type { ErrorDetails } from './errors.js';
import { admitRequest, rateLimitHeaders } from './rate-limits.js';
import type { Reply } from './reply.js';
import { routeFacts } from './route-facts.js';
import { type Event, requestTrace, respond, serve } from './serve.js';

export type { Event, Result } from './serve.js';

/** Request schemas are zod/mini (docs/architecture.md § Request schemas). */
interface Schemas {
  readonly body?: z.ZodMiniType;
  readonly query?: z.ZodMiniType;
  readonly params?: z.ZodMiniType;
}
type Parsed<S extends Schemas, K extends keyof Schemas> = S[K] extends z.ZodMiniType
  ? z.output<S[K]>
  : undefined;
type ContractOf<R extends RouteId> = (typeof contracts)[R];

/** The request schemas a route's contract names (http/contracts.ts): its handler parses with these. */
export type RouteSchemas<R extends RouteId> = {
  readonly [K in keyof ContractOf<R> as K extends keyof Schemas ? K : never]: ContractOf<R>[K];
};

/** A wire body as a view builds it: read-only all the way down (a view never mutates). */
type Wire<T> = T extends readonly (infer E)[]
  ? readonly Wire<E>[]
  : T extends object
    ? { readonly [K in keyof T]: Wire<T[K]> }
    : T;
type InputOf<S> = S extends z.core.$ZodType ? Wire<z.input<S>> : never;
type AlsoOf<C> = C extends { readonly alsoAnswers: { readonly body: infer S } }
  ? InputOf<S>
  : never;
type SuccessOf<C> = C extends { readonly response: infer S } ? InputOf<S> : never;

/**
 * What a route's `run` answers, checked by the compiler against its contract: the wire body its
 * response schema describes, or a Reply of it (headers) or of its other answer (health's 503).
 * A route that never succeeds (not found) answers nothing.
 */
export type RouteAnswer<R extends RouteId> =
  | SuccessOf<ContractOf<R>>
  | Reply<SuccessOf<ContractOf<R>>>
  | Reply<AlsoOf<ContractOf<R>>>;

export type AuthKind<R extends RouteId> = (typeof routes)[R]['auth']['kind'];
type CallerOf<R extends RouteId> =
  AuthKind<R> extends 'tenant'
    ? TenantCaller
    : AuthKind<R> extends 'tenantOrAdmin'
      ? TenantCaller | AdminCaller
      : AuthKind<R> extends 'admin'
        ? AdminCaller
        : RouteCaller;

export interface RouteInput<R extends RouteId, S extends Schemas> {
  readonly body: Parsed<S, 'body'>;
  readonly query: Parsed<S, 'query'>;
  readonly params: Parsed<S, 'params'>;
  readonly caller: CallerOf<R>;
  readonly requestId: string;
  /** The request's W3C trace (echoed on the answer, stamped on what it writes). */
  readonly trace: Trace;
  readonly now: number;
  /**
   * The request's rate count, for a reserve, event, commit or charge of a tenant key to add the
   * counters of its policies to once it knows its scopes (http/rate-limits.ts); absent: nothing
   * left to count.
   */
  readonly rate: RequestCount | undefined;
  /** Who writes, in which request, when: what an audited change records. */
  readonly context: WriteContext;
  readonly event: Event;
}

/**
 * The way to build an HTTP Lambda: request id → authenticate → validate → run → respond, with
 * every failure mapped to SPEC's error body and one log line and one set of metrics per request
 * (http/serve.ts; a route with no key and no input is built by its plainHandler). `run` returns
 * the wire body, answered with the route's success status. Each invocation runs in its own
 * telemetry scope (telemetry/invocation.ts), so DynamoDB calls and business metrics are counted
 * on the request that made them.
 */
export function httpHandler<R extends RouteId>(
  routeId: R,
  schemas: RouteSchemas<R>,
  run: (input: RouteInput<R, RouteSchemas<R>>) => Promise<RouteAnswer<R>>,
  options: { readonly errorDetails?: ErrorDetails } = {},
) {
  const route = routeFacts(routeId);
  return serve(routeId, options, async (event, now, invocation) => {
    const headers = event.headers ?? {};
    const caller = await authenticate(headers, route.auth, now);
    if (invocation) identify(invocation, caller);
    // Before the body is even parsed: a limited caller costs one counter write, no budget work.
    const rate = await admitRequest(caller, route.rate ?? 'request', now);
    const s: Schemas = schemas;
    const requestId = invocation?.requestId ?? randomUUID();
    const answer = await (async () => {
      const input = {
        body: s.body ? parseBody(s.body, event, headers) : undefined,
        query: s.query
          ? parse(s.query, event.queryStringParameters ?? {}, 'query parameter ')
          : undefined,
        params: s.params
          ? parse(s.params, event.pathParameters ?? {}, 'path parameter ')
          : undefined,
        caller,
        requestId,
        trace: invocation?.trace ?? requestTrace(headers),
        now,
        rate: rate && !rate.done ? rate : undefined,
        context: {
          now,
          requestId,
          ...(caller.kind !== 'anonymous' && { actor: actorOf(caller) }),
        },
        event,
      } as RouteInput<R, RouteSchemas<R>>;
      return run(input);
    })().catch(async (error: unknown) => {
      // Failed before its use case counted it (a 400, a 404): counted all the same.
      if (rate && !rate.done) await rate.add([]);
      throw error;
    });
    // Every route that takes `rate` counts it before its write; this only backs a missed one.
    if (rate && !rate.done) await rate.add([]).catch(() => undefined);
    const result = respond(answer, route.status);
    return { ...result, headers: { ...result.headers, ...rateLimitHeaders(rate?.applied) } };
  });
}

/** Who called, for the log line (key id, never the secret) and the metrics. */
function identify(invocation: Invocation, caller: RouteCaller): void {
  if (caller.kind === 'admin') invocation.keyId = caller.operator?.keyId ?? 'admin';
  if (caller.kind !== 'tenant') return;
  invocation.tenant = caller.tenant;
  invocation.keyId = caller.keyId;
}

function parseBody(
  schema: z.ZodMiniType,
  event: Event,
  headers: Record<string, string | undefined>,
): unknown {
  const contentType = headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    throw invalidRequest('Content-Type must be application/json', { field: 'content-type' });
  }
  const raw = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(raw) > config.MAX_BODY_BYTES) {
    throw invalidRequest(`request body exceeds ${config.MAX_BODY_BYTES} bytes`, {
      limit_bytes: config.MAX_BODY_BYTES,
    });
  }
  const parsed = parseExactJson(raw);
  if (!parsed) throw invalidRequest('request body is not valid JSON', { field: 'body' });
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('request body must be a JSON object', { field: 'body' });
  }
  return parse(schema, withHeaderIdempotencyKey(value as Record<string, unknown>, headers), '');
}

/** SPEC § Idempotency rule 5: X-Idempotency-Key and the body's key must agree; either may be alone. */
function withHeaderIdempotencyKey(
  body: Record<string, unknown>,
  headers: Record<string, string | undefined>,
) {
  const header = headers['x-idempotency-key'];
  if (header === undefined) return body;
  if (header.length < 1 || header.length > 256) {
    throw invalidRequest('X-Idempotency-Key must be 1 to 256 characters', {
      field: 'X-Idempotency-Key',
    });
  }
  if (body.idempotency_key === undefined) return { ...body, idempotency_key: header };
  if (body.idempotency_key !== header) {
    throw invalidRequest('X-Idempotency-Key header and body idempotency_key differ', {
      field: 'idempotency_key',
    });
  }
  return body;
}

function parse(schema: z.ZodMiniType, value: unknown, what: string): unknown {
  const illFormed = illFormedStringAt(value);
  if (illFormed !== undefined) {
    throw invalidRequest(`${what}${illFormed}: is not well-formed Unicode (a lone surrogate)`, {
      field: illFormed,
    });
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({
    field: i.path.map(String).join('.') || '(root)',
    message: i.message,
  }));
  const first = issues[0];
  throw invalidRequest(first ? `${what}${first.field}: ${first.message}` : 'request is invalid', {
    issues,
  });
}
