import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { balanceOf } from '../../functions/domain/budget.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Server time flows with real time; tests move it past the cache bounds (key lookups, tenant
// state) instead of waiting for them. The key cache is at its largest allowed value, so the
// revocation bound is measured with the cache a deployment may have.
const KEY_CACHE_MS = 5_000;
const clock = testClock();
const stack = useTestStack({ clock, env: { API_KEY_CACHE_TTL_MS: String(KEY_CACHE_MS) } });
const api = reservationsApi(stack);

const admin = (method: string, path: string, body?: unknown) =>
  request(method, `${stack.adminUrl}${path}`, { headers: adminHeaders, body });
const runtime = (
  t: { headers: Record<string, string> },
  method: string,
  path: string,
  body?: Json,
) => request(method, `${stack.runtimeUrl}${path}`, { headers: t.headers, body });

/** The store as the handlers use it (imported once the stack has set the environment). */
const store = async () => ({
  ...(await import('../../functions/store/budgets/read.js')),
  ...(await import('../../functions/store/tenants.js')),
});

/** The balances of these scopes' budgets in USD_MICROCENTS, by scope, as stored. */
const balancesOf = async (scopes: readonly string[]) => {
  const { budgets } = await (await store()).getBudgets(scopes, 'USD_MICROCENTS');
  return new Map([...budgets.values()].map((b) => [b.ref.scope, balanceOf(b)]));
};

/** Past every per-process cache (keys, tenant state): a change is now seen by every request. */
const pastCaches = async () =>
  clock.advance(Math.max(KEY_CACHE_MS, (await store()).TENANT_STATE_TTL_MS));

/**
 * A tenant made with the admin API only, not registered for the scaffold's ledger audit: tests
 * here revoke all its keys, after which no key could read its balances. They check its ledgers
 * themselves.
 */
async function unauditedTenant(): Promise<GivenTenant> {
  const tenant = `c-${randomUUID().slice(0, 12)}`;
  expect((await admin('POST', '/v1/admin/tenants', { tenant_id: tenant, name: 'C' })).status).toBe(
    201,
  );
  const key = await admin('POST', '/v1/admin/api-keys', { tenant_id: tenant, name: 'agent' });
  const secret = String(key.body.key_secret);
  const headers = { 'x-service-api-key': secret };
  return { tenant, key: secret, keyId: String(key.body.key_id), headers, auditor: headers };
}

