import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import { adminHeaders, givenTenant } from '../helpers/fixtures.js';
import { type Response, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// GET /v1/auth/introspect (issue 13, point 6) on both servers. Server time runs with real time;
// the expiry test moves it forward instead of waiting (the tests of this file run one at a time).
const clock = testClock();
const stack = useTestStack({ clock });

// The reference's AuthIntrospectResponse (cycles-governance-admin-v0.1.25.yaml), closed: clients
// validate it strictly, so an extra field, a null or a missing required flag fails the test.
const Flag = z.boolean();
const Capabilities = z.strictObject({
  view_overview: Flag,
  view_budgets: Flag,
  view_events: Flag,
  view_webhooks: Flag,
  view_audit: Flag,
  view_tenants: Flag,
  view_api_keys: Flag,
  view_policies: Flag,
  view_reservations: Flag.optional(),
  manage_budgets: Flag.optional(),
  manage_policies: Flag.optional(),
  manage_webhooks: Flag.optional(),
  manage_tenants: Flag.optional(),
  manage_api_keys: Flag.optional(),
  manage_reservations: Flag.optional(),
});
const AuthIntrospectResponse = z
  .strictObject({
    authenticated: z.boolean(),
    auth_type: z.enum(['admin', 'tenant']),
    permissions: z.array(z.string()),
    capabilities: Capabilities,
    tenant_id: z.string().optional(),
    scope_filter: z.array(z.string()).optional(),
  })
  // tenant_id: REQUIRED under auth_type=tenant, MUST be absent under admin.
  .refine((b) => (b.auth_type === 'tenant') === (b.tenant_id !== undefined), 'tenant_id');

/** Asserts a 200 whose body is the reference's schema, and returns the body. */
function expectIntrospection(res: Response) {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const parsed = AuthIntrospectResponse.safeParse(res.body);
  expect(parsed.error?.issues ?? [], JSON.stringify(res.body)).toEqual([]);
  return res.body;
}

const ALL = [
  'view_overview',
  'view_budgets',
  'view_events',
  'view_webhooks',
  'view_audit',
  'view_tenants',
  'view_api_keys',
  'view_policies',
  'view_reservations',
  'manage_budgets',
  'manage_policies',
  'manage_webhooks',
  'manage_tenants',
  'manage_api_keys',
  'manage_reservations',
] as const;
/** All fifteen flags: true for those named, false for the rest. */
const flags = (...trueOnes: (typeof ALL)[number][]) =>
  Object.fromEntries(ALL.map((c) => [c, trueOnes.includes(c)]));

const introspect = (server: 'runtime' | 'admin', headers: Record<string, string>) =>
  request('GET', `${server === 'runtime' ? stack.runtimeUrl : stack.adminUrl}/v1/auth/introspect`, {
    headers,
  });

describe('GET /v1/auth/introspect on the runtime server', () => {
  it('describes a tenant key: its tenant, permissions and derived capabilities, its id in X-Cycles-Key-Id', async () => {
    const t = await givenTenant(stack);

    const res = await introspect('runtime', t.headers);

    expect(expectIntrospection(res)).toEqual({
      authenticated: true,
      auth_type: 'tenant',
      permissions: [
        'reservations:create',
        'reservations:commit',
        'reservations:release',
        'reservations:extend',
        'reservations:list',
        'balances:read',
        'decide',
        'events:create',
        'budgets:write',
      ],
      // By the reference's table: SPEC's permissions grant no view_budgets (that is
      // budgets:read) and no view_events (events:read); the admin-plane flags stay false.
      capabilities: flags('view_reservations', 'manage_budgets', 'manage_reservations'),
      tenant_id: t.tenant,
    });
    expect(res.headers.get('x-cycles-key-id')).toBe(t.keyId);
    expect(res.headers.get('x-cycles-key-expires-at')).toBeNull();
    expect(res.headers.get('x-cycles-tenant')).toBe(t.tenant);
  });

  it('accepts the key in X-Cycles-API-Key, as the SDKs send it', async () => {
    const t = await givenTenant(stack, ['decide']);

    const res = await introspect('runtime', { 'x-cycles-api-key': t.key });

    expect(expectIntrospection(res)).toMatchObject({
      tenant_id: t.tenant,
      permissions: ['decide'],
    });
  });

  it.each([
    [['reservations:list'], ['view_reservations']],
    [['reservations:create'], ['view_reservations', 'manage_reservations']],
    [
      ['reservations:extend', 'balances:read'],
      ['view_reservations', 'manage_reservations'],
    ],
    [['balances:read', 'decide', 'events:create'], []],
    [['budgets:write'], ['manage_budgets']],
  ] as const)(
    'derives the capabilities of a key holding %j by the reference table',
    async (permissions, expected) => {
      const t = await givenTenant(stack, [...permissions]);

      const res = await introspect('runtime', t.headers);

      const body = expectIntrospection(res);
      expect(body.permissions).toEqual(permissions);
      expect(body.capabilities).toEqual(flags(...expected));
    },
  );

  it('gives an expiring key its expiry in X-Cycles-Key-Expires-At', async () => {
    const t = await givenTenant(stack);
    const expiresAt = new Date(clock.now() + 3_600_000).toISOString();
    const created = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: { tenant_id: t.tenant, name: 'hourly', permissions: ['decide'], expires_at: expiresAt },
    });

    const res = await introspect('runtime', {
      'x-service-api-key': String(created.body.key_secret),
    });

    expectIntrospection(res);
    expect(res.headers.get('x-cycles-key-id')).toBe(created.body.key_id);
    expect(res.headers.get('x-cycles-key-expires-at')).toBe(expiresAt);
  });

  it('answers 401 without a key, for an unknown key, and for the admin key', async () => {
    const missing = await introspect('runtime', {});
    const unknown = await introspect('runtime', { 'x-service-api-key': 'cyc_live_unknown' });
    const admin = await introspect('runtime', adminHeaders);

    expectError(missing, 401, 'UNAUTHORIZED', 'runtime');
    expectError(unknown, 401, 'UNAUTHORIZED', 'runtime');
    expectError(admin, 401, 'UNAUTHORIZED', 'runtime');
  });

  it('answers 401 once the key has expired', async () => {
    const t = await givenTenant(stack);
    const created = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: {
        tenant_id: t.tenant,
        name: 'short',
        expires_at: new Date(clock.now() + 1_500).toISOString(),
      },
    });
    const headers = { 'x-service-api-key': String(created.body.key_secret) };
    const before = await introspect('runtime', headers);
    clock.advance(1_700);

    const after = await introspect('runtime', headers);

    expect(before.status).toBe(200);
    expect(expectError(after, 401, 'UNAUTHORIZED', 'runtime').message).toContain('expired');
  });
});

