import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { balancesOf, ledgerKey } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import {
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, type Response, request } from '../helpers/http.js';
import { withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 7: every success body is checked against a CLOSED schema written from SPEC's field
// lists, so an extra field, a missing one, a null or a wrong type fails the test.

const Unit = z.enum(['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS']);
const Int = z.number().int();
const EpochMs = Int.positive();
/** SPEC § Amount: a non-negative integer of the unit. */
const Amount = z.strictObject({ unit: Unit, amount: Int.nonnegative() });
/** `remaining` may go below zero: SPEC's RESET rule computes it as amount − reserved − spent − debt. */
const Remaining = z.strictObject({ unit: Unit, amount: Int });
const Balance = z.strictObject({
  scope: z.string().min(1),
  scope_path: z.string().min(1),
  remaining: Remaining,
  allocated: Amount,
  spent: Amount,
  reserved: Amount,
  debt: Amount,
  overdraft_limit: Amount,
  is_over_limit: z.boolean(),
});
const Caps = z.strictObject({
  max_tokens: Int.optional(),
  max_steps_remaining: Int.optional(),
  tool_allowlist: z.array(z.string()).optional(),
  tool_denylist: z.array(z.string()).optional(),
  cooldown_ms: Int.optional(),
});
const Subject = z.strictObject({
  tenant: z.string().optional(),
  workspace: z.string().optional(),
  app: z.string().optional(),
  workflow: z.string().optional(),
  agent: z.string().optional(),
  toolset: z.string().optional(),
  dimensions: z.record(z.string(), z.string()).optional(),
});
const Action = z.strictObject({
  kind: z.string(),
  name: z.string(),
  tags: z.array(z.string()).optional(),
});
const Scopes = z.array(z.string().min(1)).min(1);
const ReasonCode = z.enum(['BUDGET_EXCEEDED', 'DEBT_OUTSTANDING', 'OVERDRAFT_LIMIT_EXCEEDED']);
const Allowed = z.enum(['ALLOW', 'ALLOW_WITH_CAPS']);

const DryRunAllow = z.strictObject({
  decision: Allowed,
  affected_scopes: Scopes,
  scope_path: z.string().min(1),
  reserved: Amount,
  balances: z.array(Balance),
  caps: Caps.optional(),
});
/** A live reservation answers what its dry run would, plus its id and expiry. */
const CreateLive = DryRunAllow.extend({
  reservation_id: z.string().min(1),
  expires_at_ms: EpochMs,
  remaining_ttl_ms: Int.nonnegative().optional(),
});
const DryRunDeny = z.strictObject({
  decision: z.literal('DENY'),
  reason_code: ReasonCode,
  affected_scopes: Scopes,
  scope_path: z.string().min(1),
  reserved: Amount,
  balances: z.array(Balance),
});
const Commit = z.strictObject({
  status: z.literal('COMMITTED'),
  charged: Amount,
  released: Amount,
  balances: z.array(Balance),
});
const Release = z.strictObject({
  status: z.literal('RELEASED'),
  released: Amount,
  balances: z.array(Balance),
});
const Extend = z.strictObject({
  status: z.literal('ACTIVE'),
  expires_at_ms: EpochMs,
  remaining_ttl_ms: Int.nonnegative().optional(),
  balances: z.array(Balance).optional(),
});
const DecideAllow = z.strictObject({
  decision: Allowed,
  affected_scopes: Scopes,
  caps: Caps.optional(),
});
const DecideDeny = z.strictObject({
  decision: z.literal('DENY'),
  affected_scopes: Scopes,
  reason_code: ReasonCode,
});
const EventApplied = z.strictObject({
  status: z.literal('APPLIED'),
  event_id: z.string().min(1),
  balances: z.array(Balance).min(1),
});
const reservationFields = {
  reservation_id: z.string().min(1),
  status: z.enum(['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED']),
  idempotency_key: z.string().min(1),
  subject: Subject,
  action: Action,
  reserved: Amount,
  committed: Amount.optional(),
  created_at_ms: EpochMs,
  expires_at_ms: EpochMs,
  finalized_at_ms: EpochMs.optional(),
  scope_path: z.string().min(1),
  affected_scopes: Scopes,
  metadata: z.record(z.string(), z.unknown()).optional(),
};
const Reservation = z.strictObject(reservationFields);
const ActiveReservation = Reservation.omit({ committed: true, finalized_at_ms: true }).extend({
  status: z.literal('ACTIVE'),
});
const CommittedReservation = Reservation.extend({
  status: z.literal('COMMITTED'),
  committed: Amount,
  finalized_at_ms: EpochMs,
});
const page = <T extends z.ZodType>(key: string, item: T) =>
  z
    .strictObject({
      [key]: z.array(item),
      has_more: z.boolean(),
      next_cursor: z.string().min(1).optional(),
    })
    .refine((p) => p.has_more === (p.next_cursor !== undefined), {
      message: 'next_cursor must be present exactly when has_more is true',
    });
const BalancesPage = page('balances', Balance);
const ReservationsPage = page('reservations', Reservation);

/** Every JSON value in the body that is null, by path. */
function nullsIn(value: unknown, path = '$'): string[] {
  if (value === null) return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullsIn(v, `${path}[${i}]`));
  if (typeof value === 'object') {
    return Object.entries(value as Json).flatMap(([k, v]) => nullsIn(v, `${path}.${k}`));
  }
  return [];
}

