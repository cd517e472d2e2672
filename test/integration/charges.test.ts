import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError, untilNotBusy } from '../helpers/errors.js';
import {
  adminHeaders,
  givenBudget,
  givenTenant,
  givenTenantWith,
  usd,
} from '../helpers/fixtures.js';
import { type Json, rawRequest } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 28, point 1: charges while a hold is open (docs/decisions.md § Charges). Server time
// stands still until a test moves it (expiry), so each test runs alone on its own tenant.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const api = reservationsApi(stack);

/** A reservation of `estimate` under workspace w (budgets '' and 'workspace:w'). */
async function held(estimate: number, extra: Json = {}) {
  const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
  const res = await api.reserve(t, { estimate: usd(estimate), ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { t, id: String(res.body.reservation_id) };
}

describe('POST /v1/reservations/{id}/charges', () => {
  it('moves part of the hold to spent on every scope at once; the reservation stays ACTIVE', async () => {
    const { t, id } = await held(100);

    const res = await api.charge(t, id, { amount: usd(30) });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      reservation_id: id,
      sequence: 1,
      amount: usd(30),
      charged_total: usd(30),
      held: usd(70),
    });
    expect(String(res.body.charge_id)).toMatch(/^chg_[0-9a-f]{32}$/);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 30, 70, 0, 9_900),
      'workspace:w': L(1_000, 30, 70, 0, 900),
    });
    // The answer's balances are the ledgers after the charge.
    expect((res.body.balances as Json[]).map((b) => (b.spent as Json).amount)).toEqual([30, 30]);
    // GET keeps the protocol's shape: ACTIVE, no `committed` until the commit.
    const got = await api.getReservation(t, id);
    expect(got.body.status).toBe('ACTIVE');
    expect(got.body).not.toHaveProperty('committed');
  });

  it('takes a charge beyond the hold by the reservation’s overage policy, as a commit would', async () => {
    const { t, id } = await held(100, { overage_policy: 'REJECT' });
    const allowing = await held(100, { overage_policy: 'ALLOW_IF_AVAILABLE' });

    expectError(await api.charge(t, id, { amount: usd(101) }), 409, 'BUDGET_EXCEEDED');
    const within = await api.charge(t, id, { amount: usd(100) });
    const beyond = await api.charge(allowing.t, allowing.id, { amount: usd(150) });

    expect(within.body.held).toEqual(usd(0));
    expect(beyond.status, JSON.stringify(beyond.body)).toBe(200);
    expect(beyond.body.held).toEqual(usd(0));
    expect((await ledgers(stack, allowing.t))['workspace:w']).toEqual(L(1_000, 150, 0, 0, 850));
    // Nothing left of the hold: under REJECT any further charge is an overage.
    expectError(await api.charge(t, id, { amount: usd(1) }), 409, 'BUDGET_EXCEEDED');
  });

  it('runs into debt under ALLOW_WITH_OVERDRAFT, up to the overdraft limit', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100, { overdraftLimit: 50 });
    const r = await api.reserve(t, {
      subject: { tenant: t.tenant },
      estimate: usd(80),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });

    const first = await api.charge(t, r.body.reservation_id, { amount: usd(120) });
    // 20 + 31 of debt would pass the limit of 50.
    const tooMuch = await api.charge(t, r.body.reservation_id, { amount: usd(31) });

    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // 80 from the hold, 20 from remaining, 20 as debt.
    expect(await ledgers(stack, t)).toEqual({ '': L(100, 100, 0, 20, -20) });
    expectError(tooMuch, 409, 'OVERDRAFT_LIMIT_EXCEEDED');
  });

  it('makes the commit’s actual the whole actual: the commit charges what the charges did not', async () => {
    const { t, id } = await held(100);
    await api.charge(t, id, { amount: usd(30) });
    await api.charge(t, id, { amount: usd(20) });

    expectError(await api.commit(t, id, { actual: usd(49) }), 400, 'INVALID_REQUEST');
    const committed = await api.commit(t, id, { actual: usd(80) });

    expect(committed.body).toMatchObject({
      status: 'COMMITTED',
      charged: usd(80),
      released: usd(20),
    });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 80, 0, 0, 9_920),
      'workspace:w': L(1_000, 80, 0, 0, 920),
    });
    expect((await api.getReservation(t, id)).body.committed).toEqual(usd(80));
    expectError(await api.charge(t, id, { amount: usd(1) }), 409, 'RESERVATION_FINALIZED');
  });

  it('leaves release, extend and expiry only what is left of the hold', async () => {
    const released = await held(100);
    const expiring = await held(100, { ttl_ms: 1_000, grace_period_ms: 0 });
    await api.charge(released.t, released.id, { amount: usd(40) });
    await api.charge(expiring.t, expiring.id, { amount: usd(25) });

    const extended = await api.extend(released.t, released.id, { extend_by_ms: 1_000 });
    const release = await api.release(released.t, released.id);
    clock.advance(1_001);
    const late = await api.charge(expiring.t, expiring.id, { amount: usd(1) });

    expect(extended.status).toBe(200);
    expect(release.body.released).toEqual(usd(60));
    expect((await ledgers(stack, released.t))['workspace:w']).toEqual(L(1_000, 40, 0, 0, 960));
    // Past its deadline a charge expires it first (410): the 75 left of the hold goes back.
    expectError(late, 410, 'RESERVATION_EXPIRED');
    expect((await ledgers(stack, expiring.t))['workspace:w']).toEqual(L(1_000, 25, 0, 0, 975));
  });

  it('answers a retry with the same key the same bytes, once; another payload 409', async () => {
    const { t, id } = await held(100);
    const body = { idempotency_key: randomUUID(), amount: usd(30) };

    const first = await api.charge(t, id, body);
    const again = await api.charge(t, id, body);
    const other = await api.charge(t, id, { ...body, amount: usd(31) });

    expect(again.body).toEqual(first.body);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 30, 70, 0, 900));
    // The header form of the key names the same request.
    const headerOnly = await rawRequest(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${id}/charges`,
      { ...t.headers, 'x-idempotency-key': body.idempotency_key },
      JSON.stringify({ amount: usd(30) }),
    );
    expect(headerOnly.body).toEqual(first.body);
  });

  it('refuses a charge of nothing, in another unit, of another tenant’s or without reservations:commit', async () => {
    const { t, id } = await held(100);
    const stranger = await givenTenant(stack);
    const reader = await givenTenant(stack, ['reservations:list']);

    expectError(await api.charge(t, id, { amount: usd(0) }), 400, 'INVALID_REQUEST');
    expectError(
      await api.charge(t, id, { amount: { unit: 'TOKENS', amount: 5 } }),
      400,
      'UNIT_MISMATCH',
    );
    expectError(await api.charge(stranger, id, { amount: usd(5) }), 403, 'FORBIDDEN');
    expectError(await api.charge(reader, id, { amount: usd(5) }), 403, 'FORBIDDEN');
    expectError(await api.charge(t, 'rsv_nope', { amount: usd(5) }), 404, 'NOT_FOUND');
  });

  it('settles concurrent charges racing a commit exactly: each lands before it, or is refused', async () => {
    const { t, id } = await held(500);

    // Thirteen writers of one reservation: one wins each round, so one that keeps losing may be
    // answered busy, 429 LIMIT_EXCEEDED (nothing written), and, as a client would, retries with
    // its key.
    const answers = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => {
        const body = { idempotency_key: `race-${i}`, amount: usd(10) };
        return untilNotBusy(() => api.charge(t, id, body));
      }),
      untilNotBusy(() => api.commit(t, id, { idempotency_key: 'race-commit', actual: usd(400) })),
    ]);

    const charges = answers.slice(0, 12);
    const commit = answers[12];
    expect(commit?.status, JSON.stringify(commit?.body)).toBe(200);
    const landed = charges.filter((c) => c.status === 200);
    for (const c of charges.filter((c) => c.status !== 200)) {
      expectError(c, 409, 'RESERVATION_FINALIZED');
    }
    // Every charge got its own place in the order; the commit's 400 is the whole actual.
    expect(landed.map((c) => c.body.sequence).sort((a, b) => Number(a) - Number(b))).toEqual(
      landed.map((_, i) => i + 1),
    );
    expect(commit?.body.released).toEqual(usd(100));
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 400, 0, 0, 9_600),
      'workspace:w': L(1_000, 400, 0, 0, 600),
    });
    const listedCharges = await api.charges(t, id);
    expect(listedCharges.body.charged_total).toEqual(usd(10 * landed.length));
  });
});

describe('GET /v1/reservations/{id}/charges', () => {
  it('lists the charges in order, paged, with exact metrics and metadata and the totals', async () => {
    const { t, id } = await held(100);
    for (const amount of [5, 6, 7]) {
      await api.charge(t, id, {
        amount: usd(amount),
        metrics: { tokens_output: amount * 10 },
        metadata: { chunk: amount },
      });
    }
    const exact = await rawRequest(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${id}/charges`,
      t.headers,
      `{"idempotency_key":"${randomUUID()}","amount":{"unit":"USD_MICROCENTS","amount":1},"metadata":{"trace":18446744073709551616}}`,
    );
    expect(exact.status).toBe(200);

    const first = await api.charges(t, id, '?limit=2');
    const rest = await api.charges(
      t,
      id,
      `?limit=2&cursor=${encodeURIComponent(String(first.body.next_cursor))}`,
    );
    const raw = await rawRequest(
      'GET',
      `${stack.runtimeUrl}/v1/reservations/${id}/charges`,
      t.headers,
    );

    expect(first.body).toMatchObject({
      reservation_id: id,
      status: 'ACTIVE',
      charged_total: usd(19),
      held: usd(81),
      refunded_total: usd(0),
      has_more: true,
    });
    const all = [...(first.body.charges as Json[]), ...(rest.body.charges as Json[])];
    expect(all.map((c) => [c.sequence, (c.amount as Json).amount])).toEqual([
      [1, 5],
      [2, 6],
      [3, 7],
      [4, 1],
    ]);
    expect(all[0]).toMatchObject({ metrics: { tokens_output: 50 }, metadata: { chunk: 5 } });
    expect(rest.body.has_more).toBe(false);
    expect(raw.text).toContain('"trace":18446744073709551616');
    const stranger = await givenTenant(stack);
    expectError(await api.charges(stranger, id), 403, 'FORBIDDEN');
  });
});