describe('GET /v1/auth/introspect on the admin server', () => {
  it('describes the admin key: permissions ["*"], every capability, no tenant', async () => {
    const res = await introspect('admin', adminHeaders);

    expect(expectIntrospection(res)).toEqual({
      authenticated: true,
      auth_type: 'admin',
      permissions: ['*'],
      capabilities: flags(...ALL),
    });
    expect(res.headers.get('x-cycles-key-id')).toBeNull();
    expect(res.headers.get('x-cycles-tenant')).toBeNull();
  });

  it('describes a tenant key as the runtime server does', async () => {
    const t = await givenTenant(stack, ['reservations:list', 'budgets:write']);

    const admin = await introspect('admin', t.headers);
    const runtime = await introspect('runtime', t.headers);

    expect(expectIntrospection(admin)).toEqual({
      authenticated: true,
      auth_type: 'tenant',
      permissions: ['reservations:list', 'budgets:write'],
      capabilities: flags('view_reservations', 'manage_budgets'),
      tenant_id: t.tenant,
    });
    expect(admin.body).toEqual(runtime.body);
    expect(admin.headers.get('x-cycles-key-id')).toBe(t.keyId);
  });

  it('answers 401 without a key, for a wrong admin key and for an unknown tenant key', async () => {
    const missing = await introspect('admin', {});
    const wrongAdmin = await introspect('admin', { 'x-admin-api-key': 'wrong' });
    const unknown = await introspect('admin', { 'x-cycles-api-key': 'cyc_live_unknown' });

    expectError(missing, 401, 'UNAUTHORIZED', 'admin');
    expectError(wrongAdmin, 401, 'UNAUTHORIZED', 'admin');
    expectError(unknown, 401, 'UNAUTHORIZED', 'admin');
  });
});
