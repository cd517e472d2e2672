import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amountOf, balanceAt, balancesOf, expectBalance, ledgerKey } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import {
  errorOf,
  type Json,
  portOf,
  type Response,
  rawHttp,
  rawRequest,
  request,
} from '../helpers/http.js';
import { withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack({ env: { API_KEY_CACHE_TTL_MS: '5000' } });

const rt = (path: string) => `${stack.runtimeUrl}${path}`;
const admin = (path: string) => `${stack.adminUrl}${path}`;

const SERVERS = ['runtime', 'admin'] as const;
const urlOf = (server: 'runtime' | 'admin', path: string) =>
  server === 'runtime' ? rt(path) : admin(path);

describe('GET /actuator/health', () => {
  it.each(SERVERS)(
    'answers 200 {"status":"UP"} on the %s server without any key',
    async (server) => {
      const res = await request('GET', urlOf(server, '/actuator/health'));

      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'UP' });
      expect(res.headers.get('x-request-id')).toMatch(/\S/);
    },
  );
});

describe('unknown paths', () => {
  it.each([
    ['runtime', 'GET', '/nope'],
    ['runtime', 'POST', '/v1/unknown'],
    ['runtime', 'GET', '/v1/reservations/a/b/c'],
    ['admin', 'GET', '/nope'],
    ['admin', 'POST', '/v1/admin/unknown'],
    // The admin server answers only the two reservation routes the console calls.
    ['admin', 'GET', '/v1/balances'],
    ['admin', 'POST', '/v1/reservations/r/commit'],
    // The fund route's greedy path answers `<scope>/<unit>/fund` only.
    ['admin', 'GET', '/v1/admin/budgets/not-a-budget'],
  ] as const)(
    'answer 404 NOT_FOUND with the error body on the %s server (%s %s)',
    async (server, method, path) => {
      const res = await request(method, urlOf(server, path));

      expectError(res, 404, 'NOT_FOUND', server);
    },
  );
});

describe('known paths asked with another method', () => {
  it.each([
    ['runtime', 'DELETE', '/v1/reservations', 'GET, HEAD, POST'],
    ['runtime', 'PATCH', '/v1/reservations/r/commit', 'POST'],
    ['admin', 'POST', '/v1/reservations', 'GET, HEAD'],
    ['admin', 'DELETE', '/v1/admin/tenants', 'GET, HEAD, POST'],
    ['admin', 'PUT', '/v1/admin/api-keys/key_1', 'DELETE, GET, HEAD, PATCH'],
    ['admin', 'GET', '/v1/admin/budgets/tenant:t/USD_MICROCENTS/fund', 'POST'],
  ] as const)(
    'answer 405 with Allow on the %s server (%s %s)',
    async (server, method, path, allow) => {
      const res = await request(method, urlOf(server, path));

      expectError(res, 400 + 5, 'INVALID_REQUEST');
      expect(res.headers.get('allow')).toBe(allow);
    },
  );
});

describe('X-Request-Id', () => {
  it('is on every response, success or error, on both servers, and unique per request', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 1_000);

    const responses = await Promise.all([
      request('GET', rt('/actuator/health')),
      request('GET', rt('/actuator/health')),
      request('GET', admin('/actuator/health')),
      request('GET', admin('/actuator/health')),
      request('GET', rt('/nope')),
      request('GET', admin('/nope')),
      request('GET', rt('/v1/balances?workspace=w'), { headers: t.headers }),
      request('GET', rt('/v1/balances?workspace=w')),
      request('POST', rt('/v1/reservations'), { headers: t.headers, body: reserveBody() }),
      request('POST', rt('/v1/reservations'), { headers: t.headers, body: {} }),
      request('POST', rt('/v1/reservations'), {
        headers: t.headers,
        body: reserveBody({ estimate: usd(5_000) }),
      }),
      request('POST', admin('/v1/admin/tenants'), { body: { tenant_id: 'x', name: 'x' } }),
      request('POST', admin('/v1/auth/validate'), {
        headers: adminHeaders,
        body: { key_secret: t.key },
      }),
    ]);

    const ids = responses.map((r) => r.headers.get('x-request-id'));
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(responses.map((r) => r.status)).toEqual([
      200, 200, 200, 200, 404, 404, 200, 401, 200, 400, 409, 401, 200,
    ]);
  });
});

