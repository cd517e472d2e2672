/**
 * SPEC § Errors: the 12 codes, plus DUPLICATE_RESOURCE for the admin plane and the reference's
 * TENANT_CLOSED, BUDGET_FROZEN, BUDGET_CLOSED and KEY_REVOKED (see docs/decisions.md).
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'UNIT_MISMATCH'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BUDGET_EXCEEDED'
  | 'OVERDRAFT_LIMIT_EXCEEDED'
  | 'DEBT_OUTSTANDING'
  | 'RESERVATION_FINALIZED'
  | 'IDEMPOTENCY_MISMATCH'
  | 'RESERVATION_EXPIRED'
  | 'DUPLICATE_RESOURCE'
  | 'TENANT_CLOSED'
  | 'BUDGET_FROZEN'
  | 'BUDGET_CLOSED'
  | 'KEY_REVOKED'
  /** Ours: a reservation's ACTIVE delegations stand in the way (docs/decisions.md § Delegations). */
  | 'DELEGATIONS_ACTIVE'
  | 'INTERNAL_ERROR';

/** A refusal the caller can act on. Carries an error code, never an HTTP status. */
export class DomainError extends Error {
  override readonly name = 'DomainError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Readonly<Record<string, unknown>>,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new DomainError('INVALID_REQUEST', message, details);

/**
 * Why a request could not get through: other writes held its items, DynamoDB throttled it, or
 * the table did not answer in time (then a write's outcome is unknown: the same idempotency key
 * replays it if it landed).
 */
export type BusyReason = 'CONTENTION' | 'THROTTLED' | 'TIMEOUT';

/**
 * The same request may well succeed a moment later: contention on a hot item or throttling
 * outlasted the operation's retry budget (nothing was written), or the table timed out. Answered 503 with SPEC's
 * retryable `INTERNAL_ERROR` body, `details.reason` and `Retry-After` (docs/decisions.md,
 * "Contention"), never as an unexpected 500.
 */
export class RetryLaterError extends Error {
  override readonly name = 'RetryLaterError';

  constructor(
    readonly reason: BusyReason,
    readonly retryAfterMs: number,
    options?: ErrorOptions,
  ) {
    super(`busy (${reason}): retry after ${retryAfterMs} ms`, options);
  }
}
