import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { SPEC_PERMISSIONS } from '../../functions/domain/permissions.js';
import { balanceAt } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// Server time runs with real time; the key-expiry test moves it forward instead of waiting. The
// tests of this file run one at a time, so no other test sees the jump while it runs.
const clock = testClock();
const stack = useTestStack({ clock });

const admin = (path: string) => `${stack.adminUrl}${path}`;
/** POST to the admin server, with the admin key unless `headers` says otherwise. */
const post = (path: string, body: unknown, headers: Record<string, string> = adminHeaders) =>
  request('POST', admin(path), { headers, body });
const fundUrl = (scope: string, unit = 'USD_MICROCENTS') =>
  admin(`/v1/admin/budgets/${encodeURIComponent(scope)}/${unit}/fund`);

describe('POST /v1/admin/tenants', () => {
  it('creates a tenant and answers 201 with the tenant record', async () => {
    const id = `acme-${randomUUID().slice(0, 8)}`;

    const res = await post('/v1/admin/tenants', { tenant_id: id, name: 'Acme' });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      tenant_id: id,
      name: 'Acme',
      status: 'ACTIVE',
      created_at: expect.any(String),
    });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('refuses an existing id with 409 and the error body', async () => {
    const id = `dup-${randomUUID().slice(0, 8)}`;
    await post('/v1/admin/tenants', { tenant_id: id, name: 'A' });

    const res = await post('/v1/admin/tenants', { tenant_id: id, name: 'B' });

    expectError(res, 409, 'DUPLICATE_RESOURCE', 'admin');
  });

  it.each([
    [{ tenant_id: 'has space', name: 'x' }, 'tenant_id'],
    [{ tenant_id: 'a/b', name: 'x' }, 'tenant_id'],
    [{ tenant_id: 'x'.repeat(65), name: 'x' }, 'tenant_id'],
    [{ tenant_id: 'ok-id' }, 'name'],
    [{ tenant_id: 12, name: 'x' }, 'tenant_id'],
  ])('refuses %j with 400 naming %s', async (body, field) => {
    const res = await post('/v1/admin/tenants', body);

    expect(expectError(res, 400, 'INVALID_REQUEST', 'admin').message).toContain(field);
  });

  it('answers 401 without the admin key, or with a wrong one', async () => {
    const body = { tenant_id: 'nope', name: 'x' };

    const missing = await post('/v1/admin/tenants', body, {});
    const wrong = await post('/v1/admin/tenants', body, { 'x-admin-api-key': 'wrong' });

    expectError(missing, 401, 'UNAUTHORIZED', 'admin');
    expect(wrong.status).toBe(401);
  });

  it('does not accept a tenant API key in place of the admin key', async () => {
    const t = await givenTenant(stack);

    const res = await post(
      '/v1/admin/tenants',
      { tenant_id: 'x1', name: 'x' },
      { 'x-admin-api-key': t.key },
    );

    expect(res.status).toBe(401);
  });
});

describe('POST /v1/admin/api-keys', () => {
  it('issues a key whose secret is returned once, with a recognizable prefix', async () => {
    const t = await givenTenant(stack);

    const res = await post('/v1/admin/api-keys', {
      tenant_id: t.tenant,
      name: 'ci',
      description: 'for CI',
      permissions: ['decide', 'balances:read'],
    });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      key_id: expect.stringMatching(/^key_/),
      key_prefix: expect.stringMatching(/^cyc_live_/),
      key_secret: expect.stringMatching(/^cyc_live_[A-Za-z0-9_-]{32}$/),
      tenant_id: t.tenant,
      name: 'ci',
      description: 'for CI',
      permissions: ['decide', 'balances:read'],
      created_at: expect.any(String),
    });
    expect(String(res.body.key_secret).startsWith(String(res.body.key_prefix))).toBe(true);
  });

  it('gives every key a different secret', async () => {
    const t = await givenTenant(stack);
    const body = { tenant_id: t.tenant, name: 'k' };

    const a = await post('/v1/admin/api-keys', body);
    const b = await post('/v1/admin/api-keys', body);

    expect(a.body.key_secret).not.toBe(b.body.key_secret);
  });

  it('answers 404 for an unknown tenant', async () => {
    const res = await post('/v1/admin/api-keys', { tenant_id: 'no-such-tenant', name: 'k' });

    expectError(res, 404, 'NOT_FOUND', 'admin');
  });

  it('refuses an unknown permission with 400', async () => {
    const t = await givenTenant(stack);

    const res = await post('/v1/admin/api-keys', {
      tenant_id: t.tenant,
      name: 'k',
      permissions: ['reservations:create', 'admin:all'],
    });

    expect(expectError(res, 400, 'INVALID_REQUEST', 'admin').message).toContain('permissions');
  });

  it('keeps an optional expires_at, and refuses one in the past', async () => {
    const t = await givenTenant(stack);
    const future = new Date(Date.now() + 3_600_000).toISOString();

    const ok = await post('/v1/admin/api-keys', {
      tenant_id: t.tenant,
      name: 'k',
      expires_at: future,
    });
    const past = await post('/v1/admin/api-keys', {
      tenant_id: t.tenant,
      name: 'k',
      expires_at: '2020-01-01T00:00:00Z',
    });

    expect(ok.status).toBe(201);
    expect(ok.body.expires_at).toBe(future);
    expect(past.status).toBe(400);
  });
});