describe('request bodies', () => {
  let t: GivenTenant;
  let reservationId: string;
  beforeAll(async () => {
    t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const created = await request('POST', rt('/v1/reservations'), {
      headers: t.headers,
      body: reserveBody(),
    });
    reservationId = String(created.body.reservation_id);
  });

  /** Every POST route of both servers, with the headers it authenticates with. */
  const posts = () =>
    [
      ['runtime', '/v1/reservations', t.headers],
      ['runtime', `/v1/reservations/${reservationId}/commit`, t.headers],
      ['runtime', `/v1/reservations/${reservationId}/release`, t.headers],
      ['runtime', `/v1/reservations/${reservationId}/extend`, t.headers],
      ['runtime', '/v1/decide', t.headers],
      ['runtime', '/v1/events', t.headers],
      ['admin', '/v1/admin/tenants', adminHeaders],
      ['admin', '/v1/admin/api-keys', adminHeaders],
      ['admin', '/v1/admin/budgets', t.headers],
      [
        'admin',
        `/v1/admin/budgets/${encodeURIComponent(`tenant:${t.tenant}`)}/USD_MICROCENTS/fund`,
        t.headers,
      ],
      ['admin', '/v1/auth/validate', adminHeaders],
    ] as const;

  it('refuses malformed JSON with 400 INVALID_REQUEST on every POST route', async () => {
    for (const [server, path, headers] of posts()) {
      for (const raw of ['{"idempotency_key": ', '{bad}', 'null', '[1,2]', '']) {
        const res = await request('POST', urlOf(server, path), {
          headers: { ...headers, 'content-type': 'application/json' },
          raw,
        });

        expect(res.status, `${path} ${raw}`).toBe(400);
        expectError(res, 400, 'INVALID_REQUEST', server);
      }
    }
  });

  it('refuses a text/plain body with 400 naming the content type, on every POST route', async () => {
    for (const [server, path, headers] of posts()) {
      const res = await request('POST', urlOf(server, path), {
        headers: { ...headers, 'content-type': 'text/plain' },
        raw: JSON.stringify(reserveBody()),
      });

      expectError(res, 400, 'INVALID_REQUEST', server);
      expect(String(res.body.message).toLowerCase()).toContain('content-type');
    }
  });

  it('accepts application/json with a charset', async () => {
    const res = await request('POST', rt('/v1/decide'), {
      headers: { ...t.headers, 'content-type': 'application/json; charset=utf-8' },
      raw: JSON.stringify(reserveBody()),
    });

    expect(res.status).toBe(200);
  });

  it.each([
    [
      'runtime',
      '/v1/reservations',
      { estimate: { unit: 'USD_MICROCENTS', amount: '10' } },
      'estimate.amount',
    ],
    ['runtime', '/v1/reservations', { subject: { workspace: 5 } }, 'subject.workspace'],
    ['runtime', '/v1/reservations', { ttl_ms: '60000' }, 'ttl_ms'],
    ['runtime', '/v1/reservations', { dry_run: 'true' }, 'dry_run'],
    ['runtime', '/v1/decide', { action: { kind: 1, name: 'n' } }, 'action.kind'],
  ] as const)(
    'names the field of a wrong type in the 400 message (%s %s %j)',
    async (server, path, overrides, field) => {
      const res = await request('POST', urlOf(server, path), {
        headers: t.headers,
        body: reserveBody(overrides),
      });

      expectError(res, 400, 'INVALID_REQUEST', server);
      expect(res.body.message).toContain(field);
    },
  );

  it('names allocated.amount in the 400 message on the admin server', async () => {
    const res = await request('POST', admin('/v1/admin/budgets'), {
      headers: t.headers,
      body: {
        scope: `tenant:${t.tenant}/app:typed`,
        unit: 'USD_MICROCENTS',
        allocated: { unit: 'USD_MICROCENTS', amount: '10' },
      },
    });

    expectError(res, 400, 'INVALID_REQUEST', 'admin');
    expect(res.body.message).toContain('allocated.amount');
  });

  /** A body padded to exactly `bytes` bytes of JSON. */
  function padded(base: Json, field: string, bytes: number): string {
    const empty = JSON.stringify({ ...base, [field]: '' });
    return JSON.stringify({ ...base, [field]: 'x'.repeat(bytes - Buffer.byteLength(empty)) });
  }
  const bigBodies = () =>
    [
      [
        'runtime',
        '/v1/reservations',
        t.headers,
        (n: number) => padded(reserveBody({ dry_run: true }), 'pad', n),
      ],
      [
        'runtime',
        '/v1/events',
        t.headers,
        (n: number) => padded({ ...reserveBody(), estimate: undefined, actual: usd(0) }, 'pad', n),
      ],
      [
        'admin',
        '/v1/admin/tenants',
        adminHeaders,
        (n: number) =>
          padded({ tenant_id: `big-${randomUUID().slice(0, 8)}`, name: 'Big' }, 'pad', n),
      ],
    ] as const;

  it('refuses a body over 65536 bytes with 400 INVALID_REQUEST and the error body, on both servers', async () => {
    for (const [server, path, headers, body] of bigBodies()) {
      const res = await request('POST', urlOf(server, path), {
        headers: { ...headers, 'content-type': 'application/json' },
        raw: body(65_537),
      });

      expectError(res, 400, 'INVALID_REQUEST', server);
    }
  });

  it('accepts a body of exactly 65536 bytes', async () => {
    for (const [server, path, headers, body] of bigBodies()) {
      const raw = body(65_536);
      expect(Buffer.byteLength(raw)).toBe(65_536);

      const res = await request('POST', urlOf(server, path), {
        headers: { ...headers, 'content-type': 'application/json' },
        raw,
      });

      expect(res.status, path).toBe(path === '/v1/reservations' ? 200 : 201);
    }
  });

  it('refuses a body over 1 MiB with the error body, and the next requests still work', async () => {
    const status = (res: Promise<Response>) =>
      res.then(
        (r) => r.status,
        (e: unknown) => `failed: ${String((e as Error).cause ?? e)}`,
      );

    const res = await request('POST', rt('/v1/reservations'), {
      headers: t.headers,
      body: reserveBody({ metadata: { pad: 'x'.repeat(2_000_000) } }),
    });
    const next: (number | string)[] = [];
    for (let i = 0; i < 5; i++) next.push(await status(request('GET', rt('/actuator/health'))));

    expectError(res, 400, 'INVALID_REQUEST', 'runtime');
    expect(next).toEqual([200, 200, 200, 200, 200]);
  });
});

