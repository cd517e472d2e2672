import { randomUUID } from 'node:crypto';
import middy from '@middy/core';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { serverNow } from '../clock.js';
import { DomainError, RetryLaterError } from '../domain/errors.js';
import { exactJson } from '../domain/json.js';
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
  const handle = middy<Event, Result, Error, Context>().handler((event) =>
    answer(event, serverNow(), currentInvocation()),
  );
  let coldStart = true;
  return (event: Event, context: Context): Promise<Result> =>
    runInvocation(event.requestContext?.requestId || randomUUID(), async (invocation) => {
      const cold = coldStart;
      coldStart = false;
      try {
        return finish(await handle(event, context), { invocation, routeId, event, cold });
      } catch (error) {
        const response = errorResponse(error, invocation.requestId, options.errorDetails);
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
    body: exactJson(reply.body),
  };
};

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
  };
  if (tenant) {
    headers['x-service-tenant'] = tenant;
    headers['x-cycles-tenant'] = tenant;
  }
  const latencyMs = Math.round((performance.now() - invocation.startedAt) * 100) / 100;
  const fields = {
    request_id: requestId,
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
    log.warn('request', { ...fields, busy_reason: error.reason });
  } else if (error !== undefined) {
    // Logged with its cause and stack; its message never reaches the client (errors.ts).
    log.error('request', { ...fields, error });
  } else {
    log.info('request', fields);
  }
  publishMetrics(invocation);
  return { ...response, headers };
}