describe('POST /v1/auth/validate', () => {
  it('describes a valid key', async () => {
    const t = await givenTenant(stack, ['decide']);

    const res = await post('/v1/auth/validate', { key_secret: t.key });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      valid: true,
      tenant_id: t.tenant,
      key_id: t.keyId,
      permissions: ['decide'],
    });
  });

  it('answers valid: false for an unknown key', async () => {
    const res = await post('/v1/auth/validate', { key_secret: 'cyc_live_unknown' });

    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
  });

  it('needs the admin key', async () => {
    const res = await post('/v1/auth/validate', { key_secret: 'x' }, {});

    expect(res.status).toBe(401);
  });
});

describe('POST /v1/admin/budgets', () => {
  let t: GivenTenant;
  beforeAll(async () => {
    t = await givenTenant(stack);
  });

  it('creates a ledger whose allocation is spendable at once, with every Balance field', async () => {
    const scope = `tenant:${t.tenant}/workspace:prod`;

    const res = await post(
      '/v1/admin/budgets',
      {
        scope,
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 5000 },
        overdraft_limit: { unit: 'TOKENS', amount: 100 },
      },
      t.headers,
    );

    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      tenant_id: t.tenant,
      scope,
      scope_path: scope,
      unit: 'TOKENS',
      allocated: { unit: 'TOKENS', amount: 5000 },
      remaining: { unit: 'TOKENS', amount: 5000 },
      spent: { unit: 'TOKENS', amount: 0 },
      reserved: { unit: 'TOKENS', amount: 0 },
      debt: { unit: 'TOKENS', amount: 0 },
      overdraft_limit: { unit: 'TOKENS', amount: 100 },
      is_over_limit: false,
    });
  });

  it('refuses an existing (scope, unit) with 409, but takes another unit', async () => {
    await givenBudget(stack, t, 'app:dup', 10);

    const again = await post(
      '/v1/admin/budgets',
      {
        scope: `tenant:${t.tenant}/app:dup`,
        unit: 'USD_MICROCENTS',
        allocated: { unit: 'USD_MICROCENTS', amount: 1 },
      },
      t.headers,
    );
    const otherUnit = await givenBudget(stack, t, 'app:dup', 10, { unit: 'CREDITS' });

    expect(again.status).toBe(409);
    expect(otherUnit.unit).toBe('CREDITS');
  });

  it("answers 403 for another tenant's scope", async () => {
    const res = await post(
      '/v1/admin/budgets',
      {
        scope: 'tenant:someone-else',
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 1 },
      },
      t.headers,
    );

    expectError(res, 403, 'FORBIDDEN', 'admin');
  });

  it.each([
    'workspace:w',
    'tenant:T/app:a/workspace:w',
    'tenant:T/workspace:',
    'tenant:T/galaxy:far',
    'tenant:T/workspace:a b',
    'tenant:T//workspace:w',
  ])('refuses the malformed scope %s with 400', async (raw) => {
    const scope = raw.replace('T', t.tenant);

    const res = await post(
      '/v1/admin/budgets',
      { scope, unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 1 } },
      t.headers,
    );

    expectError(res, 400, 'INVALID_REQUEST', 'admin');
  });

  it.each([
    [{ unit: 'DOLLARS', allocated: { unit: 'DOLLARS', amount: 1 } }],
    [{ unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: -1 } }],
    [{ unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 1.5 } }],
    [{ unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 2 ** 53 } }],
    [{ unit: 'TOKENS', allocated: { unit: 'CREDITS', amount: 1 } }],
  ])('refuses invalid amounts or units %j with 400', async (fields) => {
    const res = await post(
      '/v1/admin/budgets',
      { scope: `tenant:${t.tenant}/agent:x`, ...fields },
      t.headers,
    );

    expect(res.status).toBe(400);
  });

  it('needs a key: 401 without one, 401 with a wrong admin key; the admin key creates any tenant’s', async () => {
    const body = {
      scope: `tenant:${t.tenant}`,
      unit: 'TOKENS',
      allocated: { unit: 'TOKENS', amount: 1 },
    };

    const none = await post('/v1/admin/budgets', body, {});
    const wrongAdmin = await post('/v1/admin/budgets', body, { 'x-admin-api-key': 'not-it' });
    const byAdmin = await post('/v1/admin/budgets', body);

    expect(none.status).toBe(401);
    expect(wrongAdmin.status).toBe(401);
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.tenant_id).toBe(t.tenant);
  });

  it('accepts X-Cycles-API-Key as an alias of X-Service-API-Key', async () => {
    const res = await post(
      '/v1/admin/budgets',
      {
        scope: `tenant:${t.tenant}/toolset:alias`,
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 1 },
      },
      { 'x-cycles-api-key': t.key },
    );

    expect(res.status).toBe(201);
  });
});

