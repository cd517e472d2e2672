import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenClosableTenant,
  givenTenant,
  givenTenantWith,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// Policies, enforced (issue 27 point 2), and the tenant's defaults and limits: a reserve, dry run
// or decide under a matching policy gets its caps merged with the budgets' (strictest wins) and
// its TTL limits; what a request leaves out, a policy's or the tenant's default fills. A change
// takes effect within TENANT_STATE_TTL_MS (each process caches a tenant's policies that long):
// the tests move the server clock past it.
const clock = testClock();
const stack = useTestStack({ clock });
const admin = (
  method: string,
  path: string,
  body?: Json,
  headers: Record<string, string> = adminHeaders,
) => request(method, `${stack.adminUrl}${path}`, { headers, ...(body !== undefined && { body }) });
const runtime = (t: GivenTenant, method: string, path: string, body?: Json) =>
  request(method, `${stack.runtimeUrl}${path}`, { headers: t.headers, body });
// Imported once the stack has set the environment the functions' configuration reads.
const pastTheBound = async () =>
  clock.advance((await import('../../functions/store/tenants.js')).TENANT_STATE_TTL_MS);

async function policy(t: GivenTenant, body: Json) {
  const res = await admin('POST', '/v1/admin/policies', {
    tenant_id: t.tenant,
    name: `p-${Math.random()}`,
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe('a policy', () => {
  it('caps reserve, dry run and decide, merged strictest-wins with the budgets’ caps', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000, { caps: { max_tokens: 500, cooldown_ms: 10 } });
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    await givenBudget(stack, t, 'app:a', 1_000_000);
    await policy(t, {
      scope_pattern: `tenant:${t.tenant}/workspace:*`,
      caps: { max_tokens: 100, tool_denylist: ['shell'] },
    });
    await pastTheBound();

    const live = await runtime(t, 'POST', '/v1/reservations', reserveBody());
    const dry = await runtime(t, 'POST', '/v1/reservations', reserveBody({ dry_run: true }));
    const decided = await runtime(t, 'POST', '/v1/decide', reserveBody());
    const outside = await runtime(t, 'POST', '/v1/decide', reserveBody({ subject: { app: 'a' } }));

    const caps = { max_tokens: 100, tool_denylist: ['shell'], cooldown_ms: 10 };
    for (const res of [live, dry, decided]) {
      expect(res.body, JSON.stringify(res.body)).toMatchObject({
        decision: 'ALLOW_WITH_CAPS',
        caps,
      });
    }
    // Not under workspace:*: only the budget's own caps.
    expect(outside.body.caps).toEqual({ max_tokens: 500, cooldown_ms: 10 });
  });

  // Issue 28's cap of one hold and issue 27's policies: the strictest answer wins. A hold above
  // any affected budget's max_reservation_amount is refused (the smallest cap breached is named),
  // whatever caps a policy would answer with; within every cap, the policies' and budgets' caps
  // merge strictest-wins.
  it('composes with the budgets’ max_reservation_amount: the smallest cap refuses, caps merge below it', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000, { maxReservationAmount: 50_000 });
    await givenBudget(stack, t, 'workspace:w', 1_000_000, {
      caps: { max_tokens: 500 },
      maxReservationAmount: 20_000,
    });
    await policy(t, { scope_pattern: 'workspace:*', caps: { max_tokens: 100 } });
    await pastTheBound();
    const estimate = (amount: number, extra: Json = {}) =>
      reserveBody({ estimate: usd(amount), ...extra });

    const over = await runtime(t, 'POST', '/v1/reservations', estimate(30_000));
    const dry = await runtime(t, 'POST', '/v1/reservations', estimate(30_000, { dry_run: true }));
    const decided = await runtime(t, 'POST', '/v1/decide', estimate(30_000));
    const within = await runtime(t, 'POST', '/v1/reservations', estimate(20_000));
    const withinDecide = await runtime(t, 'POST', '/v1/decide', estimate(20_000));

    const error = expectError(over, 409, 'BUDGET_EXCEEDED', 'runtime');
    expect(error.details).toMatchObject({
      reason: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
      scope: scopeOf(t, 'workspace:w'),
      max_reservation_amount: 20_000,
    });
    for (const res of [dry, decided]) {
      expect(res.body).toMatchObject({
        decision: 'DENY',
        reason_code: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
      });
      expect(res.body.caps).toBeUndefined();
    }
    for (const res of [within, withinDecide]) {
      expect(res.body, JSON.stringify(res.body)).toMatchObject({
        decision: 'ALLOW_WITH_CAPS',
        caps: { max_tokens: 100 },
      });
    }
  });

  it('takes effect within the bound after a change, and stops once disabled', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    await runtime(t, 'POST', '/v1/decide', reserveBody()); // the tenant's state is cached now
    const p = await policy(t, { scope_pattern: `tenant:${t.tenant}`, caps: { max_tokens: 7 } });

    const cached = await runtime(t, 'POST', '/v1/decide', reserveBody());
    await pastTheBound();
    const applied = await runtime(t, 'POST', '/v1/decide', reserveBody());
    await admin('PATCH', `/v1/admin/policies/${p.policy_id}`, { status: 'DISABLED' });
    await pastTheBound();
    const disabled = await runtime(t, 'POST', '/v1/decide', reserveBody());

    expect(cached.body.decision).toBe('ALLOW');
    expect(applied.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps: { max_tokens: 7 } });
    expect(disabled.body.decision).toBe('ALLOW');
  });

  it('caps the TTL, fills a missing one, and limits extensions', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    await policy(t, {
      scope_pattern: 'workspace:*',
      reservation_ttl_override: { default_ttl_ms: 20_000, max_ttl_ms: 30_000, max_extensions: 1 },
    });
    await pastTheBound();
    const now = clock.now();

    const capped = await runtime(t, 'POST', '/v1/reservations', reserveBody({ ttl_ms: 600_000 }));
    const filled = await runtime(t, 'POST', '/v1/reservations', reserveBody());
    const id = String(capped.body.reservation_id);
    const extend = () =>
      runtime(t, 'POST', `/v1/reservations/${id}/extend`, {
        idempotency_key: `e-${Math.random()}`,
        extend_by_ms: 1_000,
      });
    const first = await extend();
    const second = await extend();

    expect(Number(capped.body.expires_at_ms) - now).toBeLessThanOrEqual(30_000 + 1_000);
    expect(Number(capped.body.expires_at_ms) - now).toBeGreaterThan(29_000);
    expect(Number(filled.body.expires_at_ms) - now).toBeLessThanOrEqual(20_000 + 1_000);
    expect(first.status).toBe(200);
    expectError(second, 409, 'MAX_EXTENSIONS_EXCEEDED', 'runtime');
  });

  it('names the overage policy of an event that names none', async () => {
    const t = await givenTenantWith(stack, { '': { allocated: 100, overdraftLimit: 1_000 } });
    await policy(t, {
      scope_pattern: `tenant:${t.tenant}`,
      commit_overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    await pastTheBound();

    const event = await runtime(t, 'POST', '/v1/events', {
      idempotency_key: `ev-${Math.random()}`,
      subject: { tenant: t.tenant },
      action: { kind: 'tool.call', name: 'search' },
      actual: usd(150),
    });

    expect(event.status, JSON.stringify(event.body)).toBe(201);
    const [balance] = event.body.balances as Json[];
    expect(balance?.debt).toEqual(usd(50));
  });

  it('is the operator’s to lift: a tenant key adds its own but cannot change the operator’s', async () => {
    const t = await givenTenant(stack, ['policies:read', 'policies:write', 'balances:read']);
    const operators = await policy(t, { scope_pattern: `tenant:${t.tenant}` });
    const own = await admin(
      'POST',
      '/v1/admin/policies',
      { name: 'mine', scope_pattern: 'agent:*', caps: { max_tokens: 1 } },
      t.headers,
    );

    const lift = await admin(
      'PATCH',
      `/v1/admin/policies/${operators.policy_id}`,
      { status: 'DISABLED' },
      t.headers,
    );
    const changeOwn = await admin(
      'PATCH',
      `/v1/admin/policies/${own.body.policy_id}`,
      { priority: 5 },
      t.headers,
    );
    const named = await admin(
      'POST',
      '/v1/admin/policies',
      { tenant_id: 'someone-else', name: 'x', scope_pattern: 'agent:*' },
      t.headers,
    );
    const listed = await admin('GET', '/v1/admin/policies', undefined, t.headers);

    expect(own.status).toBe(201);
    expectError(lift, 403, 'FORBIDDEN', 'admin');
    expect(changeOwn.body.priority).toBe(5);
    expectError(named, 400, 'INVALID_REQUEST', 'admin');
    expect((listed.body.policies as Json[]).length).toBe(2);
  });

  it('is refused a taken name, a pattern of another tenant, and changes once its tenant closed', async () => {
    const t = await givenClosableTenant(stack);
    const p = await policy(t, { name: 'only', scope_pattern: `tenant:${t.tenant}` });

    const again = await admin('POST', '/v1/admin/policies', {
      tenant_id: t.tenant,
      name: 'only',
      scope_pattern: 'agent:*',
    });
    const foreign = await admin('POST', '/v1/admin/policies', {
      tenant_id: t.tenant,
      name: 'foreign',
      scope_pattern: 'tenant:other/agent:*',
    });
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' });
    const closedPatch = await admin('PATCH', `/v1/admin/policies/${p.policy_id}`, { priority: 1 });
    const closedCreate = await admin('POST', '/v1/admin/policies', {
      tenant_id: t.tenant,
      name: 'late',
      scope_pattern: 'agent:*',
    });
    const read = await admin('GET', `/v1/admin/policies/${p.policy_id}`);

    expectError(again, 409, 'DUPLICATE_RESOURCE', 'admin');
    expectError(foreign, 400, 'INVALID_REQUEST', 'admin');
    expectError(closedPatch, 409, 'TENANT_CLOSED', 'admin');
    expectError(closedCreate, 409, 'TENANT_CLOSED', 'admin');
    expect(read.status).toBe(200);
  });

  it('audits its creation and changes under the operator who made them', async () => {
    const t = await givenTenant(stack);
    const p = await policy(t, { scope_pattern: 'agent:*' });
    await admin('PATCH', `/v1/admin/policies/${p.policy_id}`, { name: 'renamed' });

    const trail = await admin(
      'GET',
      `/v1/admin/audit/logs?tenant_id=${t.tenant}&resource_type=policy`,
    );

    expect((trail.body.logs as Json[]).map((l) => l.operation)).toEqual([
      'updatePolicy',
      'createPolicy',
    ]);
  });
});

