/**
 * SPEC § Errors: the 12 codes, plus DUPLICATE_RESOURCE for the admin plane and the reference's
 * TENANT_CLOSED, BUDGET_FROZEN, BUDGET_CLOSED, KEY_REVOKED, MAX_EXTENSIONS_EXCEEDED (its
 * runtime's: a tenant's or policy's extension limit), COUNT_MISMATCH and LIMIT_EXCEEDED (its
 * bulk actions' safety gates, 400; busy is LIMIT_EXCEEDED too, 429, as a RetryLaterError; see
 * docs/decisions.md).
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
  | 'LIMIT_EXCEEDED'
  /** The reference's webhook codes: a replay to the subscription runs; a bulk filter's count moved. */
  | 'REPLAY_IN_PROGRESS'
  | 'COUNT_MISMATCH'
  | 'MAX_EXTENSIONS_EXCEEDED'
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

/**
 * A known path asked with a method it does not answer: 405 with `Allow`, and the reference's
 * body for it (INVALID_REQUEST), rather than a 404 that says the path does not exist.
 */
export class MethodNotAllowedError extends DomainError {
  constructor(
    method: string,
    path: string,
    readonly allowed: readonly string[],
  ) {
    super(
      'INVALID_REQUEST',
      `${path} does not answer ${method}; it answers ${allowed.join(', ')}`,
      {
        method,
        allowed: [...allowed],
      },
    );
  }
}

export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new DomainError('INVALID_REQUEST', message, details);

/**
 * Why a request could not get through: other writes held its items, DynamoDB throttled it, the
 * service had as many requests in flight as it takes (the local server, as a function's
 * concurrency would), a request-rate limit of the caller's key or tenant is reached
 * (docs/decisions.md § Rate limits), or the table did not answer in time (then a write's outcome is unknown:
 * the same idempotency key replays it if it landed).
 */
export type BusyReason = 'CONTENTION' | 'THROTTLED' | 'CONCURRENCY' | 'TIMEOUT' | 'RATE_LIMIT';

/** A limit that applies to the caller (a rate limit): what is left of it, and when it resets. */
export interface AppliedLimit {
  readonly remaining: number;
  readonly resetAtMs: number;
  /** The limit that refused, by its wire name (`key.max_requests_per_minute`). */
  readonly name?: string | undefined;
}

/**
 * The same request may well succeed a moment later. Busy — contention on a hot item or
 * throttling outlasted the operation's retry budget or its deadline — means nothing was
 * written: answered 429 `LIMIT_EXCEEDED` with `details.reason` and `Retry-After`, which clients
 * back off from (the reference protocol's ERROR SEMANTICS, revision 2026-07-04, and its SDK
 * recovery profile). `TIMEOUT` — the table did not answer, so a write's outcome is unknown — is
 * answered 503 `INTERNAL_ERROR` with `Retry-After`: the SDK retries a 5xx reserve at once with
 * the same key, which replays a write that landed (docs/decisions.md, "Contention").
 */
export class RetryLaterError extends Error {
  override readonly name = 'RetryLaterError';

  constructor(
    readonly reason: BusyReason,
    readonly retryAfterMs: number,
    options?: ErrorOptions & { readonly limit?: AppliedLimit },
  ) {
    super(`busy (${reason}): retry after ${retryAfterMs} ms`, options);
    this.limit = options?.limit;
  }

  /** Present when a limit of the caller's applies (X-RateLimit-Remaining / -Reset). */
  readonly limit: AppliedLimit | undefined;

  /** Whether nothing was written for sure: 429 (busy), rather than 503 (outcome unknown). */
  get nothingWritten(): boolean {
    return this.reason !== 'TIMEOUT';
  }
}