async function auditLogs(
  query: Record<string, string>,
  headers: Record<string, string> = adminHeaders,
) {
  const res = await request<{ logs: Json[]; has_more: boolean; next_cursor?: string }>(
    'GET',
    `${stack.adminUrl}/v1/admin/audit/logs?${new URLSearchParams(query)}`,
    { headers },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('tenants', () => {
  it('lists tenants page by page, filters by status, and gets one', async () => {
    const made = await Promise.all([givenTenant(stack), givenTenant(stack), givenTenant(stack)]);
    const seen: Json[] = [];
    let cursor: string | undefined;
    do {
      const res = await admin(
        'GET',
        `/v1/admin/tenants?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      const tenants = res.body.tenants as Json[];
      expect(tenants.length).toBeLessThanOrEqual(2);
      seen.push(...tenants);
      cursor = res.body.next_cursor as string | undefined;
      expect(res.body.has_more).toBe(cursor !== undefined);
    } while (cursor);
    const ids = seen.map((t) => t.tenant_id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const t of made) expect(ids).toContain(t.tenant);

    const got = await admin('GET', `/v1/admin/tenants/${made[0]?.tenant}`);
    expect(got.body).toEqual({
      tenant_id: made[0]?.tenant,
      name: `Tenant ${made[0]?.tenant}`,
      status: 'ACTIVE',
      created_at: expect.any(String),
    });
    expectError(await admin('GET', '/v1/admin/tenants/no-such-tenant'), 404, 'NOT_FOUND', 'admin');

    await admin('PATCH', `/v1/admin/tenants/${made[1]?.tenant}`, { status: 'SUSPENDED' });
    const suspended = await admin('GET', '/v1/admin/tenants?status=SUSPENDED&limit=100');
    const suspendedIds = (suspended.body.tenants as Json[]).map((t) => t.tenant_id);
    expect(suspendedIds).toContain(made[1]?.tenant);
    expect(suspendedIds).not.toContain(made[0]?.tenant);
    await admin('PATCH', `/v1/admin/tenants/${made[1]?.tenant}`, { status: 'ACTIVE' });
  });

  it('refuses bad requests with 400, and a key other than the admin key with 401', async () => {
    const t = await givenTenant(stack);
    for (const body of [
      {},
      { status: 'PAUSED' },
      { name: '' },
      { status: 'ACTIVE', plan: 'pro' },
    ]) {
      expectError(
        await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, body),
        400,
        'INVALID_REQUEST',
        'admin',
      );
    }
    // A limit outside 1..100 is clamped, as the reference does (its dashboard asks for 1000).
    expect((await admin('GET', '/v1/admin/tenants?limit=0')).status).toBe(200);
    expectError(await admin('GET', '/v1/admin/tenants?limit=x'), 400, 'INVALID_REQUEST', 'admin');
    expectError(
      await admin('GET', '/v1/admin/tenants?cursor=forged.mac'),
      400,
      'INVALID_REQUEST',
      'admin',
    );
    const asTenant = await request('GET', `${stack.adminUrl}/v1/admin/tenants`, {
      headers: t.headers,
    });
    expectError(asTenant, 401, 'UNAUTHORIZED', 'admin');
  });

  it('suspended: new reservations, decides and events get 403; open ones still settle', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const open = await Promise.all([api.reserve(t), api.reserve(t)]);

    const patched = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'SUSPENDED' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'SUSPENDED', updated_at: expect.any(String) });
    await pastCaches();

    const refused = [
      await api.reserve(t),
      await api.reserve(t, { dry_run: true }),
      await runtime(t, 'POST', '/v1/decide', { ...reserveBody(), ttl_ms: undefined }),
      await runtime(t, 'POST', '/v1/events', {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'tool.call', name: 'x' },
        actual: { unit: 'USD_MICROCENTS', amount: 1 },
      }),
    ];
    for (const res of refused) {
      const error = expectError(res, 403, 'FORBIDDEN', 'runtime');
      expect(error.details).toEqual({ reason: 'TENANT_SUSPENDED', tenant_id: t.tenant });
    }
    expect(
      (
        await api.commit(t, open[0]?.body.reservation_id, {
          actual: { unit: 'USD_MICROCENTS', amount: 10 },
        })
      ).status,
    ).toBe(200);
    expect((await api.release(t, open[1]?.body.reservation_id)).status).toBe(200);

    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'ACTIVE' });
    await pastCaches();
    expect((await api.reserve(t)).status).toBe(200);
  });

  it('closing revokes every key and releases every open reservation, then stays closed', async () => {
    const t = await unauditedTenant();
    const scope = `tenant:${t.tenant}`;
    await givenBudget(stack, t, scope, 1_000_000);
    const second = await admin('POST', '/v1/admin/api-keys', { tenant_id: t.tenant, name: 'b' });
    const holds = await Promise.all(
      Array.from({ length: 8 }, () => api.reserve(t, { subject: { tenant: t.tenant } })),
    );
    for (const h of holds) expect(h.status).toBe(200);

    // Reservations keep arriving while the tenant closes: each is either refused or released.
    const racing = Promise.all(
      Array.from({ length: 6 }, () => api.reserve(t, { subject: { tenant: t.tenant } })),
    );
    const closed = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' });
    const raced = await racing;
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body.status).toBe('CLOSED');
    // A reservation admitted in the race may have landed after the cascade's walk: closing again
    // resumes the cascade and releases it.
    expect(
      (await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' })).status,
    ).toBe(200);

    const keys = await admin('GET', `/v1/admin/api-keys?tenant_id=${t.tenant}`);
    expect((keys.body.keys as Json[]).map((k) => k.status)).toEqual(['REVOKED', 'REVOKED']);
    expect((keys.body.keys as Json[]).map((k) => k.key_id).sort()).toEqual(
      [t.keyId, second.body.key_id].sort(),
    );
    const ledgers = await balancesOf([scope]);
    expect(ledgers.get(scope)).toMatchObject({ reserved: 0, spent: 0, remaining: 1_000_000 });
    const admitted = raced.filter((r) => r.status === 200).length;
    const released = await auditLogs({
      tenant_id: t.tenant,
      operation: 'releaseReservation',
      limit: '100',
    });
    expect(released.logs.length).toBe(holds.length + admitted);

    const budget = await admin(
      'GET',
      `/v1/admin/budgets/lookup?scope=${encodeURIComponent(scope)}&unit=USD_MICROCENTS`,
    );
    expect(budget.body.status).toBe('CLOSED');
    const fundClosed = await admin(
      'POST',
      `/v1/admin/budgets/fund?scope=${encodeURIComponent(scope)}&unit=USD_MICROCENTS`,
      {
        operation: 'CREDIT',
        amount: { unit: 'USD_MICROCENTS', amount: 1 },
        idempotency_key: randomUUID(),
      },
    );
    // The reference's Rule 2: a closed tenant's objects refuse every change with TENANT_CLOSED.
    expectError(fundClosed, 409, 'TENANT_CLOSED', 'admin');
    await pastCaches();
    expectError(await api.reserve(t), 401, 'UNAUTHORIZED', 'runtime');
    expectError(
      await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'ACTIVE' }),
      409,
      'TENANT_CLOSED',
      'admin',
    );
  });

  it('a close interrupted after the status flip is finished by the next close', async () => {
    const t = await unauditedTenant();
    const scope = `tenant:${t.tenant}`;
    await givenBudget(stack, t, scope, 1_000);
    const hold = await api.reserve(t, {
      subject: { tenant: t.tenant },
      estimate: { unit: 'USD_MICROCENTS', amount: 400 },
    });
    const before = (await admin('GET', `/v1/admin/tenants/${t.tenant}`)).body;
    // The crash: the status is CLOSED, no key was revoked and nothing released.
    const tenant = {
      tenantId: t.tenant,
      name: String(before.name),
      status: 'ACTIVE' as const,
      createdAt: String(before.created_at),
    };
    await (await store()).updateTenant(
      tenant,
      { ...tenant, status: 'CLOSED' },
      {
        tenant: t.tenant,
        atMs: clock.now(),
        actor: { kind: 'admin' },
        requestId: 'crashed-close',
        action: 'tenant.update',
        before: tenant,
        after: { ...tenant, status: 'CLOSED' },
      },
    );
    expect((await api.getReservation(t, hold.body.reservation_id)).body.status).toBe('ACTIVE');

    expect(
      (await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' })).status,
    ).toBe(200);

    const ledgers = await balancesOf([scope]);
    expect(ledgers.get(scope)).toMatchObject({ reserved: 0, remaining: 1_000 });
    const key = await admin('GET', `/v1/admin/api-keys/${t.keyId}`);
    expect(key.body.status).toBe('REVOKED');
  });
});

describe('API keys', () => {
  it('lists a tenant’s keys without secrets, gets one, and changes it', async () => {
    const t = await givenTenant(stack);
    const listed = await admin('GET', `/v1/admin/api-keys?tenant_id=${t.tenant}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      keys: [
        {
          key_id: t.keyId,
          tenant_id: t.tenant,
          key_prefix: t.key.slice(0, 14),
          name: 'test key',
          permissions: expect.any(Array),
          status: 'ACTIVE',
          created_at: expect.any(String),
        },
      ],
      has_more: false,
    });
    expect(JSON.stringify(listed.body)).not.toContain(t.key);

    const changed = await admin('PATCH', `/v1/admin/api-keys/${t.keyId}`, {
      name: 'read only',
      permissions: ['balances:read'],
    });
    expect(changed.body).toMatchObject({ name: 'read only', permissions: ['balances:read'] });
    await pastCaches();
    const refused = expectError(await api.reserve(t), 403, 'FORBIDDEN', 'runtime');
    expect(refused.details).toEqual({ missing_permission: 'reservations:create' });
    expect((await admin('GET', `/v1/admin/api-keys/${t.keyId}`)).body.name).toBe('read only');

    expectError(await admin('GET', '/v1/admin/api-keys/key_00'), 404, 'NOT_FOUND', 'admin');
    expectError(
      await admin('GET', '/v1/admin/api-keys/not-a-key'),
      400,
      'INVALID_REQUEST',
      'admin',
    );
    expectError(
      await admin('PATCH', `/v1/admin/api-keys/${t.keyId}`, { tenant_id: 'other' }),
      400,
      'INVALID_REQUEST',
      'admin',
    );
  });

  it('a revoked key is refused everywhere within the cache bound; revoking again is safe', async () => {
    // Not audited by the scaffold: its only key is revoked; its ledgers are checked here.
    const t = await unauditedTenant();
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const open = await api.reserve(t);
    expect(open.status).toBe(200); // the key is now in this process's cache

    const revoked = await request(
      'DELETE',
      `${stack.adminUrl}/v1/admin/api-keys/${t.keyId}?reason=leaked`,
      {
        headers: adminHeaders,
      },
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      status: 'REVOKED',
      revoked_reason: 'leaked',
      revoked_at: expect.any(String),
    });
    const validation = await admin('POST', '/v1/auth/validate', { key_secret: t.key });
    expect(validation.body).toEqual({ valid: false, reason: 'KEY_REVOKED' });

    clock.advance(KEY_CACHE_MS);
    for (const res of [
      await api.reserve(t),
      await api.commit(t, open.body.reservation_id, {
        actual: { unit: 'USD_MICROCENTS', amount: 1 },
      }),
      await runtime(t, 'GET', `/v1/balances?tenant=${t.tenant}`),
      await runtime(t, 'GET', '/v1/reservations'),
    ]) {
      expect(expectError(res, 401, 'UNAUTHORIZED', 'runtime').message).toContain('revoked');
    }

    const again = await request('DELETE', `${stack.adminUrl}/v1/admin/api-keys/${t.keyId}`, {
      headers: adminHeaders,
    });
    expect(again.status).toBe(200);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    expectError(
      await admin('PATCH', `/v1/admin/api-keys/${t.keyId}`, { name: 'x' }),
      409,
      'KEY_REVOKED',
      'admin',
    );
    // The operator releases what the revoked key left open.
    const released = await runtime(
      { headers: adminHeaders },
      'POST',
      `/v1/reservations/${open.body.reservation_id}/release`,
      {
        idempotency_key: randomUUID(),
        reason: 'key leaked',
      },
    );
    expect(released.status).toBe(200);
    const scopes = [`tenant:${t.tenant}`, `tenant:${t.tenant}/workspace:w`];
    const ledgers = await balancesOf(scopes);
    for (const scope of scopes) expect(ledgers.get(scope)).toMatchObject({ reserved: 0, spent: 0 });
  });
});

describe('audit trail', () => {
  it('records every change with its actor, and only changes that happened', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 5_000);
    const funded = await request(
      'POST',
      `${stack.adminUrl}/v1/admin/budgets/${encodeURIComponent(`tenant:${t.tenant}`)}/USD_MICROCENTS/fund`,
      {
        headers: t.headers,
        body: {
          operation: 'CREDIT',
          amount: { unit: 'USD_MICROCENTS', amount: 5 },
          idempotency_key: randomUUID(),
        },
      },
    );
    expect(funded.status).toBe(200);
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { name: 'Renamed' });
    // Refused changes leave no record.
    await admin('PATCH', `/v1/admin/api-keys/key_0000`, { name: 'x' });
    await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { name: 'Renamed' }); // no change

    const trail = await auditLogs({ tenant_id: t.tenant });
    expect(trail.logs.map((l) => l.operation)).toEqual([
      'updateTenant',
      'fundBudget',
      'createBudget',
      'createApiKey',
      'createTenant',
    ]);
    const [rename, funding] = trail.logs;
    expect(rename).toMatchObject({
      tenant_id: t.tenant,
      resource_type: 'tenant',
      resource_id: t.tenant,
      status: 200,
      request_id: expect.any(String),
      metadata: {
        actor: 'admin',
        before: { name: `Tenant ${t.tenant}` },
        after: { name: 'Renamed' },
      },
    });
    expect(rename).not.toHaveProperty('key_id');
    expect(funding).toMatchObject({
      key_id: t.keyId,
      resource_id: `tenant:${t.tenant}#USD_MICROCENTS`,
    });
    expect(JSON.stringify(trail)).not.toContain(t.key);

    // Filters: operation, actor, time range; and a tenant key reads its own tenant's trail only.
    expect((await auditLogs({ tenant_id: t.tenant, operation: 'fundBudget' })).logs).toHaveLength(
      1,
    );
    expect((await auditLogs({ tenant_id: t.tenant, key_id: t.keyId })).logs).toHaveLength(1);
    const future = new Date(clock.now() + 3_600_000).toISOString();
    expect((await auditLogs({ tenant_id: t.tenant, from: future })).logs).toHaveLength(0);
    expect((await auditLogs({}, t.headers)).logs).toHaveLength(5);
    const other = await givenTenant(stack);
    const foreign = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${other.tenant}`,
      {
        headers: t.headers,
      },
    );
    expectError(foreign, 403, 'FORBIDDEN', 'admin');
    // Across tenants for the operator, newest first, page by page.
    const first = await auditLogs({ limit: '2' });
    expect(first.logs).toHaveLength(2);
    expect(first.has_more).toBe(true);
    const next = await auditLogs({ limit: '2', cursor: String(first.next_cursor) });
    expect(String(next.logs[0]?.timestamp) <= String(first.logs[1]?.timestamp)).toBe(true);
    expect(next.logs.map((l) => l.log_id)).not.toContain(first.logs[1]?.log_id);
  });

  it('a forced release is audited with its reason; a tenant key still cannot release another tenant’s', async () => {
    const [t, other] = await Promise.all([givenTenant(stack), givenTenant(stack)]);
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 1_000);
    const hold = await api.reserve(t, { estimate: { unit: 'USD_MICROCENTS', amount: 300 } });
    const id = String(hold.body.reservation_id);

    expectError(await api.release(other, id), 403, 'FORBIDDEN', 'runtime');
    const forced = await runtime(
      { headers: adminHeaders },
      'POST',
      `/v1/reservations/${id}/release`,
      {
        idempotency_key: randomUUID(),
        reason: 'stuck agent',
      },
    );
    expect(forced.status).toBe(200);
    expect(forced.body.released).toEqual({ unit: 'USD_MICROCENTS', amount: 300 });

    const trail = await auditLogs({ tenant_id: t.tenant, operation: 'releaseReservation' });
    expect(trail.logs).toEqual([
      expect.objectContaining({
        resource_type: 'reservation',
        resource_id: id,
        // What it gave back is recorded too: the event of a cascade's release is derived from it.
        metadata: {
          actor: 'admin',
          actor_type: 'admin',
          detail: {
            reason: 'stuck agent',
            scope: `tenant:${t.tenant}/workspace:w`,
            unit: 'USD_MICROCENTS',
            released: 300,
          },
        },
      }),
    ]);
    expect((await api.getReservation(t, id)).body.status).toBe('RELEASED');
  });
});

describe('budgets', () => {
  const usd = (amount: number) => ({ unit: 'USD_MICROCENTS', amount });
  const q = (scope: string) => `scope=${encodeURIComponent(scope)}&unit=USD_MICROCENTS`;
  const budgetAt = async (scope: string, headers: Record<string, string> = adminHeaders) =>
    request('GET', `${stack.adminUrl}/v1/admin/budgets/lookup?${q(scope)}`, { headers });
  const fundBy = (
    t: GivenTenant,
    scope: string,
    operation: string,
    amount: number,
    key = randomUUID(),
  ) =>
    request('POST', `${stack.adminUrl}/v1/admin/budgets/fund?${q(scope)}`, {
      headers: t.headers,
      body: { operation, amount: usd(amount), idempotency_key: key },
    });

  it('lists a tenant’s budgets with filters and pages, and looks one up', async () => {
    const t = await givenTenant(stack);
    const root = `tenant:${t.tenant}`;
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:a', 100);
    await givenBudget(stack, t, 'workspace:b', 100);
    await givenBudget(stack, t, 'workspace:b', 7, { unit: 'TOKENS' });

    const all: Json[] = [];
    let cursor: string | undefined;
    do {
      const res = await admin(
        'GET',
        `/v1/admin/budgets?tenant_id=${t.tenant}&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      all.push(...(res.body.ledgers as Json[]));
      cursor = res.body.next_cursor as string | undefined;
    } while (cursor);
    expect(all.map((b) => `${b.scope}#${b.unit}`).sort()).toEqual(
      [
        `${root}#USD_MICROCENTS`,
        `${root}/workspace:a#USD_MICROCENTS`,
        `${root}/workspace:b#TOKENS`,
        `${root}/workspace:b#USD_MICROCENTS`,
      ].sort(),
    );
    const prefixed = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/budgets?scope_prefix=${encodeURIComponent(`${root}/workspace:b`)}&unit=TOKENS`,
      { headers: t.headers },
    );
    expect((prefixed.body.ledgers as Json[]).map((b) => b.scope)).toEqual([`${root}/workspace:b`]);

    const one = await budgetAt(`${root}/workspace:a`, t.headers);
    expect(one.body).toEqual({
      ledger_id: expect.stringMatching(/^ldg_[0-9a-f]+$/),
      tenant_id: t.tenant,
      scope: `${root}/workspace:a`,
      scope_path: `${root}/workspace:a`,
      unit: 'USD_MICROCENTS',
      allocated: usd(100),
      remaining: usd(100),
      spent: usd(0),
      reserved: usd(0),
      debt: usd(0),
      overdraft_limit: usd(0),
      is_over_limit: false,
      status: 'ACTIVE',
      created_at: expect.any(String),
    });
    expectError(await budgetAt(`${root}/workspace:zz`), 404, 'NOT_FOUND', 'admin');
    // Without tenant_id the admin key lists every tenant's (the reference's).
    expect((await admin('GET', '/v1/admin/budgets')).status).toBe(200);
    const other = await givenTenant(stack);
    expectError(await budgetAt(root, other.headers), 403, 'FORBIDDEN', 'admin');
  });

  it('freezes: new holds, decides and events are refused, open ones settle, unfreeze reopens', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000, { shards: 4 });
    await givenBudget(stack, t, 'workspace:w', 10_000);
    const open = await api.reserve(t, { estimate: usd(100) });
    const scope = `tenant:${t.tenant}/workspace:w`;

    // Reservations racing the freeze: each is either held (and counted) or refused as frozen.
    const racing = Promise.all(
      Array.from({ length: 8 }, () => api.reserve(t, { estimate: usd(10) })),
    );
    const frozen = await request('POST', `${stack.adminUrl}/v1/admin/budgets/freeze?${q(scope)}`, {
      headers: t.headers,
    });
    expect(frozen.status, JSON.stringify(frozen.body)).toBe(200);
    expect(frozen.body.status).toBe('FROZEN');
    for (const r of await racing) expect([200, 409]).toContain(r.status);

    const refused = expectError(await api.reserve(t), 409, 'BUDGET_FROZEN', 'runtime');
    expect(refused.details).toMatchObject({ scope });
    const decided = await runtime(t, 'POST', '/v1/decide', {
      idempotency_key: randomUUID(),
      subject: { workspace: 'w' },
      action: { kind: 'llm', name: 'm' },
      estimate: usd(1),
    });
    expect(decided.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_FROZEN' });
    const event = await runtime(t, 'POST', '/v1/events', {
      idempotency_key: randomUUID(),
      subject: { workspace: 'w' },
      action: { kind: 'tool.call', name: 'x' },
      actual: usd(1),
    });
    expectError(event, 409, 'BUDGET_FROZEN', 'runtime');
    expect((await api.commit(t, open.body.reservation_id, { actual: usd(60) })).status).toBe(200);

    // Freezing the sharded root refuses a hold that would land on any of its shards.
    const root = `tenant:${t.tenant}`;
    await request('POST', `${stack.adminUrl}/v1/admin/budgets/unfreeze?${q(scope)}`, {
      headers: t.headers,
    });
    await request('POST', `${stack.adminUrl}/v1/admin/budgets/freeze?${q(root)}`, {
      headers: t.headers,
    });
    for (let i = 0; i < 4; i++) expectError(await api.reserve(t), 409, 'BUDGET_FROZEN', 'runtime');
    const again = await request('POST', `${stack.adminUrl}/v1/admin/budgets/unfreeze?${q(root)}`, {
      headers: t.headers,
    });
    expect(again.body.status).toBe('ACTIVE');
    expect((await api.reserve(t)).status).toBe(200);

    const trail = await auditLogs({ tenant_id: t.tenant, resource_type: 'budget' });
    expect(trail.logs.map((l) => l.operation).slice(0, 4)).toEqual([
      'unfreezeBudget',
      'freezeBudget',
      'unfreezeBudget',
      'freezeBudget',
    ]);
  });

  it('changes the overdraft limit and the caps; a limit below the debt blocks new holds', async () => {
    const t = await givenTenant(stack);
    const root = `tenant:${t.tenant}`;
    await givenBudget(stack, t, '', 100, { overdraftLimit: 1_000 });
    const hold = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(100) });
    await api.commit(t, hold.body.reservation_id, { actual: usd(400) }, {});
    // ALLOW_IF_AVAILABLE by default: commit what the budget covers, so use an event into debt.
    await runtime(t, 'POST', '/v1/events', {
      idempotency_key: randomUUID(),
      subject: { tenant: t.tenant },
      action: { kind: 'tool.call', name: 'x' },
      actual: usd(300),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    const indebted = await budgetAt(root);
    expect(amountOfJson(indebted.body.debt)).toBeGreaterThan(0);

    const patched = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${q(root)}`, {
      headers: t.headers,
      body: { overdraft_limit: usd(1), caps: { max_tokens: 500 } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      overdraft_limit: usd(1),
      is_over_limit: true,
      caps: { max_tokens: 500 },
      updated_at: expect.any(String),
    });
    expectError(
      await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(1) }),
      409,
      'OVERDRAFT_LIMIT_EXCEEDED',
      'runtime',
    );
    await fundBy(t, root, 'REPAY_DEBT', 10_000);
    const capped = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(1) });
    expect(capped.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps: { max_tokens: 500 } });

    const removed = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${q(root)}`, {
      headers: t.headers,
      body: { caps: null },
    });
    expect(removed.body).not.toHaveProperty('caps');
    const plain = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(1) });
    expect(plain.body.decision).toBe('ALLOW');
    for (const body of [
      {},
      { allocated: usd(5) },
      { overdraft_limit: { unit: 'TOKENS', amount: 1 } },
    ]) {
      const res = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${q(root)}`, {
        headers: t.headers,
        body,
      });
      expect([400]).toContain(res.status);
    }
  });

  it('sets caps with a soft landing and thresholds in one PATCH, removing nothing', async () => {
    const t = await givenTenant(stack);
    const root = `tenant:${t.tenant}`;
    await givenBudget(stack, t, '', 1_000);

    const patched = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${q(root)}`, {
      headers: t.headers,
      body: {
        caps: { max_tokens: 500 },
        caps_when_remaining_below_bps: 2_500,
        thresholds: [10, 90],
      },
    });

    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      caps: { max_tokens: 500 },
      caps_when_remaining_below_bps: 2_500,
      thresholds: [10, 90],
    });
    expect((await budgetAt(root)).body).toMatchObject({ thresholds: [10, 90] });
  });

  it('funds by query: DEBIT never below spent and held, RESET_SPENT starts a period by hand', async () => {
    const t = await givenTenant(stack);
    const root = `tenant:${t.tenant}`;
    await givenBudget(stack, t, '', 1_000);
    const spent = await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(300) });
    await api.commit(t, spent.body.reservation_id, { actual: usd(300) });
    await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(200) }); // held

    expectError(await fundBy(t, root, 'DEBIT', 501), 409, 'BUDGET_EXCEEDED', 'admin');
    const key = randomUUID();
    const debited = await fundBy(t, root, 'DEBIT', 500, key);
    expect(debited.status).toBe(200);
    expect(debited.body).toMatchObject({ new_allocated: usd(500), new_remaining: usd(0) });
    expect((await fundBy(t, root, 'DEBIT', 500, key)).body).toEqual(debited.body); // replay

    const reset = await fundBy(t, root, 'RESET_SPENT', 0);
    expect(reset.status).toBe(200);
    expect(reset.body.balance).toMatchObject({
      spent: usd(0),
      reserved: usd(200),
      remaining: usd(300),
      allocated: usd(500),
    });
    expectError(await fundBy(t, root, 'RESET_SPENT', 1), 400, 'INVALID_REQUEST', 'admin');

    // RESET_SPENT needs no amount (0: a new period); every other operation does.
    await api.commit(
      t,
      (await api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(50) })).body
        .reservation_id,
      { actual: usd(50) },
    );
    const fundWithout = (operation: string) =>
      request('POST', `${stack.adminUrl}/v1/admin/budgets/fund?${q(root)}`, {
        headers: t.headers,
        body: { operation, idempotency_key: randomUUID() },
      });
    const bare = await fundWithout('RESET_SPENT');
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect(bare.body.balance).toMatchObject({ spent: usd(0), allocated: usd(500) });
    for (const operation of ['CREDIT', 'DEBIT', 'RESET', 'REPAY_DEBT']) {
      const refused = expectError(await fundWithout(operation), 400, 'INVALID_REQUEST', 'admin');
      expect(refused.message).toContain('amount');
    }
    const ops = (await auditLogs({ tenant_id: t.tenant, operation: 'fundBudget' })).logs;
    expect(
      ops.map((l) => (l.metadata as { detail: { operation: string } }).detail.operation),
    ).toEqual(['RESET_SPENT', 'RESET_SPENT', 'DEBIT']);
  });
});

const amountOfJson = (v: unknown) => (v as { amount: number }).amount;