describe('POST /v1/admin/budgets/{scope}/{unit}/fund', () => {
  let t: GivenTenant;
  let scope: string;
  beforeAll(async () => {
    t = await givenTenant(stack);
    scope = `tenant:${t.tenant}/workspace:fund`;
    await givenBudget(stack, t, 'workspace:fund', 10_000_000);
  });

  const fund = (operation: string, amount: number, key = randomUUID(), extra = {}) =>
    request('POST', fundUrl(scope), {
      headers: t.headers,
      body: {
        operation,
        amount: { unit: 'USD_MICROCENTS', amount },
        idempotency_key: key,
        ...extra,
      },
    });

  it('CREDIT adds to the allocation (10M + 10M = 20M)', async () => {
    const res = await fund('CREDIT', 10_000_000);

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      operation: 'CREDIT',
      previous_allocated: { amount: 10_000_000 },
      new_allocated: { amount: 20_000_000 },
      previous_remaining: { amount: 10_000_000 },
      new_remaining: { amount: 20_000_000 },
      previous_debt: { amount: 0 },
      new_debt: { amount: 0 },
      balance: { allocated: { amount: 20_000_000 }, remaining: { amount: 20_000_000 } },
    });
  });

  it('replays the original response for the same key and payload, applied once', async () => {
    const key = randomUUID();

    const first = await fund('CREDIT', 5, key);
    const again = await fund('CREDIT', 5, key);

    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const after = await fund('CREDIT', 0);
    expect((after.body.previous_allocated as { amount: number }).amount).toBe(
      (first.body.new_allocated as { amount: number }).amount,
    );
  });

  it('answers 409 IDEMPOTENCY_MISMATCH for the same key with another payload', async () => {
    const key = randomUUID();
    await fund('CREDIT', 5, key);

    const res = await fund('CREDIT', 6, key);

    expectError(res, 409, 'IDEMPOTENCY_MISMATCH', 'admin');
  });

  it('RESET sets allocated and recomputes remaining = amount − reserved − spent − debt', async () => {
    const res = await fund('RESET', 1_000);

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      new_allocated: { amount: 1_000 },
      new_remaining: { amount: 1_000 },
    });
  });

  it('REPAY_DEBT with no debt credits the whole amount to the allocation', async () => {
    const before = await fund('CREDIT', 0);

    const res = await fund('REPAY_DEBT', 50);

    const allocated = (before.body.new_allocated as { amount: number }).amount;
    expect(res.body).toMatchObject({
      new_debt: { amount: 0 },
      new_allocated: { amount: allocated + 50 },
    });
  });

  it('answers 404 for an unknown ledger and 403 for another tenant', async () => {
    const unknown = await request('POST', fundUrl(`tenant:${t.tenant}/agent:none`), {
      headers: t.headers,
      body: {
        operation: 'CREDIT',
        amount: { unit: 'USD_MICROCENTS', amount: 1 },
        idempotency_key: 'k',
      },
    });
    const foreign = await request('POST', fundUrl('tenant:other'), {
      headers: t.headers,
      body: {
        operation: 'CREDIT',
        amount: { unit: 'USD_MICROCENTS', amount: 1 },
        idempotency_key: 'k',
      },
    });

    expect(unknown.status).toBe(404);
    expect(foreign.status).toBe(403);
  });

  it('refuses an unknown operation, a bad unit and a missing idempotency key with 400', async () => {
    const op = await fund('WITHDRAW', 1);
    const unit = await request('POST', fundUrl(scope, 'EUROS'), {
      headers: t.headers,
      body: {
        operation: 'CREDIT',
        amount: { unit: 'USD_MICROCENTS', amount: 1 },
        idempotency_key: 'k',
      },
    });
    const noKey = await request('POST', fundUrl(scope), {
      headers: t.headers,
      body: { operation: 'CREDIT', amount: { unit: 'USD_MICROCENTS', amount: 1 } },
    });

    expect([op.status, unit.status, noKey.status]).toEqual([400, 400, 400]);
  });

  it('loses no update under concurrent funding', async () => {
    const before = await fund('CREDIT', 0);

    const results = await Promise.all(Array.from({ length: 20 }, () => fund('CREDIT', 7)));

    expect(results.every((r) => r.status === 200)).toBe(true);
    const after = await fund('CREDIT', 0);
    const start = (before.body.new_allocated as { amount: number }).amount;
    expect((after.body.new_allocated as { amount: number }).amount).toBe(start + 140);
  });
});