describe('the tenant’s defaults and limits', () => {
  it('fill a missing TTL and overage policy, cap a longer TTL and limit extensions', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const patched = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, {
      default_reservation_ttl_ms: 10_000,
      max_reservation_ttl_ms: 15_000,
      max_reservation_extensions: 0,
      default_commit_overage_policy: 'ALLOW_IF_AVAILABLE',
    });
    await pastTheBound();
    const now = clock.now();

    const filled = await runtime(t, 'POST', '/v1/reservations', reserveBody());
    const capped = await runtime(t, 'POST', '/v1/reservations', reserveBody({ ttl_ms: 90_000 }));
    const extended = await runtime(
      t,
      'POST',
      `/v1/reservations/${filled.body.reservation_id}/extend`,
      {
        idempotency_key: 'x',
        extend_by_ms: 1_000,
      },
    );
    // More than reserved: ALLOW_IF_AVAILABLE charges it, SPEC's REJECT would refuse it.
    const committed = await runtime(
      t,
      'POST',
      `/v1/reservations/${filled.body.reservation_id}/commit`,
      {
        idempotency_key: 'c',
        actual: usd(150),
      },
    );

    expect(patched.body).toMatchObject({
      default_reservation_ttl_ms: 10_000,
      max_reservation_ttl_ms: 15_000,
      max_reservation_extensions: 0,
      default_commit_overage_policy: 'ALLOW_IF_AVAILABLE',
    });
    expect(Number(filled.body.expires_at_ms) - now).toBeLessThanOrEqual(11_000);
    expect(Number(capped.body.expires_at_ms) - now).toBeLessThanOrEqual(16_000);
    expectError(extended, 409, 'MAX_EXTENSIONS_EXCEEDED', 'runtime');
    expect(committed.body, JSON.stringify(committed.body)).toMatchObject({ charged: usd(150) });
  });

  it('are created with the tenant, returned, and unset with null', async () => {
    const id = `d-${clock.now()}`;
    const created = await admin('POST', '/v1/admin/tenants', {
      tenant_id: id,
      name: 'Defaults',
      max_reservation_ttl_ms: 3_600_000,
      reservation_expiry_policy: 'AUTO_RELEASE',
      metadata: { team: 'ml' },
    });
    const unset = await admin('PATCH', `/v1/admin/tenants/${id}`, { max_reservation_ttl_ms: null });
    const manual = await admin('PATCH', `/v1/admin/tenants/${id}`, {
      reservation_expiry_policy: 'MANUAL_CLEANUP',
    });

    expect(created.body).toMatchObject({
      max_reservation_ttl_ms: 3_600_000,
      reservation_expiry_policy: 'AUTO_RELEASE',
      metadata: { team: 'ml' },
    });
    expect(unset.body).not.toHaveProperty('max_reservation_ttl_ms');
    expectError(manual, 400, 'INVALID_REQUEST', 'admin');
  });

  it('keep a retry the same request whatever they became since', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const body = reserveBody();
    const first = await runtime(t, 'POST', '/v1/reservations', body);
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { default_reservation_ttl_ms: 5_000 });
    await pastTheBound();

    const retry = await runtime(t, 'POST', '/v1/reservations', body);

    expect(retry.status).toBe(200);
    expect(retry.body.expires_at_ms).toBe(first.body.expires_at_ms);
    expect(scopeOf(t, '')).toBe(`tenant:${t.tenant}`);
  });
});