/** Asserts the exact status, the closed schema, no nulls, and the three response headers. */
function expectContract(res: Response, status: number, schema: z.ZodType, t: GivenTenant): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(schema.safeParse(res.body).error?.issues ?? []).toEqual([]);
  expect(nullsIn(res.body)).toEqual([]);
  expect(JSON.stringify(res.body)).not.toContain('null');
  expect(res.headers.get('x-request-id')).toMatch(/\S/);
  expect(res.headers.get('x-service-tenant')).toBe(t.tenant);
  expect(res.headers.get('x-cycles-tenant')).toBe(t.tenant);
}

const stack = useTestStack({ env: { API_KEY_CACHE_TTL_MS: '5000' } });

const rt = (path: string) => `${stack.runtimeUrl}${path}`;

/** Every runtime operation, driven with the given auth headers. */
function client(headers: Record<string, string>) {
  return {
    reserve: (body: Json) => request('POST', rt('/v1/reservations'), { headers, body }),
    commit: (id: string, body: Json) =>
      request('POST', rt(`/v1/reservations/${id}/commit`), { headers, body }),
    release: (id: string, body: Json) =>
      request('POST', rt(`/v1/reservations/${id}/release`), { headers, body }),
    extend: (id: string, body: Json) =>
      request('POST', rt(`/v1/reservations/${id}/extend`), { headers, body }),
    decide: (body: Json) => request('POST', rt('/v1/decide'), { headers, body }),
    event: (body: Json) => request('POST', rt('/v1/events'), { headers, body }),
    balances: (query: string) => request('GET', rt(`/v1/balances?${query}`), { headers }),
    list: (query: string) => request('GET', rt(`/v1/reservations?${query}`), { headers }),
    get: (id: string) => request('GET', rt(`/v1/reservations/${id}`), { headers }),
  };
}

const eventBody = (overrides: Json = {}) => ({
  idempotency_key: randomUUID(),
  subject: { workspace: 'w' },
  action: { kind: 'tool.call', name: 'search' },
  actual: usd(10),
  ...overrides,
});

describe('the closed schemas themselves', () => {
  const balance = {
    scope: 'tenant:a',
    scope_path: 'tenant:a',
    remaining: usd(1),
    allocated: usd(1),
    spent: usd(0),
    reserved: usd(0),
    debt: usd(0),
    overdraft_limit: usd(0),
    is_over_limit: false,
  };

  it('accept a SPEC balance and reject an extra field, a missing field, a null and a string amount', () => {
    const { debt: _missing, ...withoutDebt } = balance;

    expect(Balance.safeParse(balance).success).toBe(true);
    expect(Balance.safeParse({ ...balance, tenant_id: 'a' }).success).toBe(false);
    expect(Balance.safeParse(withoutDebt).success).toBe(false);
    expect(Balance.safeParse({ ...balance, debt: null }).success).toBe(false);
    expect(Balance.safeParse({ ...balance, spent: { unit: 'TOKENS', amount: '1' } }).success).toBe(
      false,
    );
    expect(
      DryRunAllow.safeParse({
        decision: 'ALLOW',
        affected_scopes: ['x'],
        scope_path: 'x',
        reserved: usd(1),
        balances: [],
        reservation_id: 'r',
      }).success,
    ).toBe(false);
    expect(nullsIn({ a: [1, { b: null }] })).toEqual(['$.a[1].b']);
  });
});

