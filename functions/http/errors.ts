import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  DomainError,
  type ErrorCode,
  MethodNotAllowedError,
  RetryLaterError,
} from '../domain/errors.js';
import { exactJson } from '../domain/json.js';

// SPEC § Errors. `satisfies` turns a new code without a status into a type error.
export const STATUS = {
  INVALID_REQUEST: 400,
  UNIT_MISMATCH: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  BUDGET_EXCEEDED: 409,
  OVERDRAFT_LIMIT_EXCEEDED: 409,
  DEBT_OUTSTANDING: 409,
  RESERVATION_FINALIZED: 409,
  IDEMPOTENCY_MISMATCH: 409,
  DUPLICATE_RESOURCE: 409,
  TENANT_CLOSED: 409,
  BUDGET_FROZEN: 409,
  BUDGET_CLOSED: 409,
  KEY_REVOKED: 409,
  DELEGATIONS_ACTIVE: 409,
  REPLAY_IN_PROGRESS: 409,
  MAX_EXTENSIONS_EXCEEDED: 409,
  COUNT_MISMATCH: 409,
  // A refusal for size: the reference's bulk row cap, an exact sort's bound, a tenant's policy
  // count (400). Busy is LIMIT_EXCEEDED too, but 429: a RetryLaterError, answered below.
  LIMIT_EXCEEDED: 400,
  RESERVATION_EXPIRED: 410,
  INTERNAL_ERROR: 500,
} as const satisfies Record<ErrorCode, number>;

/**
 * How a route renders a refusal's details, where they are more than the error carries (a
 * reservation read answers 410 with the reservation itself: http/views.ts).
 */
export type ErrorDetails = (refusal: DomainError) => Readonly<Record<string, unknown>> | undefined;

const ownDetails: ErrorDetails = (refusal) => refusal.details;

/** The one mapping of anything thrown to SPEC's error body. */
export function errorResponse(
  error: unknown,
  requestId: string,
  detailsOf: ErrorDetails = ownDetails,
  nowMs = Date.now(),
): APIGatewayProxyStructuredResultV2 {
  if (error instanceof RetryLaterError) return retryLaterResponse(error, requestId, nowMs);
  const refusal = error instanceof DomainError ? error : undefined;
  const code: ErrorCode = refusal?.code ?? 'INTERNAL_ERROR';
  const details = refusal && detailsOf(refusal);
  const wrongMethod = error instanceof MethodNotAllowedError ? error : undefined;
  return {
    statusCode: wrongMethod ? 405 : STATUS[code],
    headers: {
      'content-type': 'application/json',
      'x-request-id': requestId,
      ...(wrongMethod && { allow: wrongMethod.allowed.join(', ') }),
    },
    body: exactJson({
      error: code,
      // An unexpected error's message can name tables or echo key material: never send it.
      message: refusal?.message ?? 'unexpected server error',
      request_id: requestId,
      ...(details && { details }),
    }),
  };
}

const BUSY_MESSAGES = {
  CONTENTION:
    'the budget is busy with concurrent writes; nothing was written, retry after Retry-After seconds',
  THROTTLED:
    'the table is throttling this key; nothing was written, retry after Retry-After seconds',
  CONCURRENCY:
    'the service has as many requests in flight as it takes; nothing was done, retry after Retry-After seconds',
  RATE_LIMIT:
    'a request-rate limit of this API key, its tenant or a policy is reached; nothing was done, retry after Retry-After seconds',
  // A write may have landed before the table went quiet: the same idempotency key replays it.
  TIMEOUT:
    'the table did not answer in time; retry shortly with the same idempotency key (a write that landed is replayed, never applied twice)',
} as const satisfies Record<RetryLaterError['reason'], string>;

/**
 * Busy (nothing written): 429 `LIMIT_EXCEEDED`, the reference's code for server-side throttling
 * (ERROR SEMANTICS, revision 2026-07-04), with `Retry-After` in delta-seconds and
 * `X-RateLimit-Reset` (when to come back, Unix seconds), plus `X-RateLimit-Remaining` where a
 * limit of the caller's applies: the SDKs honour Retry-After on 429 only. A table that did not
 * answer (a write's outcome unknown): 503 with SPEC's retryable INTERNAL_ERROR body and
 * Retry-After, which the SDK retries with the same key (docs/decisions.md, "Contention").
 */
function retryLaterResponse(error: RetryLaterError, requestId: string, nowMs: number) {
  const seconds = Math.max(1, Math.ceil(error.retryAfterMs / 1000));
  const busy = error.nothingWritten;
  const limit = error.limit;
  return {
    statusCode: busy ? 429 : 503,
    headers: {
      'content-type': 'application/json',
      'x-request-id': requestId,
      'retry-after': String(seconds),
      ...(busy && {
        'x-ratelimit-reset': String(
          Math.ceil((limit ? limit.resetAtMs : nowMs + seconds * 1000) / 1000),
        ),
      }),
      ...(busy && limit && { 'x-ratelimit-remaining': String(Math.max(0, limit.remaining)) }),
    },
    body: exactJson({
      error: busy ? 'LIMIT_EXCEEDED' : 'INTERNAL_ERROR',
      message: BUSY_MESSAGES[error.reason],
      request_id: requestId,
      details: {
        reason: error.reason,
        retry_after_ms: error.retryAfterMs,
        ...(limit?.name && { limit: limit.name }),
      },
    }),
  };
}
