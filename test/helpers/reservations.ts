import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { LocalStack } from '../../infra/local/stack.js';
import { expectBalance } from './balances.js';
import { type GivenTenant, reserveBody } from './fixtures.js';
import { type Json, type Response, request } from './http.js';

const hasNull = (v: unknown): boolean =>
  v === null || (typeof v === 'object' && Object.values(v as object).some(hasNull));

/**
 * Every success body of a write: SPEC fields only, so never a null, and the balances after
 * the operation, each a valid Balance (optional on extend only).
 */
function checkedSuccess(res: Response, balances: 'required' | 'optional'): Response {
  if (res.status !== 200) return res;
  expect(hasNull(res.body), JSON.stringify(res.body)).toBe(false);
  const list = res.body.balances;
  if (balances === 'required' || list !== undefined) {
    expect(Array.isArray(list), JSON.stringify(res.body)).toBe(true);
    for (const b of list as Json[]) expectBalance(b);
  }
  return res;
}

/**
 * The reservation routes of `stack`'s runtime server, called as a tenant: every write's success
 * body is checked (no null, valid balances); failures are returned for the test to assert.
 */
export function reservationsApi(stack: LocalStack) {
  const url = (path: string) => `${stack.runtimeUrl}${path}`;

  /** POST /v1/reservations with the body as given (a JSON value, or `raw` text). */
  async function create(
    t: GivenTenant,
    body: Json | { raw: string },
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const options =
      'raw' in body && typeof body.raw === 'string'
        ? {
            raw: body.raw,
            headers: { ...t.headers, 'content-type': 'application/json', ...headers },
          }
        : { body, headers: { ...t.headers, ...headers } };
    return checkedSuccess(await request('POST', url('/v1/reservations'), options), 'required');
  }

  /** POST /v1/reservations with `reserveBody(overrides)`. */
  const reserve = (t: GivenTenant, overrides: Json = {}, headers: Record<string, string> = {}) =>
    create(t, reserveBody(overrides), headers);

  /** POST /v1/reservations/{id}/{action}, with a fresh idempotency key unless `body` has one. */
  const settle =
    (action: 'commit' | 'release' | 'extend' | 'charges' | 'refunds') =>
    async (t: GivenTenant, id: unknown, body: Json = {}, headers: Record<string, string> = {}) =>
      checkedSuccess(
        await request('POST', url(`/v1/reservations/${String(id)}/${action}`), {
          headers: { ...t.headers, ...headers },
          body: { idempotency_key: randomUUID(), ...body },
        }),
        action === 'extend' ? 'optional' : 'required',
      );

  const getReservation = (t: GivenTenant, id: unknown) =>
    request('GET', url(`/v1/reservations/${String(id)}`), { headers: t.headers });

  /** The reservation as listed (the list shows every status; GET answers 410 once EXPIRED). */
  async function listed(t: GivenTenant, idempotencyKey: unknown): Promise<Json | undefined> {
    const res = await request<{ reservations: Json[] }>(
      'GET',
      url(`/v1/reservations?idempotency_key=${encodeURIComponent(String(idempotencyKey))}`),
      { headers: t.headers },
    );
    expect(res.status).toBe(200);
    expect(res.body.reservations.length).toBeLessThanOrEqual(1);
    return res.body.reservations[0];
  }

  /** GET /v1/reservations/{id}/charges (ours), with `query` as given. */
  const charges = (t: GivenTenant, id: unknown, query = '') =>
    request('GET', url(`/v1/reservations/${String(id)}/charges${query}`), { headers: t.headers });

  return {
    create,
    reserve,
    commit: settle('commit'),
    release: settle('release'),
    extend: settle('extend'),
    /** POST …/charges (ours): part of the actual, the reservation staying ACTIVE. */
    charge: settle('charges'),
    /** POST …/refunds (ours): the tenant key needs budgets:write (the admin key: `headers`). */
    refund: settle('refunds'),
    charges,
    getReservation,
    listed,
  };
}

/**
 * A create or extend body without `remaining_ttl_ms`: a volatile observation, recomputed on
 * every answer (a replay included), so replays are compared without it.
 */
export function withoutLease(body: Json): Json {
  const { remaining_ttl_ms: _volatile, ...rest } = body;
  return rest;
}
