import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PERMISSIONS } from '../../functions/domain/permissions.js';
import { routes } from '../../functions/routes.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  givenTenant,
  givenTenantWith,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// The reference's Permission enum on keys, with its wildcard semantics, and named operator
// credentials (issue 27 point 4, issue 32 point 5): admin-plane keys of the reserved owner
// __system__, audited under their own key id and name. Keys are never cached in tests
// (API_KEY_CACHE_TTL_MS=0), so a revocation shows at once.
const clock = testClock();
const stack = useTestStack({ clock });

const admin = (path: string) => `${stack.adminUrl}${path}`;

async function newKey(body: Json, headers: Record<string, string> = adminHeaders) {
  return request('POST', admin('/v1/admin/api-keys'), { headers, body });
}

async function operator(name: string, permissions: string[], extra: Json = {}) {
  const res = await newKey({ tenant_id: '__system__', name, permissions, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    keyId: String(res.body.key_id),
    headers: { 'x-admin-api-key': String(res.body.key_secret) },
  };
}

describe('the reference permissions', () => {
  it('accepts every name of the reference enum and of SPEC on a key', async () => {
    const t = await givenTenant(stack);

    const res = await newKey({ tenant_id: t.tenant, name: 'all', permissions: [...PERMISSIONS] });

    expect(res.status).toBe(201);
    expect(new Set(res.body.permissions as string[])).toEqual(new Set(PERMISSIONS));
  });

  it('lets admin:write stand for budgets:write, as the runaway demo provisions', async () => {
    const t = await givenTenant(stack);
    const key = await newKey({
      tenant_id: t.tenant,
      name: 'demo-key',
      permissions: ['reservations:create', 'balances:read', 'admin:write'],
    });
    const headers = { 'x-cycles-api-key': String(key.body.key_secret) };

    const created = await request('POST', admin('/v1/admin/budgets'), {
      headers,
      body: { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS', allocated: usd(100) },
    });

    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it('lets admin:read stand for budgets:read but never for a write', async () => {
    const t = await givenTenant(stack);
    const key = await newKey({ tenant_id: t.tenant, name: 'reader', permissions: ['admin:read'] });
    const headers = { 'x-cycles-api-key': String(key.body.key_secret) };

    const listed = await request('GET', admin('/v1/admin/budgets'), { headers });
    const created = await request('POST', admin('/v1/admin/budgets'), {
      headers,
      body: { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS', allocated: usd(100) },
    });

    expect(listed.status).toBe(200);
    expectError(created, 403, 'FORBIDDEN');
    expect(created.body.details).toEqual({ missing_permission: 'budgets:write' });
  });

  it('lists budgets with budgets:read alone, as the dashboard seed key holds it', async () => {
    const t = await givenTenant(stack);
    const key = await newKey({ tenant_id: t.tenant, name: 'r', permissions: ['budgets:read'] });

    const listed = await request('GET', admin('/v1/admin/budgets'), {
      headers: { 'x-cycles-api-key': String(key.body.key_secret) },
    });

    expect(listed.status).toBe(200);
  });

  it('never lets a tenant key with admin:* reach the admin plane', async () => {
    const t = await givenTenant(stack);
    const key = await newKey({ tenant_id: t.tenant, name: 'x', permissions: ['admin:write'] });
    const secret = String(key.body.key_secret);

    const asAdmin = await request('GET', admin('/v1/admin/tenants'), {
      headers: { 'x-admin-api-key': secret },
    });

    expectError(asAdmin, 401, 'UNAUTHORIZED');
  });

  it('answers 401 once a key passes its expires_at', async () => {
    const t = await givenTenant(stack);
    const key = await newKey({
      tenant_id: t.tenant,
      name: 'short',
      expires_at: new Date(clock.now() + 60_000).toISOString(),
    });
    const headers = { 'x-cycles-api-key': String(key.body.key_secret) };
    const before = await request('GET', `${stack.runtimeUrl}/v1/reservations`, { headers });

    clock.advance(61_000);
    const after = await request('GET', `${stack.runtimeUrl}/v1/reservations`, { headers });

    expect(before.status).toBe(200);
    expectError(after, 401, 'UNAUTHORIZED');
  });
});

describe('named operator credentials', () => {
  it('act on the admin plane within their permissions, audited under their id and name', async () => {
    const alice = await operator('alice', ['admin:read', 'admin:write']);
    const tenant = `ops-${clock.now()}`;

    const created = await request('POST', admin('/v1/admin/tenants'), {
      headers: alice.headers,
      body: { tenant_id: tenant, name: 'By Alice' },
    });
    const trail = await request('GET', admin(`/v1/admin/audit/logs?tenant_id=${tenant}`), {
      headers: adminHeaders,
    });

    expect(created.status).toBe(201);
    const [entry] = trail.body.logs as Json[];
    expect(entry).toMatchObject({
      operation: 'createTenant',
      key_id: alice.keyId,
      metadata: { actor: alice.keyId, actor_name: 'alice' },
    });
  });

  it('are refused what their permissions do not grant', async () => {
    const reader = await operator('reader', ['admin:read']);

    const listed = await request('GET', admin('/v1/admin/tenants'), { headers: reader.headers });
    const created = await request('POST', admin('/v1/admin/tenants'), {
      headers: reader.headers,
      body: { tenant_id: `nope-${clock.now()}`, name: 'x' },
    });

    expect(listed.status).toBe(200);
    expectError(created, 403, 'FORBIDDEN');
    expect(created.body.details).toEqual({ missing_permission: 'admin:tenants:write' });
  });

  it('describe themselves as admin with their own permissions', async () => {
    const bob = await operator('bob', ['admin:read']);

    const res = await request('GET', admin('/v1/auth/introspect'), { headers: bob.headers });

    expect(res.body).toMatchObject({ auth_type: 'admin', permissions: ['admin:read'] });
    expect(res.body.capabilities).toMatchObject({ view_tenants: true, manage_tenants: false });
    expect(res.headers.get('x-cycles-key-id')).toBe(bob.keyId);
  });

  it('answer 401 once revoked or expired', async () => {
    const carol = await operator('carol', ['admin:read']);
    const dave = await operator('dave', ['admin:read'], {
      expires_at: new Date(clock.now() + 60_000).toISOString(),
    });

    await request('DELETE', admin(`/v1/admin/api-keys/${carol.keyId}`), { headers: adminHeaders });
    clock.advance(61_000);
    const revoked = await request('GET', admin('/v1/admin/tenants'), { headers: carol.headers });
    const expired = await request('GET', admin('/v1/admin/tenants'), { headers: dave.headers });

    expectError(revoked, 401, 'UNAUTHORIZED');
    expectError(expired, 401, 'UNAUTHORIZED');
  });

  it('cannot grant a permission they do not hold', async () => {
    const keyAdmin = await operator('key admin', ['admin:apikeys:write']);

    const widened = await newKey(
      { tenant_id: '__system__', name: 'wider', permissions: ['admin:write'] },
      keyAdmin.headers,
    );
    const same = await newKey(
      { tenant_id: '__system__', name: 'same', permissions: ['admin:apikeys:write'] },
      keyAdmin.headers,
    );

    expectError(widened, 403, 'FORBIDDEN');
    expect(same.status).toBe(201);
  });

  it('hold admin:* permissions only, and must name them', async () => {
    const tenantPermission = await newKey({
      tenant_id: '__system__',
      name: 'x',
      permissions: ['reservations:create'],
    });
    const none = await newKey({ tenant_id: '__system__', name: 'y' });

    expectError(tenantPermission, 400, 'INVALID_REQUEST');
    expectError(none, 400, 'INVALID_REQUEST');
  });

  it('are no tenant keys on the runtime plane', async () => {
    const erin = await operator('erin', ['admin:read', 'admin:write']);
    const secret = erin.headers['x-admin-api-key'];

    const res = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: { 'x-cycles-api-key': secret },
      body: reserveBody(),
    });

    expectError(res, 401, 'UNAUTHORIZED');
  });

  it('are listed with the keys, under __system__', async () => {
    const frank = await operator('frank', ['admin:read']);

    const res = await request('GET', admin('/v1/admin/api-keys?tenant_id=__system__&limit=100'), {
      headers: adminHeaders,
    });

    expect((res.body.keys as Json[]).map((k) => k.key_id)).toContain(frank.keyId);
  });
});

// Issue 28's operations on the admin plane (refunds, the charges listing, estimate accuracy) in
// issue 27's permission model: a named credential needs the admin permission each names, as for
// the budget and reservation operations they sit beside.
describe('named operator credentials and the settlement extensions', () => {
  const api = reservationsApi(stack);
  const accuracyOf = (scope: string, headers: Record<string, string>) =>
    request(
      'GET',
      admin(`/v1/admin/budgets/accuracy?scope=${encodeURIComponent(scope)}&unit=USD_MICROCENTS`),
      { headers },
    );

  it('every admin-plane route names the operator permission a credential needs (introspection aside)', () => {
    const unnamed = Object.entries(routes).filter(
      ([id, r]) =>
        (r.auth.kind === 'admin' || r.auth.kind === 'tenantOrAdmin') &&
        !('operator' in r.auth && r.auth.operator) &&
        id !== 'adminIntrospectAuth',
    );

    expect(unnamed.map(([id]) => id)).toEqual([]);
  });

  it('refund a reservation and an event with admin:budgets:write, audited under their id and name', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const grace = await operator('grace', ['admin:budgets:write']);
    const r = await api.reserve(t, { estimate: usd(100) });
    await api.commit(t, r.body.reservation_id, { actual: usd(80) });
    const event = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers: t.headers,
      body: {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'tool', name: 'search' },
        actual: usd(40),
      },
    });

    const ofReservation = await request(
      'POST',
      admin(`/v1/reservations/${r.body.reservation_id}/refunds`),
      {
        headers: grace.headers,
        body: { idempotency_key: randomUUID(), amount: usd(30), reason: 'provider refund' },
      },
    );
    const ofEvent = await request('POST', admin(`/v1/events/${event.body.event_id}/refunds`), {
      headers: grace.headers,
      body: { idempotency_key: randomUUID(), amount: usd(10), reason: 'provider refund' },
    });
    const trail = await request(
      'GET',
      admin(`/v1/admin/audit/logs?tenant_id=${t.tenant}&key_id=${grace.keyId}`),
      { headers: adminHeaders },
    );

    expect(ofReservation.status, JSON.stringify(ofReservation.body)).toBe(200);
    expect(ofReservation.body.refunded_total).toEqual(usd(30));
    expect(ofEvent.status, JSON.stringify(ofEvent.body)).toBe(200);
    const operations = (trail.body.logs as Json[]).map((e) => e.operation).sort();
    expect(operations).toEqual(['refundEvent', 'refundReservation']);
    for (const entry of trail.body.logs as Json[]) {
      expect(entry.metadata).toMatchObject({ actor: grace.keyId, actor_name: 'grace' });
    }
  });

  it('are refused a refund, the charges and accuracy without the permission each needs', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const tenantsOnly = await operator('heidi', ['admin:tenants:read', 'admin:tenants:write']);
    const r = await api.reserve(t, { estimate: usd(100) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await api.charge(t, r.body.reservation_id, { amount: usd(20) });

    const refunded = await request(
      'POST',
      admin(`/v1/reservations/${r.body.reservation_id}/refunds`),
      {
        headers: tenantsOnly.headers,
        body: { idempotency_key: randomUUID(), amount: usd(5), reason: 'x' },
      },
    );
    const charges = await request(
      'GET',
      admin(`/v1/reservations/${r.body.reservation_id}/charges`),
      {
        headers: tenantsOnly.headers,
      },
    );
    const accuracy = await accuracyOf(scopeOf(t, ''), tenantsOnly.headers);

    expectError(refunded, 403, 'FORBIDDEN');
    expect(refunded.body.details).toEqual({ missing_permission: 'admin:budgets:write' });
    const delegations = await request(
      'GET',
      admin(`/v1/reservations/${r.body.reservation_id}/delegations`),
      { headers: tenantsOnly.headers },
    );
    const reader = await operator('heidi-reader', ['admin:read']);
    const readable = await request(
      'GET',
      admin(`/v1/reservations/${r.body.reservation_id}/delegations`),
      { headers: reader.headers },
    );

    expectError(charges, 403, 'FORBIDDEN');
    expect(charges.body.details).toEqual({ missing_permission: 'admin:read' });
    // Issue 29's delegations listing, as the charges listing: admin:read.
    expectError(delegations, 403, 'FORBIDDEN');
    expect(delegations.body.details).toEqual({ missing_permission: 'admin:read' });
    expect(readable.status, JSON.stringify(readable.body)).toBe(200);
    expectError(accuracy, 403, 'FORBIDDEN');
    expect(accuracy.body.details).toEqual({ missing_permission: 'admin:budgets:read' });
  });

  it('read the charges with admin:read and accuracy with admin:budgets:read; a tenant key with budgets:read reads its accuracy', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const reader = await operator('ivan', ['admin:read']);
    const budgetReader = await operator('judy', ['admin:budgets:read']);
    const tenantReader = await newKey({
      tenant_id: t.tenant,
      name: 'budget reader',
      permissions: ['budgets:read'],
    });
    const r = await api.reserve(t, { estimate: usd(100) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await api.charge(t, r.body.reservation_id, { amount: usd(20) });

    const charges = await request(
      'GET',
      admin(`/v1/reservations/${r.body.reservation_id}/charges`),
      {
        headers: reader.headers,
      },
    );
    const byOperator = await accuracyOf(scopeOf(t, ''), budgetReader.headers);
    const byTenant = await accuracyOf(scopeOf(t, ''), {
      'x-cycles-api-key': String(tenantReader.body.key_secret),
    });

    expect(charges.status, JSON.stringify(charges.body)).toBe(200);
    expect((charges.body.charges as Json[]).map((c) => c.amount)).toEqual([usd(20)]);
    expect(byOperator.status, JSON.stringify(byOperator.body)).toBe(200);
    expect(byTenant.status, JSON.stringify(byTenant.body)).toBe(200);
  });
});