describe('authentication', () => {
  const runtimeRoutes = (id: string) =>
    [
      ['POST', '/v1/reservations', reserveBody()],
      ['GET', '/v1/reservations', undefined],
      ['GET', `/v1/reservations/${id}`, undefined],
      ['POST', `/v1/reservations/${id}/commit`, { idempotency_key: 'k', actual: usd(1) }],
      ['POST', `/v1/reservations/${id}/release`, { idempotency_key: 'k' }],
      ['POST', `/v1/reservations/${id}/extend`, { idempotency_key: 'k', extend_by_ms: 1_000 }],
      ['POST', '/v1/decide', reserveBody()],
      ['GET', '/v1/balances?workspace=w', undefined],
      ['POST', '/v1/events', { ...reserveBody(), actual: usd(1) }],
    ] as const;

  it.each([
    ['no key', {}],
    ['an unknown key', { 'x-service-api-key': 'cyc_live_0000000000000000000000000000000' }],
    ['an empty key', { 'x-service-api-key': '' }],
    ['the admin key', { 'x-admin-api-key': 'test-admin-key' }],
  ])('every runtime route answers 401 UNAUTHORIZED with %s', async (_what, headers) => {
    for (const [method, path, body] of runtimeRoutes(`rsv_${'0'.repeat(32)}`)) {
      const res = await request(method, rt(path), { headers, ...(body && { body }) });
      if ('x-admin-api-key' in headers && path.endsWith('/release')) {
        // The operator's force-release: the admin key gets through (and finds nothing here).
        expectError(res, 404, 'NOT_FOUND', 'runtime');
        continue;
      }
      if ('x-admin-api-key' in headers && method === 'GET' && path === '/v1/reservations') {
        // The operator's listing (the console's): the admin key gets through, and must name
        // the tenant.
        expectError(res, 400, 'INVALID_REQUEST', 'runtime');
        continue;
      }

      expect(res.status, `${method} ${path}`).toBe(401);
      expectError(res, 401, 'UNAUTHORIZED', 'runtime');
    }
  });

  it('admin routes answer 401 without their key', async () => {
    const results = await Promise.all([
      request('POST', admin('/v1/admin/tenants'), { body: { tenant_id: 'x', name: 'x' } }),
      request('POST', admin('/v1/admin/api-keys'), { body: { tenant_id: 'x', name: 'x' } }),
      request('POST', admin('/v1/auth/validate'), { body: { key_secret: 'x' } }),
      request('POST', admin('/v1/admin/budgets'), {
        body: { scope: 'tenant:x', unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 1 } },
      }),
    ]);

    for (const res of results) expectError(res, 401, 'UNAUTHORIZED', 'admin');
  });
});

