import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { SPEC_PERMISSIONS } from '../../functions/domain/permissions.js';
import { balanceAt } from '../helpers/balances.js';
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

const stack = useTestStack();
const rt = (path: string) => `${stack.runtimeUrl}${path}`;
const admin = (path: string) => `${stack.adminUrl}${path}`;

/** A request whose body is sent as given, answered as raw text: exact numbers stay visible. */
async function rawRequest(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
) {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) as Json };
}

/** Raw bytes on a socket: for request lines and headers no HTTP client would send. */
function rawHttp(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d: Buffer) => {
      out += d.toString();
    });
    socket.on('end', () => resolve(out));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy());
  });
}
const portOf = (url: string) => Number(new URL(url).port);

async function tenantWithBudget(): Promise<GivenTenant> {
  const t = await givenTenant(stack);
  await givenBudget(stack, t, '', 1_000_000);
  await givenBudget(stack, t, 'workspace:w', 1_000_000);
  return t;
}

// Values SPEC admits in metadata and metrics.custom that DynamoDB cannot store as given.
const EXACT =
  '{"trace_id":18446744073709551616,"tiny":1e-200,"":"empty key","__proto__":{"x":1},"list":[1,{"b":true}]}';

describe('metadata and metrics.custom: any JSON, exactly', () => {
  it('round-trips a 20-digit integer digit for digit, 1e-200, and keys "" and "__proto__" through create and GET', async () => {
    const t = await tenantWithBudget();
    const body = JSON.stringify(reserveBody()).replace(/}$/, `,"metadata":${EXACT}}`);

    const created = await rawRequest('POST', rt('/v1/reservations'), t.headers, body);
    const read = await rawRequest(
      'GET',
      rt(`/v1/reservations/${created.body.reservation_id}`),
      t.headers,
    );

    expect(created.status, created.text).toBe(200);
    expect(read.status, read.text).toBe(200);
    expect(read.text).toContain(`"metadata":${EXACT}`);
  });

  it('accepts the same values in commit metrics and metadata, extend metadata and events', async () => {
    const t = await tenantWithBudget();
    const created = await rawRequest(
      'POST',
      rt('/v1/reservations'),
      t.headers,
      JSON.stringify(reserveBody()),
    );
    const id = String(created.body.reservation_id);
    const withExact = (b: Json, fields: string) => JSON.stringify(b).replace(/}$/, `,${fields}}`);

    const extended = await rawRequest(
      'POST',
      rt(`/v1/reservations/${id}/extend`),
      t.headers,
      withExact({ idempotency_key: randomUUID(), extend_by_ms: 1_000 }, `"metadata":${EXACT}`),
    );
    const committed = await rawRequest(
      'POST',
      rt(`/v1/reservations/${id}/commit`),
      t.headers,
      withExact(
        { idempotency_key: randomUUID(), actual: usd(50) },
        `"metadata":${EXACT},"metrics":{"tokens_input":3,"custom":${EXACT}}`,
      ),
    );
    const event = await rawRequest(
      'POST',
      rt('/v1/events'),
      t.headers,
      withExact(
        {
          idempotency_key: randomUUID(),
          subject: { workspace: 'w' },
          action: { kind: 'tool', name: 'search' },
          actual: usd(5),
        },
        `"metadata":${EXACT},"metrics":{"custom":${EXACT}}`,
      ),
    );

    expect([extended.status, committed.status, event.status], committed.text).toEqual([
      200, 200, 201,
    ]);
  });

  it('answers 400 naming the field for nesting deeper than 32 levels, and for 10,000 levels', async () => {
    const t = await tenantWithBudget();
    const nest = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

    const deep = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: JSON.stringify(reserveBody()).replace(/}$/, `,"metadata":${nest(40)}}`),
    });
    const absurd = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: `{"metadata":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    });

    expect(expectError(deep, 400, 'INVALID_REQUEST').details?.field).toMatch(/^metadata(\.a)+$/);
    expectError(absurd, 400, 'INVALID_REQUEST');
  });

  it('refuses an amount beyond 2^53 − 1 with 400 naming the field, not a rounded hold', async () => {
    const t = await tenantWithBudget();
    const body = JSON.stringify(reserveBody()).replace('"amount":100', '"amount":9007199254740993');

    const res = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: body,
    });

    expect(expectError(res, 400, 'INVALID_REQUEST').message).toContain('estimate.amount');
  });
});

describe('well-formed Unicode', () => {
  it.each([
    [
      'an idempotency key',
      (b: string) => b.replace(/"idempotency_key":"[^"]+"/, '"idempotency_key":"\\ud800"'),
    ],
    ['an action name', (b: string) => b.replace('"model-x"', '"model\\udfff"')],
    ['a metadata key', (b: string) => b.replace(/}$/, ',"metadata":{"k\\ud800":1}}')],
  ])('answers 400 for a lone surrogate in %s', async (_what, mutate) => {
    const t = await tenantWithBudget();

    const res = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: mutate(JSON.stringify(reserveBody())),
    });

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('never lets two distinct keys collide: \\ud800 and \\udbff are both refused, neither is a replay', async () => {
    const t = await tenantWithBudget();
    const withKey = (k: string) =>
      JSON.stringify(reserveBody()).replace(
        /"idempotency_key":"[^"]+"/,
        `"idempotency_key":"${k}"`,
      );

    const first = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: withKey('\\ud800'),
    });
    const second = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: withKey('\\udbff'),
    });

    expectError(first, 400, 'INVALID_REQUEST');
    expectError(second, 400, 'INVALID_REQUEST');
    expect((await balanceAt(stack, t, '')).reserved).toEqual(usd(0));
  });
});

describe('malformed requests on the local servers', () => {
  it.each(['runtime', 'admin'] as const)(
    'answers a malformed request-target on the %s server with 400 and SPEC body',
    async (server) => {
      const port = portOf(server === 'runtime' ? stack.runtimeUrl : stack.adminUrl);

      const answer = await rawHttp(
        port,
        'GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );

      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"error":"INVALID_REQUEST"');
    },
  );

  it('answers a malformed header with 400 and SPEC body', async () => {
    const answer = await rawHttp(
      portOf(stack.runtimeUrl),
      'GET /actuator/health HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
    );

    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"error":"INVALID_REQUEST"');
  });

  it('answers a path with broken percent-encoding with 400', async () => {
    const t = await tenantWithBudget();

    const res = await request('GET', rt('/v1/reservations/rsv_%E0%A4%A'), { headers: t.headers });

    expectError(res, 400, 'INVALID_REQUEST');
  });
});

describe('pagination cursors', () => {
  it.each([
    'abc',
    'a.b',
    '.',
    'e30.e30',
    `${Buffer.from('{"p":"x"}').toString('base64url')}.forged`,
    `${Buffer.from('not json').toString('base64url')}.x`,
  ])('answers 400 for the cursor %s on both listings', async (cursor) => {
    const t = await tenantWithBudget();
    const q = `cursor=${encodeURIComponent(cursor)}`;

    const reservations = await request('GET', rt(`/v1/reservations?${q}`), { headers: t.headers });
    const balances = await request('GET', rt(`/v1/balances?tenant=${t.tenant}&${q}`), {
      headers: t.headers,
    });

    expectError(reservations, 400, 'INVALID_REQUEST');
    expectError(balances, 400, 'INVALID_REQUEST');
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