describe('permissions', () => {
  it('answers 403 FORBIDDEN naming the missing permission', async () => {
    const t = await givenTenant(stack, ['decide']);

    const res = await request('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`, {
      headers: t.headers,
    });

    const error = expectError(res, 403, 'FORBIDDEN', 'runtime');
    expect(error.details).toMatchObject({ missing_permission: 'balances:read' });
  });

  it('answers 401 for an expired key', async () => {
    const t = await givenTenant(stack);
    const created = await post('/v1/admin/api-keys', {
      tenant_id: t.tenant,
      name: 'short',
      expires_at: new Date(clock.now() + 1_500).toISOString(),
    });
    clock.advance(1_700);

    const res = await request('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`, {
      headers: { 'x-service-api-key': String(created.body.key_secret) },
    });
    const validated = await post('/v1/auth/validate', { key_secret: created.body.key_secret });

    expect(res.status).toBe(401);
    expect(validated.body.valid).toBe(false);
  });
});

describe('budget writes need budgets:write', () => {
  const SPEC_EIGHT = [...SPEC_PERMISSIONS];
  const createBudget = (headers: Record<string, string>, scope: string) =>
    request('POST', admin('/v1/admin/budgets'), {
      headers,
      body: { scope, unit: 'USD_MICROCENTS', allocated: usd(1_000) },
    });
  const fundRoot = (headers: Record<string, string>, t: GivenTenant) =>
    request(
      'POST',
      admin(`/v1/admin/budgets/${encodeURIComponent(scopeOf(t, ''))}/USD_MICROCENTS/fund`),
      {
        headers,
        body: { operation: 'CREDIT', amount: usd(1_000_000), idempotency_key: randomUUID() },
      },
    );

  it.each([
    ['no permissions at all', []],
    ['only reservations:create', ['reservations:create']],
    ['seven of the eight', SPEC_EIGHT.slice(1)],
  ])(
    'refuses a key holding %s with 403 naming budgets:write, and changes nothing',
    async (_what, permissions) => {
      const t = await givenTenant(stack, permissions);
      const owner = await givenTenant(stack);
      await givenBudget(stack, owner, '', 500);

      const created = await createBudget(t.headers, scopeOf(t, ''));
      const funded = await fundRoot(t.headers, t);

      expect(expectError(created, 403, 'FORBIDDEN').details).toEqual({
        missing_permission: 'budgets:write',
      });
      expectError(funded, 403, 'FORBIDDEN');
    },
  );

  it.each([
    ['made without a permissions list', undefined],
    ["holding all eight of SPEC's permissions", SPEC_EIGHT],
    ['holding budgets:write', ['budgets:write']],
  ])('lets a key %s create and fund its budgets', async (_what, permissions) => {
    const t = await givenTenant(stack, permissions);

    const created = await createBudget(t.headers, scopeOf(t, ''));
    const funded = await fundRoot(t.headers, t);

    expect([created.status, funded.status]).toEqual([201, 200]);
  });

  it('lets the admin key create and fund any tenant’s budgets; 404 for a tenant that does not exist', async () => {
    const t = await givenTenant(stack);

    const created = await createBudget(adminHeaders, scopeOf(t, ''));
    const funded = await fundRoot(adminHeaders, t);
    const noTenant = await createBudget(adminHeaders, 'tenant:no-such-tenant');

    expect([created.status, funded.status]).toEqual([201, 200]);
    expect(created.body.tenant_id).toBe(t.tenant);
    expectError(noTenant, 404, 'NOT_FOUND');
  });

  it('writes an audit record with actor, request id, before and after in the same transaction as each change', async () => {
    const t = await givenTenant(stack);
    const created = await createBudget(t.headers, scopeOf(t, ''));
    const funded = await fundRoot(adminHeaders, t);
    const { documentClient, tableName } = await import('../../functions/store/client.js');

    const { Items: all = [] } = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `AUDIT#${t.tenant}` },
        ConsistentRead: true,
      }),
    );
    // The tenant's and its key's creation are in its trail too (control-plane.test.ts).
    const Items = all.filter((item) => String(item.action).startsWith('budget.'));

    expect(Items).toHaveLength(2);
    expect(Items[0]).toMatchObject({
      action: 'budget.create',
      actor: t.keyId,
      request_id: created.headers.get('x-request-id'),
      resource_id: `${scopeOf(t, '')}#USD_MICROCENTS`,
      after: { allocated: 1_000, remaining: 1_000 },
    });
    expect(Items[0]?.before).toBeUndefined();
    expect(Items[1]).toMatchObject({
      action: 'budget.fund',
      actor: 'admin',
      request_id: funded.headers.get('x-request-id'),
      before: { allocated: 1_000 },
      after: { allocated: 1_001_000 },
      detail: { operation: 'CREDIT', amount: 1_000_000 },
    });
  });
});

