import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { countersOf, L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError, untilNotBusy } from '../helpers/errors.js';
import {
  adminHeaders,
  fund,
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 28, point 2: refunds (docs/decisions.md § Refunds). Server time stands still until a
// test moves it (a rolling budget's boundary), so the tests of this file run one at a time.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const api = reservationsApi(stack);
const DAY = 86_400_000;

const refundEvent = (t: GivenTenant, eventId: unknown, body: Json, headers = t.headers) =>
  request('POST', `${stack.runtimeUrl}/v1/events/${String(eventId)}/refunds`, {
    headers,
    body: { idempotency_key: randomUUID(), reason: 'provider refunded it', ...body },
  });

const refund = (t: GivenTenant, id: unknown, amount: number, headers?: Record<string, string>) =>
  api.refund(t, id, { amount: usd(amount), reason: 'provider refunded it' }, headers);

async function event(t: GivenTenant, actual: number, extra: Json = {}) {
  const res = await request('POST', `${stack.runtimeUrl}/v1/events`, {
    headers: t.headers,
    body: {
      idempotency_key: randomUUID(),
      subject: { workspace: 'w' },
      action: { kind: 'tool', name: 'search' },
      actual: usd(actual),
      ...extra,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return String(res.body.event_id);
}

async function committed(t: GivenTenant, estimate: number, actual: number, extra: Json = {}) {
  const r = await api.reserve(t, { estimate: usd(estimate), ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const c = await api.commit(t, r.body.reservation_id, { actual: usd(actual) });
  expect(c.status, JSON.stringify(c.body)).toBe(200);
  return String(r.body.reservation_id);
}

const auditOf = async (t: GivenTenant, operation: string) =>
  (
    await request(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${t.tenant}&operation=${operation}`,
      { headers: adminHeaders },
    )
  ).body.logs as Json[];

describe('POST /v1/reservations/{id}/refunds', () => {
  it('gives back part of a commit on every scope it charged, audited', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const id = await committed(t, 100, 80);

    const res = await refund(t, id, 30);

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      reservation_id: id,
      amount: usd(30),
      refunded_total: usd(30),
      refundable: usd(50),
    });
    expect(String(res.body.refund_id)).toMatch(/^rfd_[0-9a-f]{32}$/);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 50, 0, 0, 9_950),
      'workspace:w': L(1_000, 50, 0, 0, 950),
    });
    const [entry] = await auditOf(t, 'refundReservation');
    expect(entry).toMatchObject({
      operation: 'refundReservation',
      resource_type: 'reservation',
      resource_id: id,
      key_id: t.keyId,
      metadata: {
        detail: { amount: 30, refunded_total: 30, charged: 80, reason: 'provider refunded it' },
      },
    });
    // More than is left: 400, naming what is.
    const tooMuch = expectError(await refund(t, id, 51), 400, 'INVALID_REQUEST');
    expect(tooMuch.details?.refundable).toEqual(usd(50));
  });

  it('refunds the charges of an ACTIVE reservation, and after its release', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await api.reserve(t, { estimate: usd(100) });
    await api.charge(t, r.body.reservation_id, { amount: usd(40) });

    const whileActive = await refund(t, r.body.reservation_id, 15);
    await api.release(t, r.body.reservation_id);
    const afterRelease = await refund(t, r.body.reservation_id, 25);

    expect(whileActive.body.refundable).toEqual(usd(25));
    expect(afterRelease.body.refundable).toEqual(usd(0));
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 0, 0, 10_000),
      'workspace:w': L(1_000, 0, 0, 0, 1_000),
    });
    expectError(await refund(t, r.body.reservation_id, 1), 400, 'INVALID_REQUEST');
  });

  it('returns the debt the charge ran up first, then spent; debt repaid since goes to the allocation', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100, { overdraftLimit: 100 });
    const subject = { tenant: t.tenant };
    const r = await api.reserve(t, {
      subject,
      estimate: usd(50),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    await api.commit(t, r.body.reservation_id, { actual: usd(130) });
    // 50 held, 50 from remaining, 30 as debt.
    expect(await ledgers(stack, t)).toEqual({ '': L(100, 100, 0, 30, -30) });

    const first = await refund(t, r.body.reservation_id, 20);
    expect(await ledgers(stack, t)).toEqual({ '': L(100, 100, 0, 10, -10) });
    const second = await refund(t, r.body.reservation_id, 20);
    expect(await ledgers(stack, t)).toEqual({ '': L(100, 90, 0, 0, 10) });
    expect([first.status, second.status]).toEqual([200, 200]);

    // Another reservation's debt, repaid by the operator before the refund.
    const again = await api.reserve(t, {
      subject,
      estimate: usd(10),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    await api.commit(t, again.body.reservation_id, { actual: usd(40) });
    // Its hold took the last 10 of remaining: the 30 beyond it are all debt.
    expect(await ledgers(stack, t)).toEqual({ '': L(100, 100, 0, 30, -30) });
    expect((await fund(stack, t, '', 'REPAY_DEBT', 20)).status).toBe(200);
    const afterRepay = await refund(t, again.body.reservation_id, 30);
    // Of its 30 of debt, 10 is still owed (it comes off debt) and 20 was repaid by the
    // operator: that comes back as allocation, as REPAY_DEBT's excess would have.
    expect(afterRepay.status, JSON.stringify(afterRepay.body)).toBe(200);
    expect(await ledgers(stack, t)).toEqual({ '': L(120, 100, 0, 0, 20) });
  });

  it('needs the admin key or budgets:write, never a runtime permission', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const id = await committed(t, 100, 80);
    // An agent's key: runtime permissions only (all eight of SPEC's would imply budgets:write).
    const key = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: {
        tenant_id: t.tenant,
        name: 'agent',
        permissions: ['reservations:create', 'reservations:commit', 'reservations:list'],
      },
    });
    const agent = { ...t, headers: { 'x-service-api-key': String(key.body.key_secret) } };

    const refused = expectError(await refund(agent, id, 10), 403, 'FORBIDDEN');
    const byOperator = await request('POST', `${stack.adminUrl}/v1/reservations/${id}/refunds`, {
      headers: adminHeaders,
      body: { idempotency_key: randomUUID(), amount: usd(10), reason: 'operator reversal' },
    });

    expect(refused.details?.missing_permission).toBe('budgets:write');
    expect(byOperator.status, JSON.stringify(byOperator.body)).toBe(200);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 70, 0, 0, 930));
    const [entry] = await auditOf(t, 'refundReservation');
    expect(entry?.metadata).toMatchObject({ actor: 'admin' });
    const stranger = await givenTenant(stack);
    expectError(await refund(stranger, id, 1), 403, 'FORBIDDEN');
    expectError(await refund(t, 'rsv_nope', 1), 404, 'NOT_FOUND');
  });

  it('answers a retry with the same key once; another payload 409; concurrent ones never pass what was charged', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const id = await committed(t, 100, 100);
    const body = { idempotency_key: randomUUID(), amount: usd(10), reason: 'duplicate' };

    const first = await api.refund(t, id, body);
    const again = await api.refund(t, id, body);
    const other = await api.refund(t, id, { ...body, amount: usd(11) });
    // One wins each round: one that keeps losing is answered busy (429) and retries with its key.
    const racing = await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        const race = { idempotency_key: `race-${i}`, amount: usd(10), reason: 'duplicate' };
        return untilNotBusy(() => api.refund(t, id, race));
      }),
    );

    expect(again.body).toEqual(first.body);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    // 90 was left: 9 of the 12 fit.
    expect(racing.filter((r) => r.status === 200)).toHaveLength(9);
    for (const r of racing.filter((r) => r.status !== 200)) expectError(r, 400, 'INVALID_REQUEST');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 0, 0, 1_000));
  });
});

describe('POST /v1/events/{id}/refunds', () => {
  it('gives back part of an event on every scope, debt first', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 100, { overdraftLimit: 100 });
    const plain = await event(t, 40);
    const owing = await event(t, 100, { overage_policy: 'ALLOW_WITH_OVERDRAFT' });
    // The second event: 60 from remaining, 40 as debt on the workspace; spent on the root.
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000, 140, 0, 0, 860),
      'workspace:w': L(100, 100, 0, 40, -40),
    });

    const res = await refundEvent(t, owing, { amount: usd(50) });
    const small = await refundEvent(t, plain, { amount: usd(15) });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      event_id: owing,
      refunded_total: usd(50),
      refundable: usd(50),
    });
    expect(small.status).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000, 75, 0, 0, 925),
      'workspace:w': L(100, 75, 0, 0, 25),
    });
    expectError(await refundEvent(t, plain, { amount: usd(26) }), 400, 'INVALID_REQUEST');
    expect((await auditOf(t, 'refundEvent')).map((e) => e.resource_id).sort()).toEqual(
      [owing, plain].sort(),
    );
  });

  it('answers a retry with the same key once, another payload 409, and refuses an agent, a stranger and no event', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const id = await event(t, 100);
    const body = { idempotency_key: randomUUID(), amount: usd(30) };
    const key = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: { tenant_id: t.tenant, name: 'agent', permissions: ['reservations:create'] },
    });
    const agent = { 'x-service-api-key': String(key.body.key_secret) };

    const first = await refundEvent(t, id, body);
    const again = await refundEvent(t, id, body);
    const other = await refundEvent(t, id, { ...body, amount: usd(31) });
    const byOperator = await request('POST', `${stack.adminUrl}/v1/events/${id}/refunds`, {
      headers: adminHeaders,
      body: { idempotency_key: randomUUID(), amount: usd(20), reason: 'operator reversal' },
    });

    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(again.body).toEqual(first.body);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect(byOperator.body).toMatchObject({ refunded_total: usd(50), refundable: usd(50) });
    const refused = expectError(
      await refundEvent(t, id, { amount: usd(1) }, agent),
      403,
      'FORBIDDEN',
    );
    expect(refused.details?.missing_permission).toBe('budgets:write');
    const stranger = await givenTenant(stack);
    expectError(await refundEvent(stranger, id, { amount: usd(1) }), 403, 'FORBIDDEN');
    expectError(await refundEvent(t, 'evt_nope', { amount: usd(1) }), 404, 'NOT_FOUND');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 50, 0, 0, 950));
    expect(await auditOf(t, 'refundEvent')).toHaveLength(2);
  });
});

describe('refunds on sharded and rolling budgets', () => {
  it('lands on the shards of a sharded budget, exactly', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 4_000, { shards: 4 });
    const subject = { tenant: t.tenant };
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await api.reserve(t, { subject, estimate: usd(500) });
      await api.commit(t, r.body.reservation_id, { actual: usd(400) });
      ids.push(String(r.body.reservation_id));
    }

    await Promise.all(ids.map((id) => refund(t, id, 150)));

    expect(await ledgers(stack, t)).toEqual({ '': L(4_000, 1_000, 0, 0, 3_000) });
  });

  it('lands in the closed period of a rolling budget where the charge was made', async () => {
    const t = await givenTenant(stack);
    const end = Math.floor(clock.now() / DAY) * DAY + DAY;
    clock.advanceTo(end - 60_000);
    const created = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: `tenant:${t.tenant}`,
        unit: 'USD_MICROCENTS',
        allocated: usd(1_000),
        period: 'DAILY',
      },
    });
    expect(created.status).toBe(201);
    const subject = { tenant: t.tenant };
    const r = await api.reserve(t, { subject, estimate: usd(300), ttl_ms: 3_600_000 });
    await api.charge(t, r.body.reservation_id, { amount: usd(100) });
    const e = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers: t.headers,
      body: {
        idempotency_key: randomUUID(),
        subject,
        action: { kind: 'tool', name: 'search' },
        actual: usd(50),
      },
    });
    clock.advanceTo(end + 1_000);
    // The next day: a new period; what was charged yesterday is refunded into yesterday.
    await api.commit(t, r.body.reservation_id, { actual: usd(200) });
    const refunded = await refund(t, r.body.reservation_id, 120);
    const eventRefunded = await refundEvent(t, e.body.event_id, { amount: usd(50) });

    expect([refunded.status, eventRefunded.status]).toEqual([200, 200]);
    expect(await ledgers(stack, t)).toEqual({ '': L(1_000, 0, 0, 0, 1_000) });
    const periods = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/budgets/periods?scope=${encodeURIComponent(`tenant:${t.tenant}`)}&unit=USD_MICROCENTS`,
      { headers: adminHeaders },
    );
    const [yesterday] = periods.body.periods as Json[];
    // Charged 200 + 50 there, refunded 120 + 50.
    expect(yesterday && countersOf(yesterday)).toEqual(L(1_000, 80, 0, 0, 920));
  });
});
