import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import { adminHeaders, type GivenTenant, givenTenant } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 14, point 4: budgets that roll over by themselves. Server time stands still; each test
// moves it across a period boundary, so the boundary is exact and nothing waits.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const api = reservationsApi(stack);
const DAY = 86_400_000;

let sweepOnce: typeof import('../../functions/jobs/expire-reservations.js')['sweepOnce'];
beforeAll(async () => {
  sweepOnce = (await import('../../functions/jobs/expire-reservations.js')).sweepOnce;
});

const usd = (amount: number) => ({ unit: 'USD_MICROCENTS', amount });
const q = (scope: string) => `scope=${encodeURIComponent(scope)}&unit=USD_MICROCENTS`;

/**
 * The next 00:00 UTC after server time, where a DAILY budget's period ends; server time moves to
 * a minute before it, so what a test reserves lives across the boundary.
 */
function nextMidnight(): number {
  const end = Math.floor(clock.now() / DAY) * DAY + DAY;
  clock.advanceTo(end - 60_000);
  return end;
}

async function dailyBudget(t: GivenTenant, allocated: number, extra: Json = {}) {
  const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
    headers: adminHeaders,
    body: {
      scope: `tenant:${t.tenant}`,
      unit: 'USD_MICROCENTS',
      allocated: usd(allocated),
      period: 'DAILY',
      ...extra,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const lookup = async (t: GivenTenant) =>
  (
    await request('GET', `${stack.adminUrl}/v1/admin/budgets/lookup?${q(`tenant:${t.tenant}`)}`, {
      headers: adminHeaders,
    })
  ).body;

const closedPeriods = async (t: GivenTenant) => {
  const res = await request(
    'GET',
    `${stack.adminUrl}/v1/admin/budgets/periods?${q(`tenant:${t.tenant}`)}`,
    { headers: t.headers },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.periods as Json[];
};

const reserveAtRoot = (t: GivenTenant, amount: number) =>
  api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(amount), ttl_ms: 3_600_000 });

describe('a DAILY budget', () => {
  it('starts each day with its full allocation, exactly once under 50 concurrent reservations', async () => {
    const t = await givenTenant(stack);
    const end = nextMidnight();
    const created = await dailyBudget(t, 1_000);
    expect(created).toMatchObject({
      period: 'DAILY',
      period_start: new Date(end - DAY).toISOString(),
      period_end: new Date(end).toISOString(),
    });
    const held = await reserveAtRoot(t, 100);
    const spent = await reserveAtRoot(t, 200);
    await api.commit(t, spent.body.reservation_id, { actual: usd(200) });

    clock.advanceTo(end);
    // Before any write, a read already shows the new period (no cron, no sweep).
    expect(await lookup(t)).toMatchObject({
      allocated: usd(1_000),
      spent: usd(0),
      reserved: usd(0),
      remaining: usd(1_000),
      period_start: new Date(end).toISOString(),
    });
    const results = await Promise.all(Array.from({ length: 50 }, () => reserveAtRoot(t, 10)));

    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(await lookup(t)).toMatchObject({
      allocated: usd(1_000),
      spent: usd(0),
      reserved: usd(500),
      remaining: usd(500),
    });
    const periods = await closedPeriods(t);
    expect(periods).toHaveLength(1);
    expect(periods[0]).toMatchObject({
      period_start: new Date(end - DAY).toISOString(),
      period_end: new Date(end).toISOString(),
      allocated: usd(1_000),
      spent: usd(200),
      reserved: usd(100),
      remaining: usd(700),
    });

    // The hold of the day before settles in the day it was taken in, not today.
    const late = await api.commit(t, held.body.reservation_id, { actual: usd(80) });
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect((await closedPeriods(t))[0]).toMatchObject({ spent: usd(280), reserved: usd(0) });
    expect(await lookup(t)).toMatchObject({ spent: usd(0), reserved: usd(500) });
  });

  it('replays a reserve across the boundary without rolling the budget over: a replay writes nothing', async () => {
    const t = await givenTenant(stack);
    const end = nextMidnight();
    await dailyBudget(t, 1_000);
    const body = {
      idempotency_key: randomUUID(),
      subject: { tenant: t.tenant },
      action: { kind: 'llm', name: 'm' },
      estimate: usd(100),
      ttl_ms: 3_600_000,
    };
    const first = await api.create(t, body);

    clock.advanceTo(end + 60_000);
    const again = await api.create(t, body);

    expect(again.status).toBe(200);
    expect(again.body.reservation_id).toBe(first.body.reservation_id);
    // Not rolled over: no closed period yet; the next new work rolls it.
    expect(await closedPeriods(t)).toEqual([]);
    await reserveAtRoot(t, 1);
    expect(await closedPeriods(t)).toHaveLength(1);
  });

  it('returns an expired hold of a closed period to that period', async () => {
    const t = await givenTenant(stack);
    const end = nextMidnight();
    await dailyBudget(t, 1_000);
    const hold = await api.reserve(t, {
      subject: { tenant: t.tenant },
      estimate: usd(300),
      ttl_ms: 1_000,
    });
    expect(hold.status).toBe(200);

    clock.advanceTo(end + 60_000);
    await reserveAtRoot(t, 1); // rolls the budget over
    await sweepOnce();

    expect((await api.getReservation(t, hold.body.reservation_id)).status).toBe(410);
    expect((await closedPeriods(t))[0]).toMatchObject({ reserved: usd(0), spent: usd(0) });
    expect(await lookup(t)).toMatchObject({ reserved: usd(1), remaining: usd(999) });
  });

  it('carries debt into the next period, where it still blocks new holds until repaid', async () => {
    const t = await givenTenant(stack);
    const end = nextMidnight();
    await dailyBudget(t, 100, { overdraft_limit: usd(1_000) });
    const event = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers: t.headers,
      body: {
        idempotency_key: randomUUID(),
        subject: { tenant: t.tenant },
        action: { kind: 'tool.call', name: 'x' },
        actual: usd(150),
        overage_policy: 'ALLOW_WITH_OVERDRAFT',
      },
    });
    expect(event.status, JSON.stringify(event.body)).toBe(201);

    clock.advanceTo(end);
    expect(await lookup(t)).toMatchObject({
      allocated: usd(100),
      debt: usd(50),
      remaining: usd(50),
    });
    expectError(await reserveAtRoot(t, 1), 409, 'DEBT_OUTSTANDING', 'runtime');
    expect((await closedPeriods(t))[0]).toMatchObject({ spent: usd(100), debt: usd(0) });
  });

  it('refuses an anchor day DAILY cannot have, and an unknown period', async () => {
    const t = await givenTenant(stack);
    for (const extra of [
      { period_anchor_day: 3 },
      { period: 'HOURLY' },
      { period: 'MONTHLY', period_anchor_day: 29 },
    ]) {
      const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
        headers: adminHeaders,
        body: {
          scope: `tenant:${t.tenant}`,
          unit: 'USD_MICROCENTS',
          allocated: usd(1),
          period: 'DAILY',
          ...extra,
        },
      });
      expectError(res, 400, 'INVALID_REQUEST', 'admin');
    }
  });

  it('rolls over exactly once a MONTHLY budget idle for months, to the current month', async () => {
    const t = await givenTenant(stack);
    await dailyBudget(t, 500, { period: 'MONTHLY', period_anchor_day: 1 });
    const hold = await reserveAtRoot(t, 50);
    clock.advance(75 * DAY);

    const now = new Date(clock.now());
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const fresh = await reserveAtRoot(t, 5);
    expect(fresh.status).toBe(200);
    expect(await lookup(t)).toMatchObject({
      period_start: new Date(monthStart).toISOString(),
      reserved: usd(5),
      remaining: usd(495),
    });
    expect(await closedPeriods(t)).toHaveLength(1);
    const released = await api.release(t, hold.body.reservation_id);
    expect(released.status, JSON.stringify(released.body)).toBe(410); // expired an hour in
  });
});