describe('POST /v1/admin/budgets/{scope}/{unit}/fund on a nested scope', () => {
  const body = () => ({ operation: 'CREDIT', amount: usd(10), idempotency_key: randomUUID() });

  it('funds a three-level scope given percent-encoded, or as API Gateway delivers it (decoded)', async () => {
    const t = await givenTenant(stack);
    for (const rel of ['', 'workspace:prod', 'workspace:prod/agent:summarizer'])
      await givenBudget(stack, t, rel, 100);
    const scope = scopeOf(t, 'workspace:prod/agent:summarizer');

    const encoded = await request(
      'POST',
      admin(`/v1/admin/budgets/${encodeURIComponent(scope)}/USD_MICROCENTS/fund`),
      {
        headers: t.headers,
        body: body(),
      },
    );
    const decoded = await request('POST', admin(`/v1/admin/budgets/${scope}/USD_MICROCENTS/fund`), {
      headers: t.headers,
      body: body(),
    });

    expect([encoded.status, decoded.status], JSON.stringify(decoded.body)).toEqual([200, 200]);
    expect(decoded.body.scope).toBe(scope);
    expect((await balanceAt(stack, t, 'workspace:prod/agent:summarizer')).allocated).toEqual(
      usd(120),
    );
  });

  it('answers 404 for a path under /v1/admin/budgets/ that is not <scope>/<unit>/fund, 400 for an unknown unit', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100);

    const notFund = await request(
      'POST',
      admin(`/v1/admin/budgets/${scopeOf(t, '')}/USD_MICROCENTS`),
      {
        headers: t.headers,
        body: body(),
      },
    );
    const badUnit = await request('POST', admin(`/v1/admin/budgets/${scopeOf(t, '')}/EUR/fund`), {
      headers: t.headers,
      body: body(),
    });

    expectError(notFund, 404, 'NOT_FOUND', 'admin');
    expectError(badUnit, 400, 'INVALID_REQUEST', 'admin');
  });
});
