import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 28, point 3: a cap on what one reservation may hold (docs/decisions.md § Caps of one
// reservation): budgets may set max_reservation_amount.
const stack = useTestStack();
const api = reservationsApi(stack);

const budgetUrl = (t: GivenTenant, rel: string, path = 'lookup') =>
  `${stack.adminUrl}/v1/admin/budgets${path ? `/${path}` : ''}?scope=${encodeURIComponent(`tenant:${t.tenant}${rel ? `/${rel}` : ''}`)}&unit=USD_MICROCENTS`;

async function cappedTenant(cap: number) {
  const t = await givenTenant(stack);
  await givenBudget(stack, t, '', 100_000);
  const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
    headers: adminHeaders,
    body: {
      scope: `tenant:${t.tenant}/workspace:w`,
      unit: 'USD_MICROCENTS',
      allocated: usd(25_000),
      max_reservation_amount: usd(cap),
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.max_reservation_amount).toEqual(usd(cap));
  return t;
}

describe('max_reservation_amount', () => {
  it('refuses a reservation whose estimate is above it with 409 BUDGET_EXCEEDED naming the scope and the cap', async () => {
    const t = await cappedTenant(5_000);

    const over = await api.reserve(t, { estimate: usd(5_001) });
    const at = await api.reserve(t, { estimate: usd(5_000) });

    const error = expectError(over, 409, 'BUDGET_EXCEEDED', 'runtime');
    expect(error.details).toMatchObject({
      reason: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
      scope: `tenant:${t.tenant}/workspace:w`,
      max_reservation_amount: 5_000,
      requested: 5_001,
    });
    expect(at.status).toBe(200);
    // The LiteLLM case: recorded spend 0, yet no hold may block the whole budget.
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(25_000, 0, 5_000, 0, 20_000));
  });

  it('answers dry runs and decide DENY with reason_code MAX_RESERVATION_AMOUNT_EXCEEDED', async () => {
    const t = await cappedTenant(5_000);

    const dry = await api.reserve(t, { estimate: usd(6_000), dry_run: true });
    const decided = await request('POST', `${stack.runtimeUrl}/v1/decide`, {
      headers: t.headers,
      body: { ...reserveBody({ estimate: usd(6_000) }), idempotency_key: randomUUID() },
    });
    const fits = await api.reserve(t, { estimate: usd(4_000), dry_run: true });

    expect(dry.body).toMatchObject({
      decision: 'DENY',
      reason_code: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
    });
    expect(decided.body).toMatchObject({
      decision: 'DENY',
      reason_code: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
    });
    expect(fits.body.decision).toBe('ALLOW');
  });

  it('reports the cap before a short remaining, and a stronger refusal before the cap', async () => {
    const t = await cappedTenant(100);
    await api.reserve(t, { estimate: usd(100) });
    const exhausted = await request('POST', `${budgetUrl(t, 'workspace:w', 'fund')}`, {
      headers: adminHeaders,
      body: { operation: 'RESET', amount: usd(100), idempotency_key: randomUUID() },
    });
    expect(exhausted.status).toBe(200);

    const both = await api.reserve(t, { estimate: usd(150) });
    const frozen = await request('POST', budgetUrl(t, 'workspace:w', 'freeze'), {
      headers: adminHeaders,
    });
    const whenFrozen = await api.reserve(t, { estimate: usd(150) });

    expect(expectError(both, 409, 'BUDGET_EXCEEDED').details?.reason).toBe(
      'MAX_RESERVATION_AMOUNT_EXCEEDED',
    );
    expect(frozen.status).toBe(200);
    expectError(whenFrozen, 409, 'BUDGET_FROZEN');
  });

  it('caps no charge, commit or event: their overage policy governs them', async () => {
    const t = await cappedTenant(1_000);
    const r = await api.reserve(t, { estimate: usd(1_000), overage_policy: 'ALLOW_IF_AVAILABLE' });

    const charge = await api.charge(t, r.body.reservation_id, { amount: usd(1_500) });
    const commit = await api.commit(t, r.body.reservation_id, { actual: usd(3_000) });
    const event = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers: t.headers,
      body: {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'tool', name: 'batch' },
        actual: usd(2_000),
      },
    });

    expect([charge.status, commit.status, event.status]).toEqual([200, 200, 201]);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(25_000, 5_000, 0, 0, 20_000));
  });

  it('is set, changed and removed by PATCH (audited), and only read on the admin plane', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000);
    const patch = (body: Json) =>
      request('PATCH', budgetUrl(t, '', ''), { headers: adminHeaders, body });

    const set = await patch({ max_reservation_amount: usd(700) });
    const refused = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(701) });
    const wrongUnit = await patch({ max_reservation_amount: { unit: 'TOKENS', amount: 5 } });
    const removed = await patch({ max_reservation_amount: null });
    const allowed = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(701) });
    const lookup = await request('GET', budgetUrl(t, ''), { headers: adminHeaders });

    expect(set.body.max_reservation_amount).toEqual(usd(700));
    expectError(refused, 409, 'BUDGET_EXCEEDED');
    expectError(wrongUnit, 400, 'UNIT_MISMATCH');
    expect(removed.status).toBe(200);
    expect(removed.body).not.toHaveProperty('max_reservation_amount');
    expect(allowed.status).toBe(200);
    expect(lookup.body).not.toHaveProperty('max_reservation_amount');
    const audit = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${t.tenant}&operation=updateBudget`,
      { headers: adminHeaders },
    );
    const details = (audit.body.logs as Json[]).map((l) => (l.metadata as Json).detail);
    expect(details).toEqual(
      expect.arrayContaining([
        { max_reservation_amount: 700 },
        { max_reservation_amount: 'removed' },
      ]),
    );
  });
});
