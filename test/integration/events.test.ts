import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  balanceAt,
  balancesOf,
  countersOf,
  expectBalance,
  ledgerKey,
} from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import {
  fund,
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack({ env: { API_KEY_CACHE_TTL_MS: '5000' } });

const rt = (path: string) => `${stack.runtimeUrl}${path}`;

const eventBody = (overrides: Json = {}): Json => ({
  idempotency_key: randomUUID(),
  subject: { workspace: 'w' },
  action: { kind: 'tool.call', name: 'web.search' },
  actual: usd(100),
  ...overrides,
});
const postEvent = (t: GivenTenant, body: Json, headers = t.headers) =>
  request('POST', rt('/v1/events'), { headers, body });

/** The ledger figures that matter, by scope relative to the tenant root. */
async function figures(t: GivenTenant, rel: string, unit = 'USD_MICROCENTS') {
  const b = await balanceAt(stack, t, rel, unit);
  return { ...countersOf(b), is_over_limit: b.is_over_limit };
}

/** A tenant with a root budget and a workspace:w budget. */
async function givenWorkspace(
  rootAllocated: number,
  workspaceAllocated: number,
  options: { rootOverdraft?: number; overdraft?: number } = {},
): Promise<GivenTenant> {
  return givenTenantWith(stack, {
    '': { allocated: rootAllocated, overdraftLimit: options.rootOverdraft ?? 0 },
    'workspace:w': { allocated: workspaceAllocated, overdraftLimit: options.overdraft ?? 0 },
  });
}

describe('POST /v1/events', () => {
  it('debits every derived scope and answers 201 APPLIED with event_id and the new balances', async () => {
    const t = await givenWorkspace(10_000, 5_000);

    const res = await postEvent(t, eventBody({ actual: usd(1_200) }));

    expect(res.status).toBe(201);
    const after = await balancesOf(stack, t);
    expect(res.body).toEqual({
      status: 'APPLIED',
      event_id: expect.any(String),
      balances: [after.get(ledgerKey(t, '')), after.get(ledgerKey(t, 'workspace:w'))],
    });
    expect(await figures(t, '')).toMatchObject({ spent: 1_200, remaining: 8_800, reserved: 0 });
    expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 1_200, remaining: 3_800 });
  });

  it('accepts metrics, metadata and client_time_ms', async () => {
    const t = await givenWorkspace(10_000, 5_000);

    const res = await postEvent(
      t,
      eventBody({
        metrics: {
          tokens_input: 1_000,
          tokens_output: 250,
          latency_ms: 0,
          model_version: 'm'.repeat(128),
          custom: { cache_hit: true, shards: [1, 2], note: 'x' },
        },
        metadata: { trace_id: 'abc', nested: { n: 1 } },
        client_time_ms: Date.now() - 5_000,
      }),
    );

    expect(res.status).toBe(201);
    expect(res.body.status).toBe('APPLIED');
  });

  it('accepts a subject naming its own tenant and custom dimensions', async () => {
    const t = await givenWorkspace(10_000, 5_000);
    await givenBudget(stack, t, 'workspace:w/dimensions:env=prod', 1_000);

    const res = await postEvent(
      t,
      eventBody({ subject: { tenant: t.tenant, workspace: 'w', dimensions: { env: 'prod' } } }),
    );

    expect(res.status).toBe(201);
    expect(await figures(t, 'workspace:w/dimensions:env=prod')).toMatchObject({ spent: 100 });
  });

  describe('idempotency', () => {
    it('replays the same 201 body, event_id included, and applies the event once', async () => {
      const t = await givenWorkspace(10_000, 5_000);
      const body = eventBody({ actual: usd(300) });
      const first = await postEvent(t, body);
      await postEvent(t, eventBody({ actual: usd(50) }));

      const again = await postEvent(t, body);

      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 350 });
    });

    it('gives concurrent duplicates one event_id and applies the event once', async () => {
      const t = await givenWorkspace(10_000, 5_000);
      const body = eventBody({ actual: usd(70) });

      const results = await Promise.all(Array.from({ length: 10 }, () => postEvent(t, body)));

      expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(new Set(results.map((r) => r.body.event_id)).size).toBe(1);
      expect(await figures(t, '')).toMatchObject({ spent: 70 });
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 70 });
    });

    it('gives different keys different event ids', async () => {
      const t = await givenWorkspace(10_000, 5_000);

      const a = await postEvent(t, eventBody());
      const b = await postEvent(t, eventBody());

      expect(a.body.event_id).not.toBe(b.body.event_id);
    });

    it.each([
      ['actual', { actual: usd(101) }],
      ['subject', { subject: { workspace: 'w2' } }],
      ['overage_policy', { overage_policy: 'ALLOW_IF_AVAILABLE' }],
      ['metadata', { metadata: { run: 2 } }],
    ])('answers 409 IDEMPOTENCY_MISMATCH for the same key with another %s', async (_f, change) => {
      const t = await givenWorkspace(10_000, 5_000);
      const body = eventBody();
      await postEvent(t, body);
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, { ...body, ...change });

      expectError(res, 409, 'IDEMPOTENCY_MISMATCH');
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it('processes a retry of a refused event as a fresh request', async () => {
      const t = await givenWorkspace(10_000, 50);
      const body = eventBody({ actual: usd(100) });
      const refused = await postEvent(t, body);
      await fund(stack, t, 'workspace:w', 'CREDIT', 100);

      const retried = await postEvent(t, body);

      expect(refused.status).toBe(409);
      expect(retried.status).toBe(201);
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 100, remaining: 50 });
    });
  });

  describe('missing ledgers and units', () => {
    it('refuses with 409 BUDGET_EXCEEDED when a derived scope has no ledger, charging nothing', async () => {
      const t = await givenWorkspace(10_000, 5_000);
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, eventBody({ subject: { workspace: 'w', agent: 'nobody' } }));

      expectError(res, 409, 'BUDGET_EXCEEDED');
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it('refuses with 409 BUDGET_EXCEEDED for a tenant without any ledger', async () => {
      const t = await givenTenant(stack);

      const res = await postEvent(t, eventBody());

      expectError(res, 409, 'BUDGET_EXCEEDED');
    });

    it('refuses with 400 UNIT_MISMATCH when the scope has ledgers only in other units, charging nothing', async () => {
      const t = await givenTenant(stack);
      await givenBudget(stack, t, '', 10_000);
      await givenBudget(stack, t, '', 10_000, { unit: 'TOKENS' });
      await givenBudget(stack, t, 'workspace:w', 10_000, { unit: 'TOKENS' });
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, eventBody({ actual: usd(10) }));

      expectError(res, 400, 'UNIT_MISMATCH');
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it('refuses with 400 UNIT_MISMATCH when the root has a ledger only in another unit', async () => {
      const t = await givenTenant(stack);
      await givenBudget(stack, t, '', 10_000, { unit: 'CREDITS' });
      await givenBudget(stack, t, 'workspace:w', 10_000);

      const res = await postEvent(t, eventBody({ actual: usd(10) }));

      expectError(res, 400, 'UNIT_MISMATCH');
    });

    it('charges the ledgers of the event unit only', async () => {
      const t = await givenTenant(stack);
      for (const unit of ['USD_MICROCENTS', 'TOKENS'] as const) {
        await givenBudget(stack, t, '', 10_000, { unit });
        await givenBudget(stack, t, 'workspace:w', 10_000, { unit });
      }

      const res = await postEvent(t, eventBody({ actual: { unit: 'TOKENS', amount: 640 } }));

      expect(res.status).toBe(201);
      expect(await figures(t, 'workspace:w', 'TOKENS')).toMatchObject({ spent: 640 });
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 0 });
    });
  });

  describe.each([[undefined], ['REJECT'], ['ALLOW_IF_AVAILABLE']])(
    'overage_policy %s',
    (policy) => {
      const withPolicy = (overrides: Json) =>
        eventBody({ ...overrides, ...(policy && { overage_policy: policy }) });

      it('charges exactly the remaining amount', async () => {
        const t = await givenWorkspace(10_000, 700);

        const res = await postEvent(t, withPolicy({ actual: usd(700) }));

        expect(res.status).toBe(201);
        expect(await figures(t, 'workspace:w')).toMatchObject({
          spent: 700,
          remaining: 0,
          debt: 0,
        });
      });

      it('refuses one unit more with 409 BUDGET_EXCEEDED on any scope, charging no scope', async () => {
        const t = await givenWorkspace(10_000, 700);
        const before = await balancesOf(stack, t);

        const res = await postEvent(t, withPolicy({ actual: usd(701) }));

        expectError(res, 409, 'BUDGET_EXCEEDED');
        expect(await balancesOf(stack, t)).toEqual(before);
      });

      it('refuses when the root, not the leaf, lacks remaining', async () => {
        const t = await givenWorkspace(500, 10_000);
        const before = await balancesOf(stack, t);

        const res = await postEvent(t, withPolicy({ actual: usd(501) }));

        expectError(res, 409, 'BUDGET_EXCEEDED');
        expect(await balancesOf(stack, t)).toEqual(before);
      });

      it('counts active reservations against remaining', async () => {
        const t = await givenWorkspace(10_000, 1_000);
        await request('POST', rt('/v1/reservations'), {
          headers: t.headers,
          body: reserveBody({ estimate: usd(600) }),
        });

        const over = await postEvent(t, withPolicy({ actual: usd(401) }));
        const exact = await postEvent(t, withPolicy({ actual: usd(400) }));

        expect(over.status).toBe(409);
        expect(exact.status).toBe(201);
        expect(await figures(t, 'workspace:w')).toMatchObject({
          spent: 400,
          reserved: 600,
          remaining: 0,
        });
      });
    },
  );

  describe('overage_policy ALLOW_WITH_OVERDRAFT', () => {
    const overdraft = (amount: number) =>
      eventBody({ actual: usd(amount), overage_policy: 'ALLOW_WITH_OVERDRAFT' });

    it('charges a covered event to spent only', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });

      const res = await postEvent(t, overdraft(1_000));

      expect(res.status).toBe(201);
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 1_000, debt: 0 });
    });

    it('sends the part covered by remaining to spent and the rest to debt', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });

      const res = await postEvent(t, overdraft(1_200));

      expect(res.status).toBe(201);
      const balances = res.body.balances as Json[];
      for (const b of balances) expectBalance(b);
      expect(await figures(t, '')).toMatchObject({ spent: 1_200, debt: 0, remaining: 8_800 });
      expect(await figures(t, 'workspace:w')).toMatchObject({
        allocated: 1_000,
        spent: 1_000,
        debt: 200,
        reserved: 0,
        is_over_limit: false,
      });
      expect(balances[1]).toEqual((await balancesOf(stack, t)).get(ledgerKey(t, 'workspace:w')));
    });

    it('takes a further event wholly as debt, up to exactly the limit', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });
      await postEvent(t, overdraft(1_200));

      const res = await postEvent(t, overdraft(300));

      expect(res.status).toBe(201);
      expect(await figures(t, 'workspace:w')).toMatchObject({
        spent: 1_000,
        debt: 500,
        is_over_limit: false,
      });
    });

    it('refuses with 409 OVERDRAFT_LIMIT_EXCEEDED when debt + uncovered > overdraft_limit, charging nothing', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });
      await postEvent(t, overdraft(1_200));
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, overdraft(301));

      expectError(res, 409, 'OVERDRAFT_LIMIT_EXCEEDED');
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it('refuses a first event whose uncovered part alone passes the limit', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });

      const over = await postEvent(t, overdraft(1_501));
      const exact = await postEvent(t, overdraft(1_500));

      expectError(over, 409, 'OVERDRAFT_LIMIT_EXCEEDED');
      expect(exact.status).toBe(201);
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 1_000, debt: 500 });
    });

    it('refuses on a scope without overdraft even when another scope could take the debt', async () => {
      const t = await givenWorkspace(1_000, 10_000, { rootOverdraft: 0, overdraft: 5_000 });
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, overdraft(1_001));

      expectError(res, 409, 'OVERDRAFT_LIMIT_EXCEEDED');
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it('blocks new reservations on the indebted scope with DEBT_OUTSTANDING', async () => {
      const t = await givenWorkspace(10_000, 1_000, { overdraft: 500 });
      await postEvent(t, overdraft(1_100));

      const res = await request('POST', rt('/v1/reservations'), {
        headers: t.headers,
        body: reserveBody({ estimate: usd(1) }),
      });

      expectError(res, 409, 'DEBT_OUTSTANDING');
    });
  });

  describe('validation and auth', () => {
    it.each([
      ['metrics.tokens_input', { metrics: { tokens_input: -1 } }],
      ['metrics.tokens_output', { metrics: { tokens_output: -5 } }],
      ['metrics.latency_ms', { metrics: { latency_ms: -1 } }],
      ['metrics.tokens_input', { metrics: { tokens_input: 1.5 } }],
      ['metrics.model_version', { metrics: { model_version: 'm'.repeat(129) } }],
      ['metrics.model_version', { metrics: { model_version: 12 } }],
      ['actual.amount', { actual: usd(-1) }],
      ['actual.amount', { actual: { unit: 'USD_MICROCENTS', amount: '10' } }],
      ['actual.unit', { actual: { unit: 'EUR', amount: 1 } }],
      ['actual', { actual: undefined }],
      ['action', { action: undefined }],
      ['subject', { subject: undefined }],
      ['subject', { subject: { dimensions: { env: 'prod' } } }],
      ['overage_policy', { overage_policy: 'SOMETIMES' }],
      ['client_time_ms', { client_time_ms: 'yesterday' }],
      ['idempotency_key', { idempotency_key: '' }],
      ['idempotency_key', { idempotency_key: 'k'.repeat(257) }],
    ])('answers 400 INVALID_REQUEST naming %s', async (field, overrides) => {
      const t = await givenWorkspace(10_000, 5_000);
      const before = await balancesOf(stack, t);

      const res = await postEvent(t, eventBody(overrides));

      expect(expectError(res, 400, 'INVALID_REQUEST').message).toContain(field);
      expect(await balancesOf(stack, t)).toEqual(before);
    });

    it("answers 403 FORBIDDEN for another tenant's subject, charging nothing", async () => {
      const t = await givenWorkspace(10_000, 5_000);
      const victim = await givenWorkspace(10_000, 5_000);
      const before = await balancesOf(stack, victim);

      const res = await postEvent(
        t,
        eventBody({ subject: { tenant: victim.tenant, workspace: 'w' } }),
      );

      expectError(res, 403, 'FORBIDDEN');
      expect(await balancesOf(stack, victim)).toEqual(before);
    });

    it('answers 401 without an API key or with an unknown one', async () => {
      const none = await request('POST', rt('/v1/events'), { body: eventBody() });
      const unknown = await request('POST', rt('/v1/events'), {
        headers: { 'x-service-api-key': 'cyc_live_unknown' },
        body: eventBody(),
      });

      expectError(none, 401, 'UNAUTHORIZED');
      expect(unknown.status).toBe(401);
    });

    it('takes the idempotency key from X-Idempotency-Key and refuses a differing pair', async () => {
      const t = await givenWorkspace(10_000, 5_000);
      const { idempotency_key: _dropped, ...body } = eventBody();
      const key = randomUUID();

      const viaHeader = await postEvent(t, body, { ...t.headers, 'x-idempotency-key': key });
      const replay = await postEvent(t, { ...body, idempotency_key: key });
      const differing = await postEvent(
        t,
        { ...body, idempotency_key: key },
        { ...t.headers, 'x-idempotency-key': `${key}-other` },
      );

      expect(viaHeader.status).toBe(201);
      expect(replay.body).toEqual(viaHeader.body);
      expect(differing.status).toBe(400);
      expect(await figures(t, 'workspace:w')).toMatchObject({ spent: 100 });
    });
  });

  describe('racing reservations on the same ledgers', () => {
    it('keeps exact totals with 40 events and 40 reserve+commit lifecycles at once', async () => {
      const t = await givenWorkspace(1_000_000_000, 1_000_000_000);
      const eventAmounts = Array.from({ length: 40 }, (_, i) => 1_000 + i * 7);
      const commitAmounts = Array.from({ length: 40 }, (_, i) => 500 + i * 3);

      const outcomes = await Promise.all([
        ...eventAmounts.map(
          async (amount) => (await postEvent(t, eventBody({ actual: usd(amount) }))).status,
        ),
        ...commitAmounts.map(async (amount) => {
          const r = await request('POST', rt('/v1/reservations'), {
            headers: t.headers,
            body: reserveBody({ estimate: usd(2_000) }),
          });
          if (r.status !== 200) return r.status;
          const c = await request('POST', rt(`/v1/reservations/${r.body.reservation_id}/commit`), {
            headers: t.headers,
            body: { idempotency_key: randomUUID(), actual: usd(amount) },
          });
          return c.status;
        }),
      ]);

      expect(outcomes).toEqual([...Array(40).fill(201), ...Array(40).fill(200)]);
      const total = [...eventAmounts, ...commitAmounts].reduce((a, b) => a + b, 0);
      for (const rel of ['', 'workspace:w']) {
        expect(await figures(t, rel)).toEqual({
          allocated: 1_000_000_000,
          spent: total,
          reserved: 0,
          debt: 0,
          remaining: 1_000_000_000 - total,
          is_over_limit: false,
        });
      }
    });

    it('never oversells a tight budget: exactly the affordable number of events and reservations succeed', async () => {
      const t = await givenWorkspace(1_000_000, 10_000);

      const outcomes = await Promise.all([
        ...Array.from({ length: 30 }, async () => {
          const res = await postEvent(t, eventBody({ actual: usd(500) }));
          return { kind: 'event', status: res.status, error: res.body.error };
        }),
        ...Array.from({ length: 30 }, async () => {
          const r = await request('POST', rt('/v1/reservations'), {
            headers: t.headers,
            body: reserveBody({ estimate: usd(500) }),
          });
          if (r.status !== 200) return { kind: 'reserve', status: r.status, error: r.body.error };
          const c = await request('POST', rt(`/v1/reservations/${r.body.reservation_id}/commit`), {
            headers: t.headers,
            body: { idempotency_key: randomUUID(), actual: usd(500) },
          });
          return { kind: 'commit', status: c.status, error: c.body.error };
        }),
      ]);

      const succeeded = outcomes.filter((o) => o.status === 200 || o.status === 201);
      const refused = outcomes.filter((o) => o.status !== 200 && o.status !== 201);
      expect(succeeded).toHaveLength(20);
      expect(refused.every((o) => o.status === 409 && o.error === 'BUDGET_EXCEEDED')).toBe(true);
      expect(refused.every((o) => o.kind !== 'commit')).toBe(true);
      for (const b of (await balancesOf(stack, t)).values()) expectBalance(b);
      expect(await figures(t, 'workspace:w')).toEqual({
        allocated: 10_000,
        spent: 10_000,
        reserved: 0,
        debt: 0,
        remaining: 0,
        is_over_limit: false,
      });
      expect(await figures(t, '')).toMatchObject({ spent: 10_000, reserved: 0 });
    });
  });
});