describe('streams sharing one budget', () => {
  it('keeps it exact while 6 clients each charge a stream in parts, commit it whole, and some are refunded', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 20_000 });
    const ids = await Promise.all(
      Array.from({ length: 6 }, async (_, client) => {
        const r = await api.reserve(t, {
          estimate: usd(800),
          overage_policy: 'ALLOW_IF_AVAILABLE',
        });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        const id = String(r.body.reservation_id);
        // Four parts of 250: the last one past the hold, from remaining (ALLOW_IF_AVAILABLE).
        for (let part = 0; part < 4; part++) {
          const charged = await api.charge(t, id, { amount: usd(250) });
          expect(charged.status, JSON.stringify(charged.body)).toBe(200);
          expect(charged.body.held).toEqual(usd(Math.max(0, 800 - 250 * (part + 1))));
        }
        const total = 1_000 + client;
        const committed = await api.commit(t, id, { actual: usd(total) });
        expect(committed.body).toMatchObject({ charged: usd(total), released: usd(0) });
        return id;
      }),
    );
    const refunds = await Promise.all(
      ids
        .filter((_, i) => i % 2 === 0)
        .map((id) => api.refund(t, id, { amount: usd(300), reason: 'failed chunk' }, adminHeaders)),
    );

    for (const r of refunds) expect(r.body).toMatchObject({ amount: usd(300) });
    // 6 × 1,000 + (0 + 1 + … + 5) spent, less 3 refunds of 300.
    const spent = 6_000 + 15 - 900;
    expect(await ledgers(stack, t)).toEqual({
      '': L(100_000, spent, 0, 0, 100_000 - spent),
      'workspace:w': L(20_000, spent, 0, 0, 20_000 - spent),
    });
  });
});

describe('charges on sharded and rolling budgets', () => {
  it('lands each charge on the shard its hold is on, the budget exact', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 8_000, { shards: 4 });
    const rs = await Promise.all(
      Array.from({ length: 6 }, () =>
        api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(300) }),
      ),
    );

    for (const r of rs) await api.charge(t, r.body.reservation_id, { amount: usd(100) });
    await Promise.all(rs.map((r) => api.commit(t, r.body.reservation_id, { actual: usd(250) })));

    expect(await ledgers(stack, t)).toEqual({ '': L(8_000, 1_500, 0, 0, 6_500) });
  });
});