describe('success bodies of every runtime operation', () => {
  let t: GivenTenant;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    t = await givenTenant(stack);
    api = client(t.headers);
    await givenBudget(stack, t, '', 100_000_000);
    await givenBudget(stack, t, 'workspace:w', 10_000_000);
    await givenBudget(stack, t, 'workspace:w/app:a', 1_000, { overdraftLimit: 500 });
  });

  it('POST /v1/reservations (live): 200 and the closed create schema; a replay conforms too', async () => {
    const body = reserveBody({ metadata: { run: 'contract' } });

    const res = await api.reserve(body);
    const replay = await api.reserve(body);

    expectContract(res, 200, CreateLive, t);
    expectContract(replay, 200, CreateLive, t);
    expect(withoutLease(replay.body)).toEqual(withoutLease(res.body));
  });

  it('POST /v1/reservations (dry_run ALLOW): 200 without reservation_id or expires_at_ms', async () => {
    const res = await api.reserve(reserveBody({ dry_run: true }));

    expectContract(res, 200, DryRunAllow, t);
  });

  it('POST /v1/reservations (dry_run DENY): 200 with reason_code', async () => {
    const res = await api.reserve(
      reserveBody({ dry_run: true, estimate: usd(999_999_999), subject: { workspace: 'w' } }),
    );

    expectContract(res, 200, DryRunDeny, t);
  });

  it('POST /v1/reservations/{id}/commit: 200 COMMITTED; a replay conforms too', async () => {
    const id = String((await api.reserve(reserveBody())).body.reservation_id);
    const body = { idempotency_key: randomUUID(), actual: usd(60), metrics: { tokens_input: 5 } };

    const res = await api.commit(id, body);
    const replay = await api.commit(id, body);

    expectContract(res, 200, Commit, t);
    expectContract(replay, 200, Commit, t);
    expect(res.body).toMatchObject({ charged: usd(60), released: usd(40) });
  });

  it('POST /v1/reservations/{id}/commit with an overdraft: still the closed schema', async () => {
    const id = String(
      (
        await api.reserve(
          reserveBody({
            subject: { workspace: 'w', app: 'a' },
            estimate: usd(900),
            overage_policy: 'ALLOW_WITH_OVERDRAFT',
          }),
        )
      ).body.reservation_id,
    );

    const res = await api.commit(id, { idempotency_key: randomUUID(), actual: usd(1_200) });

    expectContract(res, 200, Commit, t);
  });

  it('POST /v1/reservations/{id}/release: 200 RELEASED; a replay conforms too', async () => {
    const id = String((await api.reserve(reserveBody())).body.reservation_id);
    const body = { idempotency_key: randomUUID(), reason: 'not needed' };

    const res = await api.release(id, body);
    const replay = await api.release(id, body);

    expectContract(res, 200, Release, t);
    expectContract(replay, 200, Release, t);
  });

  it('POST /v1/reservations/{id}/extend: 200 ACTIVE with the new expiry; a replay conforms too', async () => {
    const created = await api.reserve(reserveBody());
    const id = String(created.body.reservation_id);
    const body = { idempotency_key: randomUUID(), extend_by_ms: 10_000, metadata: { why: 'slow' } };

    const res = await api.extend(id, body);
    const replay = await api.extend(id, body);

    expectContract(res, 200, Extend, t);
    expectContract(replay, 200, Extend, t);
    expect(res.body.expires_at_ms).toBe(Number(created.body.expires_at_ms) + 10_000);
  });

  it('POST /v1/decide ALLOW and DENY: 200 each, with reason_code only on DENY', async () => {
    const allowBody = reserveBody();

    const allow = await api.decide(allowBody);
    const deny = await api.decide(reserveBody({ estimate: usd(999_999_999) }));
    const replay = await api.decide(allowBody);

    expectContract(allow, 200, DecideAllow, t);
    expectContract(deny, 200, DecideDeny, t);
    expectContract(replay, 200, DecideAllow, t);
  });

  it('POST /v1/events: 201 APPLIED; a replay conforms too', async () => {
    const body = eventBody({
      metrics: { tokens_input: 1, tokens_output: 2, latency_ms: 3, model_version: 'v1' },
      metadata: { k: 'v' },
      client_time_ms: Date.now(),
    });

    const res = await api.event(body);
    const replay = await api.event(body);

    expectContract(res, 201, EventApplied, t);
    expectContract(replay, 201, EventApplied, t);
  });

  it('GET /v1/balances: 200 with a page of closed Balances, with and without more pages', async () => {
    const first = await api.balances(`tenant=${t.tenant}&include_children=true&limit=1`);
    const all = await api.balances(`tenant=${t.tenant}&include_children=true`);

    expectContract(first, 200, BalancesPage, t);
    expect(first.body.has_more).toBe(true);
    expectContract(all, 200, BalancesPage, t);
    expect(all.body.has_more).toBe(false);
  });

  it('GET /v1/reservations: 200 with a page of closed Reservations, with and without more pages', async () => {
    const committed = String((await api.reserve(reserveBody())).body.reservation_id);
    await api.commit(committed, { idempotency_key: randomUUID(), actual: usd(1) });

    const first = await api.list('limit=1');
    const all = await api.list('limit=200');

    expectContract(first, 200, ReservationsPage, t);
    expect(first.body.has_more).toBe(true);
    expectContract(all, 200, ReservationsPage, t);
    expect(all.body.has_more).toBe(false);
  });

  it('GET /v1/reservations/{id}: 200 with every field, committed and finalized_at_ms once committed', async () => {
    const id = String(
      (
        await api.reserve(
          reserveBody({ metadata: { m: 1 }, action: { kind: 'k', name: 'n', tags: ['x'] } }),
        )
      ).body.reservation_id,
    );

    const active = await api.get(id);
    await api.commit(id, { idempotency_key: randomUUID(), actual: usd(100) });
    const committed = await api.get(id);

    expectContract(active, 200, ActiveReservation, t);
    expect(active.body.metadata).toEqual({ m: 1 });
    expectContract(committed, 200, CommittedReservation, t);
  });
});

