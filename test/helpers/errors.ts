import { expect } from 'vitest';
import * as z from 'zod';
import type { Response, WireError } from './http.js';

/**
 * SPEC § Errors: the twelve codes and their statuses, and the reference's TENANT_CLOSED,
 * BUDGET_FROZEN and BUDGET_CLOSED (409) and LIMIT_EXCEEDED (429, busy: nothing written);
 * DUPLICATE_RESOURCE and the reference admin plane's KEY_REVOKED are the admin plane's own.
 */
export const SPEC_STATUS: Readonly<Record<string, number>> = {
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
  RESERVATION_EXPIRED: 410,
  TENANT_CLOSED: 409,
  BUDGET_FROZEN: 409,
  BUDGET_CLOSED: 409,
  // Ours: a reservation's ACTIVE delegations stand in the way (docs/decisions.md § Delegations).
  DELEGATIONS_ACTIVE: 409,
  LIMIT_EXCEEDED: 429,
  MAX_EXTENSIONS_EXCEEDED: 409,
  INTERNAL_ERROR: 500,
};
const ADMIN_STATUS: Readonly<Record<string, number>> = {
  ...SPEC_STATUS,
  DUPLICATE_RESOURCE: 409,
  KEY_REVOKED: 409,
  COUNT_MISMATCH: 409,
  LIMIT_EXCEEDED: 400,
};

/** SPEC's error body: exactly these keys, `details` optional. */
const ErrorBody = z.strictObject({
  error: z.string().min(1),
  message: z.string().min(1),
  request_id: z.string().min(1),
  details: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Asserts SPEC's error response exactly and returns its body: the status and `error` code, a
 * body of exactly { error, message, request_id, details? } (non-empty strings, details an
 * object), X-Request-Id equal to request_id, and a JSON content type. With `server`, the code
 * must also be one that server may answer, with SPEC's status for it.
 */
export function expectError(
  res: Response<object>,
  status: number,
  code: string,
  server?: 'runtime' | 'admin',
): WireError {
  const error = res.body as WireError;
  const text = JSON.stringify(res.body);
  expect({ status: res.status, error: error.error }, text).toEqual({ status, error: code });
  expect(ErrorBody.safeParse(res.body).error?.issues ?? [], text).toEqual([]);
  if (server) {
    const statuses = server === 'runtime' ? SPEC_STATUS : ADMIN_STATUS;
    expect(Object.keys(statuses), `${code} on the ${server} server`).toContain(code);
    expect(statuses[code], `SPEC's status for ${code}`).toBe(status);
  }
  expect(res.headers.get('x-request-id')).toBe(error.request_id);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  if (status === 429) expectBusyHeaders(res);
  return error;
}

/**
 * A busy answer's headers (the reference's 429): Retry-After in whole seconds (delta-seconds,
 * at least 1) and X-RateLimit-Reset, the Unix second from which a retry is welcome.
 */
export function expectBusyHeaders(res: Response<object>): void {
  const retryAfter = res.headers.get('retry-after') ?? '';
  expect(retryAfter, 'Retry-After').toMatch(/^[1-9]\d*$/);
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  expect(Number.isInteger(reset), 'X-RateLimit-Reset').toBe(true);
  // A Unix second of this run (the answer may have been checked well after it came).
  expect(Math.abs(reset * 1000 - Date.now())).toBeLessThan(600_000);
}

/**
 * Sends until the answer is not busy (at most `attempts` times), as a client retries a write
 * with its key: many writers of one record win one at a time, and one that keeps losing is
 * answered 429 LIMIT_EXCEEDED (reason CONTENTION) with Retry-After, nothing written. The wait
 * Retry-After asks for is skipped: the test only needs the retry.
 */
export async function untilNotBusy<R extends Response<object>>(
  send: () => Promise<R>,
  attempts = 10,
): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    const res = await send();
    if (res.status !== 429 || attempt === attempts) return res;
    const error = expectError(res, 429, 'LIMIT_EXCEEDED');
    expect(error.details, JSON.stringify(res.body)).toMatchObject({ reason: 'CONTENTION' });
  }
}