describe('error bodies', () => {
  it('are exactly { error, message, request_id, details? } with a SPEC code and its status', async () => {
    const t = await givenTenant(stack);
    const other = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 1_000);
    const id = String(
      (await request('POST', rt('/v1/reservations'), { headers: t.headers, body: reserveBody() }))
        .body.reservation_id,
    );
    await request('POST', rt(`/v1/reservations/${id}/commit`), {
      headers: t.headers,
      body: { idempotency_key: 'c1', actual: usd(10) },
    });
    const decideKey = randomUUID();
    await request('POST', rt('/v1/decide'), {
      headers: t.headers,
      body: reserveBody({ idempotency_key: decideKey }),
    });
    const tenantId = `dup-${randomUUID().slice(0, 8)}`;
    await request('POST', admin('/v1/admin/tenants'), {
      headers: adminHeaders,
      body: { tenant_id: tenantId, name: 'x' },
    });

    const cases: [Promise<Response>, number, string, 'runtime' | 'admin'][] = [
      [
        request('POST', rt('/v1/reservations'), { headers: t.headers, body: {} }),
        400,
        'INVALID_REQUEST',
        'runtime',
      ],
      [
        request('GET', rt('/v1/balances'), { headers: t.headers }),
        400,
        'INVALID_REQUEST',
        'runtime',
      ],
      [
        request('GET', rt(`/v1/balances?tenant=${other.tenant}`), { headers: t.headers }),
        403,
        'FORBIDDEN',
        'runtime',
      ],
      [
        request('GET', rt(`/v1/reservations/${id}`), { headers: other.headers }),
        403,
        'FORBIDDEN',
        'runtime',
      ],
      [
        request('GET', rt(`/v1/reservations/rsv_${'f'.repeat(32)}`), { headers: t.headers }),
        404,
        'NOT_FOUND',
        'runtime',
      ],
      [
        request('POST', rt('/v1/reservations'), {
          headers: t.headers,
          body: reserveBody({ estimate: usd(5_000) }),
        }),
        409,
        'BUDGET_EXCEEDED',
        'runtime',
      ],
      [
        request('POST', rt('/v1/decide'), {
          headers: t.headers,
          body: reserveBody({ idempotency_key: decideKey, estimate: usd(7) }),
        }),
        409,
        'IDEMPOTENCY_MISMATCH',
        'runtime',
      ],
      [
        request('POST', rt(`/v1/reservations/${id}/release`), {
          headers: t.headers,
          body: { idempotency_key: 'r1' },
        }),
        409,
        'RESERVATION_FINALIZED',
        'runtime',
      ],
      [
        request('POST', rt(`/v1/reservations/${id}/commit`), {
          headers: t.headers,
          body: { idempotency_key: 'c2', actual: { unit: 'TOKENS', amount: 1 } },
        }),
        409,
        'RESERVATION_FINALIZED',
        'runtime',
      ],
      [
        request('POST', rt('/v1/events'), {
          headers: t.headers,
          body: { ...reserveBody(), actual: { unit: 'TOKENS', amount: 1 } },
        }),
        400,
        'UNIT_MISMATCH',
        'runtime',
      ],
      [
        request('POST', admin('/v1/admin/tenants'), {
          headers: adminHeaders,
          body: { tenant_id: 'bad id', name: 'x' },
        }),
        400,
        'INVALID_REQUEST',
        'admin',
      ],
      [
        request('POST', admin('/v1/admin/tenants'), {
          headers: adminHeaders,
          body: { tenant_id: tenantId, name: 'x' },
        }),
        409,
        'DUPLICATE_RESOURCE',
        'admin',
      ],
      [
        request('POST', admin('/v1/admin/api-keys'), {
          headers: adminHeaders,
          body: { tenant_id: `none-${randomUUID().slice(0, 8)}`, name: 'x' },
        }),
        404,
        'NOT_FOUND',
        'admin',
      ],
      [
        request('POST', admin('/v1/admin/budgets'), {
          headers: t.headers,
          body: {
            scope: `tenant:${other.tenant}`,
            unit: 'TOKENS',
            allocated: { unit: 'TOKENS', amount: 1 },
          },
        }),
        403,
        'FORBIDDEN',
        'admin',
      ],
    ];

    const responses = await Promise.all(cases.map(([res]) => res));

    responses.forEach((res, i) => {
      const [, status, code, server] = cases[i] ?? [];
      expectError(res, status ?? 0, code ?? '', server ?? 'runtime');
    });
    const ids = responses.map((r) => r.body.request_id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('tenant headers on refusals', () => {
  it('are on authenticated runtime error responses too', async () => {
    const t = await givenTenant(stack);

    const responses = await Promise.all([
      request('POST', rt('/v1/reservations'), { headers: t.headers, body: reserveBody() }),
      request('POST', rt('/v1/reservations'), { headers: t.headers, body: {} }),
      request('GET', rt(`/v1/reservations/rsv_${'0'.repeat(32)}`), { headers: t.headers }),
    ]);

    expect(responses.map((r) => r.status)).toEqual([409, 400, 404]);
    for (const res of responses) {
      expect(res.headers.get('x-service-tenant')).toBe(t.tenant);
      expect(res.headers.get('x-cycles-tenant')).toBe(t.tenant);
    }
  });
});

describe('an unexpected failure (500)', () => {
  type Phase = 'before' | 'after';
  let armed: Phase | undefined;

  /**
   * Fails TransactWriteItems: 'before' throws before the request is sent; 'after' lets the
   * write commit and throws on the way back (a lost response). Removed by the returned function.
   */
  async function injectFault(): Promise<() => void> {
    const { documentClient } = await import('../../functions/store/client.js');
    documentClient.middlewareStack.add(
      (next, ctx) => async (args) => {
        const fault = ctx.commandName === 'TransactWriteItemsCommand' ? armed : undefined;
        if (fault === 'before') throw new Error('boom: table secret-table-name exploded');
        const out = await next(args);
        if (fault === 'after') throw new Error('boom: connection reset after commit');
        return out;
      },
      { step: 'initialize', name: 'boom' },
    );
    return () => {
      documentClient.middlewareStack.remove('boom');
    };
  }

  function expectGeneric500(res: Response) {
    expectError(res, 500, 'INTERNAL_ERROR', 'runtime');
    expect(Object.keys(res.body).sort()).toEqual(['error', 'message', 'request_id']);
    const text = JSON.stringify(res.body);
    expect(text).not.toMatch(/boom|secret-table-name|at .*\.ts|Error:/);
  }

  /** How far each counter of one ledger moved between two snapshots (NaN where it is absent). */
  const moved = (before: Map<string, Json>, after: Map<string, Json>, key: string) => {
    const amount = (m: Map<string, Json>, f: string) =>
      (m.get(key)?.[f] as { amount?: number } | undefined)?.amount ?? Number.NaN;
    const fields = ['allocated', 'spent', 'reserved', 'debt', 'remaining'];
    return Object.fromEntries(fields.map((f) => [f, amount(after, f) - amount(before, f)]));
  };
  const workspaceKey = () => ledgerKey(t, 'workspace:w');

  let t: GivenTenant;
  let removeFault: () => void;
  beforeAll(async () => {
    t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    removeFault = await injectFault();
  });
  afterAll(() => {
    armed = undefined;
    removeFault();
  });

  /** Runs `send` with the fault armed, then disarmed. */
  async function withFault<T>(phase: Phase, send: () => Promise<T>): Promise<T> {
    armed = phase;
    try {
      return await send();
    } finally {
      armed = undefined;
    }
  }

  it('on create leaves nothing half-written, and a retry with the same key succeeds once', async () => {
    const body = reserveBody({ estimate: usd(700) });
    const before = await balancesOf(stack, t);

    const failed = await withFault('before', () =>
      request('POST', rt('/v1/reservations'), { headers: t.headers, body }),
    );
    const afterFailure = await balancesOf(stack, t);
    const listed = await request(
      'GET',
      rt(`/v1/reservations?idempotency_key=${body.idempotency_key}`),
      {
        headers: t.headers,
      },
    );
    const retried = await request('POST', rt('/v1/reservations'), { headers: t.headers, body });
    const replayed = await request('POST', rt('/v1/reservations'), { headers: t.headers, body });

    expectGeneric500(failed);
    expect(afterFailure).toEqual(before);
    expect(listed.body.reservations).toEqual([]);
    expect(retried.status).toBe(200);
    expect(withoutLease(replayed.body)).toEqual(withoutLease(retried.body));
    expect(moved(before, await balancesOf(stack, t), workspaceKey())).toMatchObject({
      reserved: 700,
    });
  });

  it('on commit leaves the reservation ACTIVE and the ledgers untouched; the retry commits once', async () => {
    const id = String(
      (
        await request('POST', rt('/v1/reservations'), {
          headers: t.headers,
          body: reserveBody({ estimate: usd(500) }),
        })
      ).body.reservation_id,
    );
    const body = { idempotency_key: randomUUID(), actual: usd(320) };
    const before = await balancesOf(stack, t);
    const commitUrl = rt(`/v1/reservations/${id}/commit`);

    const failed = await withFault('before', () =>
      request('POST', commitUrl, { headers: t.headers, body }),
    );
    const afterFailure = await balancesOf(stack, t);
    const state = await request('GET', rt(`/v1/reservations/${id}`), { headers: t.headers });
    const retried = await request('POST', commitUrl, { headers: t.headers, body });
    const replayed = await request('POST', commitUrl, { headers: t.headers, body });

    expectGeneric500(failed);
    expect(afterFailure).toEqual(before);
    expect(state.body.status).toBe('ACTIVE');
    expect(retried.status).toBe(200);
    expect(withoutLease(replayed.body)).toEqual(withoutLease(retried.body));
    expect(moved(before, await balancesOf(stack, t), workspaceKey())).toMatchObject({
      spent: 320,
      reserved: -500,
    });
  });

  it('on an event leaves the ledgers untouched; the retry applies it once', async () => {
    const body = { ...reserveBody(), estimate: undefined, actual: usd(250) };
    const before = await balancesOf(stack, t);

    const failed = await withFault('before', () =>
      request('POST', rt('/v1/events'), { headers: t.headers, body }),
    );
    const afterFailure = await balancesOf(stack, t);
    const retried = await request('POST', rt('/v1/events'), { headers: t.headers, body });
    const replayed = await request('POST', rt('/v1/events'), { headers: t.headers, body });

    expectGeneric500(failed);
    expect(afterFailure).toEqual(before);
    expect(retried.status).toBe(201);
    expect(withoutLease(replayed.body)).toEqual(withoutLease(retried.body));
    expect(moved(before, await balancesOf(stack, t), ledgerKey(t, ''))).toMatchObject({
      spent: 250,
    });
  });

  it.each([
    [
      'a reservation',
      '/v1/reservations',
      () => reserveBody({ estimate: usd(90) }),
      200,
      'reserved',
      90,
    ],
    ['an event', '/v1/events', () => ({ ...reserveBody(), actual: usd(40) }), 201, 'spent', 40],
  ] as const)(
    'after a lost response to %s, the retry returns the original result and applies it once',
    async (_what, path, makeBody, status, field, amount) => {
      const body = makeBody();
      const before = await balancesOf(stack, t);

      const failed = await withFault('after', () =>
        request('POST', rt(path), { headers: t.headers, body }),
      );
      const retried = await request('POST', rt(path), { headers: t.headers, body });
      const again = await request('POST', rt(path), { headers: t.headers, body });

      expectGeneric500(failed);
      expect(retried.status).toBe(status);
      expect(withoutLease(again.body)).toEqual(withoutLease(retried.body));
      expect(moved(before, await balancesOf(stack, t), workspaceKey())).toMatchObject({
        [field]: amount,
      });
    },
  );

  it('after a lost response to a commit, the retry returns the original result and charges once', async () => {
    const created = await request('POST', rt('/v1/reservations'), {
      headers: t.headers,
      body: reserveBody({ estimate: usd(300) }),
    });
    const commitUrl = rt(`/v1/reservations/${created.body.reservation_id}/commit`);
    const body = { idempotency_key: randomUUID(), actual: usd(120) };
    const before = await balancesOf(stack, t);

    const failed = await withFault('after', () =>
      request('POST', commitUrl, { headers: t.headers, body }),
    );
    const retried = await request('POST', commitUrl, { headers: t.headers, body });
    const again = await request('POST', commitUrl, { headers: t.headers, body });

    expectGeneric500(failed);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({
      status: 'COMMITTED',
      charged: usd(120),
      released: usd(180),
    });
    expect(again.body).toEqual(retried.body);
    expect(moved(before, await balancesOf(stack, t), workspaceKey())).toMatchObject({
      spent: 120,
      reserved: -300,
    });
  });
});

describe('fuzzing POST /v1/reservations', () => {
  it('answers any body and header mix with a success or a 4xx SPEC error, never a 5xx, ledgers consistent', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100_000);
    await givenBudget(stack, t, 'workspace:w', 50_000);
    const field = <T>(valid: fc.Arbitrary<T>) =>
      fc.oneof(
        { weight: 4, arbitrary: valid },
        { weight: 1, arbitrary: fc.jsonValue() },
        { weight: 1, arbitrary: fc.constant(undefined) },
      );
    const bodies = fc.record({
      idempotency_key: field(fc.uuid()),
      subject: field(
        fc.record(
          {
            workspace: fc.constantFrom('w', 'x', 'a b', ''),
            dimensions: fc.dictionary(fc.string(), fc.string()),
          },
          { requiredKeys: ['workspace'] },
        ),
      ),
      action: field(fc.record({ kind: fc.string(), name: fc.string() })),
      estimate: field(
        fc.record({
          unit: fc.constantFrom('USD_MICROCENTS', 'TOKENS', 'EUR'),
          amount: fc.oneof(fc.integer({ min: -5, max: 60_000 }), fc.double()),
        }),
      ),
      ttl_ms: field(fc.integer({ min: -10, max: 100_000_000 })),
      grace_period_ms: field(fc.integer({ min: -10, max: 100_000 })),
      overage_policy: field(
        fc.constantFrom('REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT', 'NOPE'),
      ),
      dry_run: field(fc.boolean()),
      metadata: field(fc.dictionary(fc.string(), fc.jsonValue())),
    });
    const headers = fc.record(
      {
        'content-type': fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
        ),
        'x-idempotency-key': fc.stringMatching(/^[A-Za-z0-9-]{0,300}$/),
      },
      { requiredKeys: ['content-type'] },
    );

    await fc.assert(
      fc.asyncProperty(bodies, headers, async (body, extra) => {
        const res = await request('POST', rt('/v1/reservations'), {
          headers: { ...t.headers, ...extra },
          raw: JSON.stringify(body),
        });

        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) {
          expectError(res, res.status, String(res.body.error), 'runtime');
        } else {
          expect(res.status).toBe(200);
        }
      }),
      { numRuns: 80 },
    );

    const balances = [...(await balancesOf(stack, t)).values()];
    const active = await request<{
      reservations: { reserved: { unit: string; amount: number } }[];
    }>('GET', rt('/v1/reservations?status=ACTIVE&limit=200'), { headers: t.headers });
    const held = active.body.reservations
      .filter((r) => r.reserved.unit === 'USD_MICROCENTS')
      .reduce((sum, r) => sum + r.reserved.amount, 0);
    for (const b of balances) {
      expectBalance(b);
      expect(amountOf(b.reserved)).toBe(held);
    }
  });
});

