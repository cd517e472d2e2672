import { randomBytes, randomUUID } from 'node:crypto';
import middy from '@middy/core';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { serverNow } from '../clock.js';
import { deadlineBudgetMs, startDeadline } from '../deadline.js';
import { DomainError, RetryLaterError } from '../domain/errors.js';
import { exactJson } from '../domain/json.js';
import { type Trace, traceOf, traceparentOf } from '../domain/trace.js';
import { log } from '../log.js';
import type { RouteId, routes } from '../routes.js';
import {
  currentInvocation,
  dynamoFields,
  type Invocation,
  recordMetric,
  runInvocation,
} from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { type ErrorDetails, errorResponse } from './errors.js';
import type { AuthKind, RouteAnswer, RouteInput, RouteSchemas } from './handler.js';
import { Reply } from './reply.js';

export type Event = APIGatewayProxyEventV2;
export type Result = APIGatewayProxyStructuredResultV2;

/**
 * What every HTTP Lambda does around its route's own work (httpHandler's authentication and
 * validation, then its use case): the invocation's telemetry scope, SPEC's error body for
 * anything thrown, one log line and one set of metrics. This module imports no key lookup, no
 * body parser and no route table, so a route that needs none of them (plainHandler) bundles
 * none of them (docs/deploy.md § Bundling).
 */
export function serve(
  routeId: RouteId,
  options: { readonly errorDetails?: ErrorDetails },
  answer: (event: Event, now: number, invocation: Invocation | undefined) => Promise<Result>,
) {
  // No early timeout answer: it would answer 500 while a write is in flight and may still land.
  // The request's deadline (functions/deadline.ts) stops its loops between attempts instead.
  const handle = middy<Event, Result, Error, Context>({ timeoutEarlyInMillis: 0 }).handler(
    (event) => answer(event, serverNow(), currentInvocation()),
  );
  let coldStart = true;
  return (event: Event, context: Context): Promise<Result> =>
    runInvocation(event.requestContext?.requestId || randomUUID(), async (invocation) => {
      invocation.trace = requestTrace(event.headers ?? {});
      const cold = coldStart;
      coldStart = false;
      startDeadline(deadlineBudgetMs(context?.getRemainingTimeInMillis?.()));
      try {
        return finish(await handle(event, context), { invocation, routeId, event, cold });
      } catch (error) {
        const response = errorResponse(
          error,
          invocation.requestId,
          options.errorDetails,
          serverNow(),
        );
        return finish(response, { invocation, routeId, event, cold, error });
      }
    });
}

/** The wire answer of what `run` returned: a body, or a Reply with its own status or headers. */
export const respond = (answer: unknown, status: number): Result => {
  const reply = answer instanceof Reply ? answer : new Reply(undefined, answer);
  return {
    statusCode: reply.statusCode ?? status,
    headers: { ...reply.headers },
    // 204 (a delete) has no body at all.
    body: (reply.statusCode ?? status) === 204 ? '' : exactJson(reply.body),
  };
};

const freshHex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The request's trace, from its `traceparent` or `X-Cycles-Trace-Id`, else a new one. */
export const requestTrace = (headers: Record<string, string | undefined>): Trace =>
  traceOf(headers.traceparent, headers['x-cycles-trace-id'], () => freshHex(16));

/**
 * Every answer names its trace (CORRELATION AND TRACING: 2xx, 4xx and 5xx alike): the id, and a
 * `traceparent` of it with this hop's span.
 */
export const traceHeaders = (trace: Trace): Record<string, string> => ({
  'x-cycles-trace-id': trace.traceId,
  traceparent: traceparentOf(trace, freshHex(8)),
});

/** Routes that take no key and no input, and answer 200: health checks, documents, not found. */
type PlainRouteId = {
  [R in RouteId]: AuthKind<R> extends 'none'
    ? (typeof routes)[R]['status'] extends 200
      ? keyof RouteSchemas<R> extends never
        ? R
        : never
      : never
    : never;
}[RouteId];

/**
 * httpHandler for a route with nothing to authenticate or validate, built without the key
 * lookup, the body parser and the route table: what a health check or a not-found answer
 * bundles stays small however many routes the table grows (docs/deploy.md § Bundling). The
 * type holds it to such routes, and to their success status, 200.
 */
export function plainHandler<R extends PlainRouteId>(
  routeId: R,
  run: (
    input: Pick<RouteInput<R, object>, 'requestId' | 'now' | 'event'>,
  ) => Promise<RouteAnswer<R>>,
) {
  return serve(routeId, {}, async (event, now, invocation) =>
    respond(await run({ requestId: invocation?.requestId ?? randomUUID(), now, event }), 200),
  );
}

interface Outcome {
  readonly invocation: Invocation;
  readonly routeId: RouteId;
  readonly event: Event;
  readonly cold: boolean;
  /** What the handler threw, when it did. */
  readonly error?: unknown;
}

/** Response headers, then the request's one log line and its metrics. */
function finish(response: Result, outcome: Outcome): Result {
  const { invocation, routeId, error } = outcome;
  const { requestId, tenant } = invocation;
  const headers: Record<string, string> = {
    ...(response.headers as Record<string, string> | undefined),
    'content-type': 'application/json',
    'x-request-id': requestId,
    ...(invocation.trace && traceHeaders(invocation.trace)),
  };
  if (tenant) {
    headers['x-service-tenant'] = tenant;
    headers['x-cycles-tenant'] = tenant;
  }
  const latencyMs = Math.round((performance.now() - invocation.startedAt) * 100) / 100;
  const fields = {
    request_id: requestId,
    ...(invocation.trace && { trace_id: invocation.trace.traceId }),
    route: routeId,
    method: outcome.event.requestContext?.http?.method,
    status: response.statusCode,
    ...(error !== undefined && {
      error_code: error instanceof DomainError ? error.code : 'INTERNAL_ERROR',
    }),
    ...(tenant && { tenant }),
    ...(invocation.keyId && { key_id: invocation.keyId }),
    latency_ms: latencyMs,
    ...dynamoFields(invocation),
    ...(outcome.cold && { cold_start: true }),
  };
  recordMetric('Latency', latencyMs, { Route: routeId });
  if (error instanceof DomainError) {
    recordMetric('Refusals', 1, { Reason: error.code });
    log.info('request', fields);
  } else if (error instanceof RetryLaterError) {
    recordMetric('BusyAnswers', 1, { Reason: error.reason });
    log.warn('request', { ...fields, busy_reason: error.reason, ...busyCause(error) });
  } else if (error !== undefined) {
    // Logged with its cause and stack; its message never reaches the client (errors.ts).
    log.error('request', { ...fields, error });
  } else {
    log.info('request', fields);
  }
  publishMetrics(invocation);
  return { ...response, headers };
}

/** What made a request busy, as the SDK said it (a timeout's kind, a code): no key material. */
function busyCause(error: RetryLaterError) {
  const cause = error.cause;
  if (!(cause instanceof Error)) return {};
  return { busy_cause: `${cause.name}: ${cause.message}`.slice(0, 200) };
}
