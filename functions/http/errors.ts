import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { DomainError, type ErrorCode, RetryLaterError } from '../domain/errors.js';
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
): APIGatewayProxyStructuredResultV2 {
  if (error instanceof RetryLaterError) return retryLaterResponse(error, requestId);
  const refusal = error instanceof DomainError ? error : undefined;
  const code: ErrorCode = refusal?.code ?? 'INTERNAL_ERROR';
  const details = refusal && detailsOf(refusal);
  return {
    statusCode: STATUS[code],
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
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
  CONTENTION: 'the budget is busy with concurrent writes; nothing was written, retry shortly',
  THROTTLED: 'the table is throttling writes; nothing was written, retry shortly',
  // A write may have landed before the table went quiet: the same idempotency key replays it.
  TIMEOUT:
    'the table did not answer in time; retry shortly with the same idempotency key (a write that landed is replayed, never applied twice)',
} as const satisfies Record<RetryLaterError['reason'], string>;

/**
 * 503 with SPEC's retryable INTERNAL_ERROR body: SPEC lets clients retry INTERNAL_ERROR with
 * backoff, and 503 + Retry-After tells HTTP clients and gateways the same, while a 500 stays
 * what it means: a fault of ours (docs/decisions.md, "Contention").
 */
function retryLaterResponse(error: RetryLaterError, requestId: string) {
  return {
    statusCode: 503,
    headers: {
      'content-type': 'application/json',
      'x-request-id': requestId,
      'retry-after': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
    },
    body: exactJson({
      error: 'INTERNAL_ERROR',
      message: BUSY_MESSAGES[error.reason],
      request_id: requestId,
      details: { reason: error.reason, retry_after_ms: error.retryAfterMs },
    }),
  };
}
