import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenClosableTenant,
  givenTenant,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Bulk actions (issue 27 point 3) and the operator's overview (point 1), through real sockets.
const clock = testClock();
const stack = useTestStack({ clock });
const admin = (method: string, path: string, body?: Json) =>
  request(method, `${stack.adminUrl}${path}`, { headers: adminHeaders, body });
const overview = async () => (await admin('GET', '/v1/admin/overview')).body;
const ids = (rows: unknown) => (rows as Json[]).map((r) => r.id).sort();

async function tagged(tag: string, n: number): Promise<string[]> {
  const made: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${tag}-${i}`;
    await admin('POST', '/v1/admin/tenants', { tenant_id: id, name: `Bulk ${tag} ${i}` });
    made.push(id);
  }
  return made;
}

describe('POST /v1/admin/tenants/bulk-action', () => {
  it('suspends every match, skips those already suspended, and audits each row', async () => {
    const tag = `b${randomUUID().slice(0, 6)}`;
    const [a, b, c] = await tagged(tag, 3);
    await admin('PATCH', `/v1/admin/tenants/${c}`, { status: 'SUSPENDED' });
    const body = {
      filter: { search: tag },
      action: 'SUSPEND',
      expected_count: 3,
      idempotency_key: randomUUID(),
    };

    const res = await admin('POST', '/v1/admin/tenants/bulk-action', body);
    const trail = await admin('GET', `/v1/admin/audit/logs?tenant_id=${a}&operation=updateTenant`);

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ action: 'SUSPEND', total_matched: 3, failed: [] });
    expect(ids(res.body.succeeded)).toEqual([a, b].sort());
    expect(res.body.skipped).toEqual([{ id: c, reason: 'ALREADY_IN_TARGET_STATE' }]);
    expect((trail.body.logs as Json[])[0]?.metadata).toMatchObject({
      detail: { bulk_action: 'SUSPEND', bulk_idempotency_key: body.idempotency_key },
      after: { status: 'SUSPENDED' },
    });
  });

  it('answers a retry with the first answer, and another payload under the key with 409', async () => {
    const tag = `r${randomUUID().slice(0, 6)}`;
    await tagged(tag, 2);
    const body = { filter: { search: tag }, action: 'SUSPEND', idempotency_key: randomUUID() };

    const first = await admin('POST', '/v1/admin/tenants/bulk-action', body);
    const again = await admin('POST', '/v1/admin/tenants/bulk-action', body);
    const other = await admin('POST', '/v1/admin/tenants/bulk-action', {
      ...body,
      action: 'CLOSE',
    });

    expect(again.body).toEqual(first.body);
    expect((first.body.succeeded as Json[]).length).toBe(2);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH', 'admin');
  });

  it('changes nothing when expected_count differs, and refuses an empty filter', async () => {
    const tag = `m${randomUUID().slice(0, 6)}`;
    const [a] = await tagged(tag, 2);

    const mismatch = await admin('POST', '/v1/admin/tenants/bulk-action', {
      filter: { search: tag },
      action: 'SUSPEND',
      expected_count: 1,
      idempotency_key: randomUUID(),
    });
    const empty = await admin('POST', '/v1/admin/tenants/bulk-action', {
      filter: {},
      action: 'SUSPEND',
      idempotency_key: randomUUID(),
    });
    const still = await admin('GET', `/v1/admin/tenants/${a}`);

    expectError(mismatch, 409, 'COUNT_MISMATCH', 'admin');
    expect(mismatch.body.details).toEqual({ total_matched: 2, expected_count: 1 });
    expectError(empty, 400, 'INVALID_REQUEST', 'admin');
    expect(still.body.status).toBe('ACTIVE');
  });

  it('closes with the whole cascade, and fails a closed row it cannot reactivate', async () => {
    const t = await givenClosableTenant(stack);
    await givenBudget(stack, t, '', 1_000);

    const closed = await admin('POST', '/v1/admin/tenants/bulk-action', {
      filter: { search: t.tenant },
      action: 'CLOSE',
      idempotency_key: randomUUID(),
    });
    const reactivate = await admin('POST', '/v1/admin/tenants/bulk-action', {
      filter: { search: t.tenant },
      action: 'REACTIVATE',
      idempotency_key: randomUUID(),
    });
    const budget = await admin(
      'GET',
      `/v1/admin/budgets/lookup?scope=${encodeURIComponent(scopeOf(t, ''))}&unit=USD_MICROCENTS`,
    );

    expect(ids(closed.body.succeeded)).toEqual([t.tenant]);
    expect(reactivate.body.failed).toEqual([
      { id: t.tenant, error_code: 'INVALID_TRANSITION', message: `tenant ${t.tenant} is closed` },
    ]);
    expect(budget.body.status).toBe('CLOSED');
  });
});

describe('POST /v1/admin/budgets/bulk-action', () => {
  async function withBudgets(): Promise<GivenTenant> {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:a', 100);
    await givenBudget(stack, t, 'workspace:b', 100);
    return t;
  }

  it('funds every match once, even when retried, and reports each row by its ledger id', async () => {
    const t = await withBudgets();
    const body = {
      filter: { tenant_id: t.tenant, scope_prefix: `${scopeOf(t, '')}/workspace:` },
      action: 'CREDIT',
      amount: usd(50),
      expected_count: 2,
      idempotency_key: randomUUID(),
    };

    const first = await admin('POST', '/v1/admin/budgets/bulk-action', body);
    const again = await admin('POST', '/v1/admin/budgets/bulk-action', body);
    const listed = await admin('GET', `/v1/admin/budgets?tenant_id=${t.tenant}`);

    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((first.body.succeeded as Json[]).length).toBe(2);
    expect(again.body).toEqual(first.body);
    const allocated = (listed.body.ledgers as Json[]).map((l) => (l.allocated as Json).amount);
    expect(allocated).toEqual([1_000_000, 150, 150]);
    const ledgerIds = (listed.body.ledgers as Json[]).slice(1).map((l) => l.ledger_id);
    expect(ids(first.body.succeeded)).toEqual(ledgerIds.sort());
  });

  it('fails the rows a DEBIT would overdraw, and freezes and unfreezes', async () => {
    const t = await withBudgets();
    const filter = { tenant_id: t.tenant, scope_prefix: `${scopeOf(t, '')}/workspace:` };

    const debit = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter,
      action: 'DEBIT',
      amount: usd(500),
      idempotency_key: randomUUID(),
    });
    const freeze = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter: { tenant_id: t.tenant },
      action: 'FREEZE',
      idempotency_key: randomUUID(),
    });
    const frozen = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: t.headers,
      body: reserveBody({ subject: { tenant: t.tenant } }),
    });
    const unfreeze = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter: { tenant_id: t.tenant, status: 'FROZEN' },
      action: 'UNFREEZE',
      idempotency_key: randomUUID(),
    });

    expect((debit.body.failed as Json[]).map((r) => r.error_code)).toEqual([
      'BUDGET_EXCEEDED',
      'BUDGET_EXCEEDED',
    ]);
    expect((freeze.body.succeeded as Json[]).length).toBe(3);
    expectError(frozen, 409, 'BUDGET_FROZEN', 'runtime');
    expect((unfreeze.body.succeeded as Json[]).length).toBe(3);
  });

  it('refuses a filter without tenant_id, and a funding without its amount', async () => {
    const noTenant = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter: {},
      action: 'CREDIT',
      amount: usd(1),
      idempotency_key: randomUUID(),
    });
    const noAmount = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter: { tenant_id: 'x' },
      action: 'CREDIT',
      idempotency_key: randomUUID(),
    });

    expectError(noTenant, 400, 'INVALID_REQUEST', 'admin');
    expectError(noAmount, 400, 'INVALID_REQUEST', 'admin');
  });
});

describe('GET /v1/admin/overview', () => {
  it('counts tenants and budgets by status as they change', async () => {
    const before = await overview();
    const t = await givenClosableTenant(stack);
    await givenBudget(stack, t, '', 1_000, { unit: 'CREDITS' });
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'SUSPENDED' });

    const suspended = await overview();
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' });
    const closed = await overview();

    const delta = (o: Json, group: string, key: string) =>
      Number((o[group] as Json)[key] ?? 0) - Number((before[group] as Json)[key] ?? 0);
    expect(delta(suspended, 'tenant_counts', 'total')).toBe(1);
    expect(delta(suspended, 'tenant_counts', 'suspended')).toBe(1);
    expect(delta(suspended, 'budget_counts', 'active')).toBe(1);
    expect(
      Number(((suspended.budget_counts as Json).by_unit as Json).CREDITS) -
        Number(((before.budget_counts as Json).by_unit as Json).CREDITS ?? 0),
    ).toBe(1);
    expect(delta(closed, 'tenant_counts', 'closed')).toBe(1);
    expect(delta(closed, 'tenant_counts', 'suspended')).toBe(0);
    expect(delta(closed, 'budget_counts', 'closed')).toBe(1);
    expect(delta(closed, 'budget_counts', 'active')).toBe(0);
  });

  it('lists budgets in debt and over their limit, recent denials by reason and expiries', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100, { overdraftLimit: 100 });
    const reserve = (body: Json) =>
      request('POST', `${stack.runtimeUrl}/v1/reservations`, { headers: t.headers, body });
    const hold = await reserve(
      reserveBody({
        subject: { tenant: t.tenant },
        estimate: usd(100),
        overage_policy: 'ALLOW_WITH_OVERDRAFT',
      }),
    );
    await request(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${hold.body.reservation_id}/commit`,
      {
        headers: t.headers,
        body: { idempotency_key: randomUUID(), actual: usd(170) },
      },
    );
    await reserve(reserveBody({ subject: { tenant: t.tenant }, estimate: usd(5) }));
    const expiring = await givenTenant(stack);
    await givenBudget(stack, expiring, '', 1_000);
    const short = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: expiring.headers,
      body: reserveBody({
        subject: { tenant: expiring.tenant },
        ttl_ms: 1_000,
        grace_period_ms: 0,
      }),
    });
    clock.advance(2_000);
    await request(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${short.body.reservation_id}/commit`,
      {
        headers: expiring.headers,
        body: { idempotency_key: randomUUID(), actual: usd(1) },
      },
    );

    const o = await overview();

    expect(o.debt_scopes).toContainEqual({
      scope: scopeOf(t, ''),
      unit: 'USD_MICROCENTS',
      debt: 70,
      overdraft_limit: 100,
    });
    expect((o.budget_counts as Json).with_debt).toBeGreaterThanOrEqual(1);
    expect((o.recent_denials_by_reason as Json).DEBT_OUTSTANDING).toBeGreaterThanOrEqual(1);
    const denial = (o.recent_denials as Json[]).find((e) => e.tenant_id === t.tenant);
    expect(denial).toMatchObject({ event_type: 'reservation.denied', category: 'reservation' });
    const expiry = (o.recent_expiries as Json[]).find((e) => e.tenant_id === expiring.tenant);
    expect(expiry?.data).toMatchObject({ reservation_id: short.body.reservation_id });
    expect(o.webhook_counts).toEqual({ total: 0, active: 0, disabled: 0, with_failures: 0 });
  });
});

// Issue 28's writes seen from issue 27's governance plane: the debt a charge runs up and a refund
// gives back is what the overview and the bulk filters see, and a bulk row's single operation
// keeps a budget's max_reservation_amount.
describe('the overview and bulk actions after charges and refunds', () => {
  const api = reservationsApi(stack);
  const budgetsInDebt = async (t: GivenTenant) => {
    const res = await admin('POST', '/v1/admin/budgets/bulk-action', {
      filter: { tenant_id: t.tenant, has_debt: true },
      action: 'CREDIT',
      amount: usd(1),
      expected_count: 999,
      idempotency_key: randomUUID(),
    });
    expectError(res, 409, 'COUNT_MISMATCH', 'admin');
    return (res.body.details as Json).total_matched;
  };

  it('count the debt a charge beyond its hold ran up, and no longer once a refund gave it back', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100, { overdraftLimit: 100 });
    const hold = await api.reserve(t, {
      subject: { tenant: t.tenant },
      estimate: usd(100),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    const charged = await api.charge(t, hold.body.reservation_id, { amount: usd(150) });
    expect(charged.status, JSON.stringify(charged.body)).toBe(200);
    const inDebt = {
      scope: scopeOf(t, ''),
      unit: 'USD_MICROCENTS',
      debt: 50,
      overdraft_limit: 100,
    };

    const before = { overview: await overview(), count: await budgetsInDebt(t) };
    const refunded = await api.refund(
      t,
      hold.body.reservation_id,
      { amount: usd(50), reason: 'provider refunded the overage' },
      adminHeaders,
    );
    const after = { overview: await overview(), count: await budgetsInDebt(t) };

    expect(before.overview.debt_scopes).toContainEqual(inDebt);
    expect(before.count).toBe(1);
    expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);
    expect(after.overview.debt_scopes).not.toContainEqual(
      expect.objectContaining({ scope: inDebt.scope }),
    );
    expect(after.count).toBe(0);
  });

  it('keep a budget’s max_reservation_amount through a bulk funding and freeze', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000, { maxReservationAmount: 500 });
    const bulk = (action: string, extra: Json = {}) =>
      admin('POST', '/v1/admin/budgets/bulk-action', {
        filter: { tenant_id: t.tenant },
        action,
        expected_count: 1,
        idempotency_key: randomUUID(),
        ...extra,
      });

    const credited = await bulk('CREDIT', { amount: usd(1_000) });
    const frozen = await bulk('FREEZE');
    const unfrozen = await bulk('UNFREEZE');
    const looked = await admin(
      'GET',
      `/v1/admin/budgets/lookup?scope=${encodeURIComponent(scopeOf(t, ''))}&unit=USD_MICROCENTS`,
    );
    const over = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(501) });

    for (const res of [credited, frozen, unfrozen]) {
      expect((res.body.succeeded as Json[]).length, JSON.stringify(res.body)).toBe(1);
    }
    expect(looked.body).toMatchObject({
      allocated: usd(11_000),
      max_reservation_amount: usd(500),
    });
    expectError(over, 409, 'BUDGET_EXCEEDED', 'runtime');
  });
});