describe('fields that would change a request’s meaning but are not implemented', () => {
  const bodies = (): [string, Json][] => [
    ['/v1/reservations', reserveBody()],
    ['/v1/reservations', reserveBody({ dry_run: true })],
    ['/v1/decide', { ...reserveBody(), dry_run: undefined }],
    [
      '/v1/events',
      {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'tool', name: 'search' },
        actual: usd(1),
      },
    ],
  ];

  it('refuses observe_mode with 400 naming it, and applies nothing', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const before = await balancesOf(stack, t);
    for (const [path, body] of bodies()) {
      for (const observe of [true, 'shadow', {}]) {
        const res = await request('POST', rt(path), {
          headers: t.headers,
          body: { ...body, observe_mode: observe },
        });
        expectError(res, 400, 'INVALID_REQUEST');
        expect(errorOf(res).message).toContain('observe_mode');
      }
    }
    expect(await balancesOf(stack, t)).toEqual(before);
  });

  it('accepts observe_mode: false, which means what its absence means', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    for (const [path, body] of bodies()) {
      const res = await request('POST', rt(path), {
        headers: t.headers,
        body: { ...body, observe_mode: false },
      });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    }
  });
});

// Values SPEC admits in metadata and metrics.custom that DynamoDB cannot store as given.
const EXACT =
  '{"trace_id":18446744073709551616,"tiny":1e-200,"":"empty key","__proto__":{"x":1},"list":[1,{"b":true}]}';

describe('metadata and metrics.custom: any JSON, exactly', () => {
  it('round-trips a 20-digit integer digit for digit, 1e-200, and keys "" and "__proto__" through create and GET', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });

    const res = await request('POST', rt('/v1/reservations'), {
      headers: { ...t.headers, 'content-type': 'application/json' },
      raw: mutate(JSON.stringify(reserveBody())),
    });

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('never lets two distinct keys collide: \\ud800 and \\udbff are both refused, neither is a replay', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });

    const res = await request('GET', rt('/v1/reservations/rsv_%E0%A4%A'), { headers: t.headers });

    expectError(res, 400, 'INVALID_REQUEST');
  });
});