describe('X-Cycles-API-Key in place of X-Service-API-Key', () => {
  it('is accepted on every runtime route', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const api = client({ 'x-cycles-api-key': t.key });

    const created = await api.reserve(reserveBody());
    const id = String(created.body.reservation_id);
    const other = String((await api.reserve(reserveBody())).body.reservation_id);
    const results: [string, Response, number][] = [
      ['create', created, 200],
      ['dry run', await api.reserve(reserveBody({ dry_run: true })), 200],
      ['extend', await api.extend(id, { idempotency_key: randomUUID(), extend_by_ms: 1_000 }), 200],
      ['get', await api.get(id), 200],
      ['list', await api.list('limit=5'), 200],
      ['balances', await api.balances('workspace=w'), 200],
      ['decide', await api.decide(reserveBody()), 200],
      ['event', await api.event(eventBody()), 201],
      ['commit', await api.commit(id, { idempotency_key: randomUUID(), actual: usd(5) }), 200],
      ['release', await api.release(other, { idempotency_key: randomUUID() }), 200],
    ];

    for (const [name, res, status] of results) {
      expect(res.status, name).toBe(status);
      expect(res.headers.get('x-service-tenant'), name).toBe(t.tenant);
      expect(res.headers.get('x-cycles-tenant'), name).toBe(t.tenant);
    }
  });

  it('is refused when unknown, like X-Service-API-Key', async () => {
    const res = await request('GET', rt('/v1/balances?workspace=w'), {
      headers: { 'x-cycles-api-key': 'cyc_live_not-a-key' },
    });

    expectError(res, 401, 'UNAUTHORIZED', 'runtime');
  });
});

describe('extend racing commit on one reservation', () => {
  it('commits each of 20 reservations exactly once; extend is 200 before it or 409 RESERVATION_FINALIZED after', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const api = client(t.headers);
    const created = await Promise.all(
      Array.from({ length: 20 }, () => api.reserve(reserveBody({ estimate: usd(1_000) }))),
    );
    const ids = created.map((r) => String(r.body.reservation_id));
    const expiries = created.map((r) => Number(r.body.expires_at_ms));
    const actual = (i: number) => 100 + i;

    const raced = await Promise.all(
      ids.map((id, i) =>
        Promise.all([
          api.extend(id, { idempotency_key: randomUUID(), extend_by_ms: 5_000 }),
          api.commit(id, { idempotency_key: randomUUID(), actual: usd(actual(i)) }),
        ]),
      ),
    );
    const after = await Promise.all(ids.map((id) => api.get(id)));

    raced.forEach(([extend, commit], i) => {
      expect(commit.status, JSON.stringify(commit.body)).toBe(200);
      expect(commit.body).toMatchObject({ status: 'COMMITTED', charged: usd(actual(i)) });
      expect([200, 409]).toContain(extend.status);
      const reservation = after[i]?.body;
      expect(reservation).toMatchObject({ status: 'COMMITTED', committed: usd(actual(i)) });
      if (extend.status === 200) {
        expect(extend.body.expires_at_ms).toBe((expiries[i] ?? 0) + 5_000);
        expect(reservation?.expires_at_ms).toBe((expiries[i] ?? 0) + 5_000);
      } else {
        expectError(extend, 409, 'RESERVATION_FINALIZED');
        expect(reservation?.expires_at_ms).toBe(expiries[i]);
      }
    });
    const total = ids.reduce((sum, _, i) => sum + actual(i), 0);
    const balances = await balancesOf(stack, t);
    for (const rel of ['', 'workspace:w']) {
      expect(balances.get(ledgerKey(t, rel))).toMatchObject({
        allocated: usd(1_000_000),
        spent: usd(total),
        reserved: usd(0),
        debt: usd(0),
        remaining: usd(1_000_000 - total),
      });
    }
  });
});
