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
  ...(await import('../../functions/store/ledgers.js')),
  ...(await import('../../functions/store/tenants.js')),
});

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
    expectError(await admin('GET', '/v1/admin/tenants?limit=0'), 400, 'INVALID_REQUEST', 'admin');
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
    const { ledgers } = await (await store()).getLedgers([scope], 'USD_MICROCENTS');
    expect(ledgers.get(scope)).toMatchObject({ reserved: 0, spent: 0, remaining: 1_000_000 });
    const admitted = raced.filter((r) => r.status === 200).length;
    const released = await auditLogs({
      tenant_id: t.tenant,
      operation: 'releaseReservation',
      limit: '100',
    });
    expect(released.logs.length).toBe(holds.length + admitted);

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

    const { ledgers } = await (await store()).getLedgers([scope], 'USD_MICROCENTS');
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
    const { ledgers } = await (await store()).getLedgers(scopes, 'USD_MICROCENTS');
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
        metadata: { actor: 'admin', detail: { reason: 'stuck agent' } },
      }),
    ]);
    expect((await api.getReservation(t, id)).body.status).toBe('RELEASED');
  });
});
