import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// Unbudgeted scopes, both ways (issue 27 point 7). SPEC's rule is the default: a scope without a
// budget has zero allocation, so work under it is refused. A tenant set to SKIP (PATCH tenant,
// audited) gets the reference runtime's: scopes without a budget are skipped, and at least one
// derived scope must have one (404 NOT_FOUND; DENY BUDGET_NOT_FOUND for a dry run or decide).
const clock = testClock();
const stack = useTestStack({ clock });
const runtime = (t: GivenTenant, method: string, path: string, body?: Json) =>
  request(method, `${stack.runtimeUrl}${path}`, { headers: t.headers, body });
const admin = (method: string, path: string, body?: Json) =>
  request(method, `${stack.adminUrl}${path}`, { headers: adminHeaders, body });
const pastTheBound = async () =>
  clock.advance((await import('../../functions/store/tenants.js')).TENANT_STATE_TTL_MS);

/** The dashboard seed's subject: a workspace and an agent no budget names. */
const subject = { workspace: 'e2e', agent: 'seed' };
const event = (overrides: Json = {}) => ({
  idempotency_key: randomUUID(),
  subject,
  action: { kind: 'tool.call', name: 'search' },
  actual: usd(40),
  ...overrides,
});

async function skipping(t: GivenTenant) {
  const res = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { unbudgeted_scopes: 'SKIP' });
  expect(res.body.unbudgeted_scopes).toBe('SKIP');
  await pastTheBound();
}

describe('by default (SPEC: zero allocation)', () => {
  it('refuses reserve, event, dry run and decide under a scope without a budget', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);

    const reserve = await runtime(t, 'POST', '/v1/reservations', reserveBody({ subject }));
    const charged = await runtime(t, 'POST', '/v1/events', event());
    const dry = await runtime(
      t,
      'POST',
      '/v1/reservations',
      reserveBody({ subject, dry_run: true }),
    );
    const decided = await runtime(t, 'POST', '/v1/decide', reserveBody({ subject }));

    expectError(reserve, 409, 'BUDGET_EXCEEDED', 'runtime');
    expectError(charged, 409, 'BUDGET_EXCEEDED', 'runtime');
    for (const res of [dry, decided]) {
      expect(res.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_EXCEEDED' });
    }
  });
});

describe('with the tenant’s SKIP option (the reference runtime’s)', () => {
  it('holds and charges only the budgeted scopes, and settles there', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await skipping(t);

    const reserve = await runtime(t, 'POST', '/v1/reservations', reserveBody({ subject }));
    const id = String(reserve.body.reservation_id);
    const got = await runtime(t, 'GET', `/v1/reservations/${id}`);
    const commit = await runtime(t, 'POST', `/v1/reservations/${id}/commit`, {
      idempotency_key: randomUUID(),
      actual: usd(60),
    });
    const charged = await runtime(t, 'POST', '/v1/events', event());
    const dry = await runtime(
      t,
      'POST',
      '/v1/reservations',
      reserveBody({ subject, dry_run: true }),
    );
    const decided = await runtime(t, 'POST', '/v1/decide', reserveBody({ subject }));

    expect(reserve.status, JSON.stringify(reserve.body)).toBe(200);
    expect(reserve.body.affected_scopes).toEqual([scopeOf(t, '')]);
    expect(reserve.body.scope_path).toBe(scopeOf(t, 'workspace:e2e/agent:seed'));
    expect(got.body.scope_path).toBe(scopeOf(t, 'workspace:e2e/agent:seed'));
    expect(commit.status).toBe(200);
    expect(charged.status).toBe(201);
    expect((charged.body.balances as Json[])[0]).toMatchObject({ spent: usd(100) });
    expect(dry.body.decision).toBe('ALLOW');
    expect(decided.body.decision).toBe('ALLOW');
  });

  it('needs one budgeted scope: 404 for reserve and event, DENY BUDGET_NOT_FOUND otherwise', async () => {
    const t = await givenTenant(stack);
    await skipping(t);

    const reserve = await runtime(t, 'POST', '/v1/reservations', reserveBody({ subject }));
    const charged = await runtime(t, 'POST', '/v1/events', event());
    const dry = await runtime(
      t,
      'POST',
      '/v1/reservations',
      reserveBody({ subject, dry_run: true }),
    );
    const decided = await runtime(t, 'POST', '/v1/decide', reserveBody({ subject }));

    expectError(reserve, 404, 'NOT_FOUND', 'runtime');
    expectError(charged, 404, 'NOT_FOUND', 'runtime');
    for (const res of [dry, decided]) {
      expect(res.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_NOT_FOUND' });
    }
  });

  it('answers UNIT_MISMATCH where the only budgets are in another unit', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000, { unit: 'TOKENS' });
    await skipping(t);

    const reserve = await runtime(t, 'POST', '/v1/reservations', reserveBody({ subject }));

    expectError(reserve, 400, 'UNIT_MISMATCH', 'runtime');
  });

  it('is audited, and set back to SPEC’s rule the same way', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await skipping(t);
    const back = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, {
      unbudgeted_scopes: 'ZERO_ALLOCATION',
    });
    await pastTheBound();

    const reserve = await runtime(t, 'POST', '/v1/reservations', reserveBody({ subject }));
    const trail = await admin(
      'GET',
      `/v1/admin/audit/logs?tenant_id=${t.tenant}&operation=updateTenant`,
    );

    expect(back.body).not.toHaveProperty('unbudgeted_scopes');
    expectError(reserve, 409, 'BUDGET_EXCEEDED', 'runtime');
    const [last, first] = trail.body.logs as Json[];
    expect(first?.metadata).toMatchObject({ after: { settings: { unbudgetedScopes: 'SKIP' } } });
    expect(last?.metadata).toMatchObject({
      before: { settings: { unbudgetedScopes: 'SKIP' } },
      after: { settings: { unbudgetedScopes: 'ZERO_ALLOCATION' } },
    });
  });
});
