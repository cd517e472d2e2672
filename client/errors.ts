import type { components } from './generated/admin.js';

/** SPEC's closed set of error codes, as the admin document declares them. */
export type ErrorCode = components['schemas']['ErrorResponse']['error'];

/**
 * SPEC's error body `{ error, message, request_id, details? }` as a thrown error, with the HTTP
 * status and Retry-After. An answer that is no SPEC body (a proxy's 502 page) keeps its status
 * and gets the code `HTTP_<status>`.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: ErrorCode | `HTTP_${number}`;
  readonly requestId: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  /** Seconds to wait before retrying, from Retry-After (503 under contention, 429). */
  readonly retryAfter: number | undefined;

  constructor(fields: {
    readonly status: number;
    readonly code: ApiError['code'];
    readonly message: string;
    readonly requestId?: string | undefined;
    readonly details?: Readonly<Record<string, unknown>> | undefined;
    readonly retryAfter?: number | undefined;
  }) {
    super(fields.message);
    this.status = fields.status;
    this.code = fields.code;
    this.requestId = fields.requestId;
    this.details = fields.details;
    this.retryAfter = fields.retryAfter;
  }

  /**
   * Worth the same request again later: contention and throttling (503 with Retry-After), 429,
   * and any other 5xx (SPEC lets clients retry INTERNAL_ERROR with backoff).
   */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }

  /** The error an answer that is not a success stands for; `body` is its parsed JSON, if any. */
  static of(response: Response, body: unknown): ApiError {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
    return new ApiError({
      status: response.status,
      code: typeof b.error === 'string' ? (b.error as ErrorCode) : `HTTP_${response.status}`,
      message: typeof b.message === 'string' ? b.message : `the server answered ${response.status}`,
      requestId:
        typeof b.request_id === 'string'
          ? b.request_id
          : (response.headers.get('x-request-id') ?? undefined),
      details:
        typeof b.details === 'object' && b.details !== null
          ? (b.details as Record<string, unknown>)
          : undefined,
      retryAfter: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
    });
  }
}
