import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { keys } from '../../functions/store/keys.js';
import {
  type Counters,
  countersOf,
  expectBalance,
  L,
  ledgers,
  relativeScope,
} from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import {
  fund,
  type GivenTenant,
  givenBudgets,
  givenTenant,
  givenTenantWith,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, type Response, request } from '../helpers/http.js';
import { reservationsApi, withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack();
const { create, reserve, commit, release, extend, getReservation } = reservationsApi(stack);
const url = (path: string) => `${stack.runtimeUrl}${path}`;

/** The balances of a response, checked, by scope relative to the tenant root ('' for it). */
function balancesIn(t: GivenTenant, body: Json): Record<string, Counters> {
  const list = body.balances as Json[];
  expect(Array.isArray(list)).toBe(true);
  const out: Record<string, Counters> = {};
  for (const b of list) {
    expectBalance(b);
    out[relativeScope(t, String(b.scope_path))] = countersOf(b);
  }
  return out;
}

async function expectFunded(res: Promise<Response>): Promise<void> {
  const r = await res;
  expect(r.status).toBe(200);
}

/**
 * Rewrites a committed reservation item in the format items had before 0.4: hex fingerprints,
 * balances as text with a scope index and all six counters, the settling operation named, and
 * no format version (items carry `v` since 0.5).
 */
async function storeAsBefore04(reservationId: string): Promise<void> {
  const { documentClient, tableName } = await import('../../functions/store/client.js');
  const Key = keys.reservation(reservationId);
  const { Item: item = {} } = await documentClient.send(
    new GetCommand({ TableName: tableName(), Key, ConsistentRead: true }),
  );
  const hex = (v: unknown) => Buffer.from(v as Uint8Array).toString('hex');
  const text = (rows: unknown) =>
    JSON.stringify(
      (item.scopes as string[]).map((_, i) => {
        const [a = 0, s = 0, r = 0, d = 0, o = 0] = (rows as number[]).slice(i * 5, i * 5 + 5);
        return [i, a, s, r, d, o, a - s - r - d];
      }),
    );
  await documentClient.send(
    new UpdateCommand({
      TableName: tableName(),
      Key,
      UpdateExpression:
        'SET fingerprint = :f, balances_compact = :b, settle_op = :op, settle_fingerprint = :sf, settle_balances = :sb REMOVE balance_rows, settle_rows, v',
      ConditionExpression: 'attribute_exists(balance_rows) AND attribute_exists(settle_rows)',
      ExpressionAttributeValues: {
        ':f': hex(item.fingerprint),
        ':b': text(item.balance_rows),
        ':op': 'commit',
        ':sf': hex(item.settle_fingerprint),
        ':sb': text(item.settle_rows),
      },
    }),
  );
}

// ---- POST /v1/reservations ------------------------------------------------------------------

describe.concurrent('POST /v1/reservations', () => {
  it('holds the estimate in every affected scope and answers 200 with exactly SPEC fields', async () => {
    const t = await givenTenantWith(stack, {
      '': 10_000,
      'workspace:w': 1_000,
      'workspace:w/app:a': 500,
    });
    const T = `tenant:${t.tenant}`;
    const before = Date.now();

    const res = await reserve(t, {
      subject: { workspace: 'w', app: 'a' },
      estimate: usd(200),
      metadata: { run: 'r-1' },
    });

    const afterMs = Date.now();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'affected_scopes',
      'balances',
      'decision',
      'expires_at_ms',
      'remaining_ttl_ms',
      'reservation_id',
      'reserved',
      'scope_path',
    ]);
    expect(res.body).toMatchObject({
      reservation_id: expect.any(String),
      decision: 'ALLOW',
      affected_scopes: [T, `${T}/workspace:w`, `${T}/workspace:w/app:a`],
      scope_path: `${T}/workspace:w/app:a`,
      reserved: usd(200),
    });
    expect(res.body.expires_at_ms).toBeGreaterThanOrEqual(before + 60_000);
    expect(res.body.expires_at_ms).toBeLessThanOrEqual(afterMs + 60_000);
    const after = {
      '': L(10_000, 0, 200, 0, 9_800),
      'workspace:w': L(1_000, 0, 200, 0, 800),
      'workspace:w/app:a': L(500, 0, 200, 0, 300),
    };
    expect(balancesIn(t, res.body)).toEqual(after);
    expect(await ledgers(stack, t)).toEqual(after);
  });

  it('records the reservation as ACTIVE with its subject, action and metadata', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const body = reserveBody({
      subject: { workspace: 'w' },
      action: { kind: 'tool', name: 'search', tags: ['a', 'b'] },
      metadata: { run: 'r-1' },
    });

    const res = await create(t, body);
    const got = await getReservation(t, res.body.reservation_id);

    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      reservation_id: res.body.reservation_id,
      status: 'ACTIVE',
      idempotency_key: body.idempotency_key,
      subject: { workspace: 'w' },
      action: { kind: 'tool', name: 'search', tags: ['a', 'b'] },
      reserved: usd(100),
      created_at_ms: expect.any(Number),
      expires_at_ms: res.body.expires_at_ms,
      scope_path: res.body.scope_path,
      affected_scopes: res.body.affected_scopes,
      metadata: { run: 'r-1' },
    });
    expect(Number(got.body.expires_at_ms) - Number(got.body.created_at_ms)).toBe(60_000);
  });

  it('applies the REJECT overage policy by default', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const r = await reserve(t, { estimate: usd(100) });

    const res = await commit(t, r.body.reservation_id, { actual: usd(101) });

    expectError(res, 409, 'BUDGET_EXCEEDED');
    expect((await getReservation(t, r.body.reservation_id)).body.status).toBe('ACTIVE');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 100, 0, 9_900),
      'workspace:w': L(10_000, 0, 100, 0, 9_900),
    });
  });

  it.for([
    [999, 400],
    [1_000, 200],
    [86_400_000, 200],
    [86_400_001, 400],
  ])('for ttl_ms %i answers %i', async ([ttl, status]) => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const before = Date.now();

    const res = await reserve(t, { ttl_ms: ttl });

    if (status === 400) {
      expectError(res, 400, 'INVALID_REQUEST');
      expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 0, 0, 1_000));
      return;
    }
    expect(res.status).toBe(200);
    expect(res.body.expires_at_ms).toBeGreaterThanOrEqual(before + Number(ttl));
    expect(res.body.expires_at_ms).toBeLessThanOrEqual(Date.now() + Number(ttl));
  });

  it.for([
    [-1, 400],
    [0, 200],
    [60_000, 200],
    [60_001, 400],
  ])('for grace_period_ms %i answers %i', async ([grace, status]) => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });

    const res = await reserve(t, { grace_period_ms: grace });

    if (status === 400) {
      expectError(res, 400, 'INVALID_REQUEST');
      expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 0, 0, 1_000));
    } else {
      expect(res.status).toBe(200);
    }
  });

  const omit = (key: string) => (b: Json) => {
    const { [key]: _, ...rest } = b;
    return rest;
  };
  const set = (patch: Json) => (b: Json) => ({ ...b, ...patch });
  it.for<[string, (b: Json) => Json]>([
    ['no idempotency_key', omit('idempotency_key')],
    ['an empty idempotency_key', set({ idempotency_key: '' })],
    ['an idempotency_key of 257 characters', set({ idempotency_key: 'k'.repeat(257) })],
    ['no subject', omit('subject')],
    ['an empty subject', set({ subject: {} })],
    ['a subject with only dimensions', set({ subject: { dimensions: { env: 'prod' } } })],
    ["a '/' in a subject value", set({ subject: { workspace: 'a/b' } })],
    ['a subject value of 129 characters', set({ subject: { workspace: 'w'.repeat(129) } })],
    ['an empty subject value', set({ subject: { workspace: '' } })],
    ['no action', omit('action')],
    ['an action without kind', set({ action: { name: 'model-x' } })],
    ['an action without name', set({ action: { kind: 'llm' } })],
    ['no estimate', omit('estimate')],
    ['an estimate without unit', set({ estimate: { amount: 1 } })],
    ['an unknown unit', set({ estimate: { unit: 'EUR', amount: 1 } })],
    ['a negative estimate', set({ estimate: usd(-1) })],
    ['a fractional estimate', set({ estimate: usd(1.5) })],
    ['an estimate as a string', set({ estimate: { unit: 'USD_MICROCENTS', amount: '1' } })],
    ['a fractional ttl_ms', set({ ttl_ms: 1_500.5 })],
    ['ttl_ms as a string', set({ ttl_ms: '60000' })],
    ['an unknown overage_policy', set({ overage_policy: 'SOMETIMES' })],
    ['a non-boolean dry_run', set({ dry_run: 'no' })],
    ['metadata that is not an object', set({ metadata: 'x' })],
  ])('refuses %s with 400 INVALID_REQUEST and holds nothing', async ([, mutate]) => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });

    const res = await request('POST', url('/v1/reservations'), {
      headers: t.headers,
      body: mutate(reserveBody()),
    });

    expectError(res, 400, 'INVALID_REQUEST');
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000, 0, 0, 0, 1_000),
      'workspace:w': L(1_000, 0, 0, 0, 1_000),
    });
  });

  it('refuses a body that is not JSON, or not an object, with 400', async () => {
    const t = await givenTenant(stack);
    const headers = { ...t.headers, 'content-type': 'application/json' };

    const broken = await request('POST', url('/v1/reservations'), { headers, raw: '{"a":' });
    const array = await request('POST', url('/v1/reservations'), { headers, raw: '[]' });

    expectError(broken, 400, 'INVALID_REQUEST');
    expectError(array, 400, 'INVALID_REQUEST');
  });

  it("refuses with 403 FORBIDDEN a subject.tenant other than the key's tenant", async () => {
    const t = await givenTenant(stack);
    const other = await givenTenant(stack);
    await givenBudgets(stack, t, { '': 1_000, 'workspace:w': 1_000 });

    const res = await reserve(t, { subject: { tenant: other.tenant, workspace: 'w' } });

    expectError(res, 403, 'FORBIDDEN');
    expect((await ledgers(stack, t))['']).toEqual(L(1_000, 0, 0, 0, 1_000));
  });

  it("accepts subject.tenant equal to the key's tenant and holds on the root alone", async () => {
    const t = await givenTenantWith(stack, { '': 1_000 });

    const res = await reserve(t, { subject: { tenant: t.tenant }, estimate: usd(400) });

    expect(res.status).toBe(200);
    expect(res.body.affected_scopes).toEqual([`tenant:${t.tenant}`]);
    expect(balancesIn(t, res.body)).toEqual({ '': L(1_000, 0, 400, 0, 600) });
  });

  it('refuses with 401 UNAUTHORIZED without a key or with an unknown key', async () => {
    const missing = await request('POST', url('/v1/reservations'), { body: reserveBody() });
    const unknown = await request('POST', url('/v1/reservations'), {
      headers: { 'x-service-api-key': 'cyc_live_unknown' },
      body: reserveBody(),
    });

    expectError(missing, 401, 'UNAUTHORIZED');
    expectError(unknown, 401, 'UNAUTHORIZED');
  });

  it('refuses with 409 BUDGET_EXCEEDED when any scope lacks remaining, holding nothing anywhere', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 150 });
    await reserve(t, { estimate: usd(100) });

    const over = await reserve(t, { estimate: usd(51) });
    const exact = await reserve(t, { estimate: usd(50) });

    expectError(over, 409, 'BUDGET_EXCEEDED');
    expect(exact.status).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 150, 0, 9_850),
      'workspace:w': L(150, 0, 150, 0, 0),
    });
  });

  it('refuses with 409 BUDGET_EXCEEDED when a scope has no ledger (zero allocation)', async () => {
    const t = await givenTenantWith(stack, { '': 10_000 });

    const noLedger = await reserve(t, { subject: { workspace: 'w' } });
    const otherUnit = await reserve(t, {
      subject: { tenant: t.tenant },
      estimate: { unit: 'TOKENS', amount: 1 },
    });

    expectError(noLedger, 409, 'BUDGET_EXCEEDED');
    expectError(otherUnit, 409, 'BUDGET_EXCEEDED');
    expect(await ledgers(stack, t)).toEqual({ '': L(10_000, 0, 0, 0, 10_000) });
  });

  it('refuses with 409 DEBT_OUTSTANDING while a scope has debt, and serves it again once repaid', async () => {
    const t = await givenTenantWith(stack, {
      '': 10_000,
      'workspace:w': { allocated: 1_000, overdraftLimit: 500 },
      'workspace:v': 1_000,
    });
    const r1 = await reserve(t, { estimate: usd(1_000), overage_policy: 'ALLOW_WITH_OVERDRAFT' });
    const overdrawn = await commit(t, r1.body.reservation_id, { actual: usd(1_200) });
    expect(overdrawn.status).toBe(200);
    const retried = reserveBody({ estimate: usd(100) });

    const inDebt = await create(t, retried);
    const debtAndNoLedger = await reserve(t, { subject: { workspace: 'w', app: 'none' } });
    const sibling = await reserve(t, { subject: { workspace: 'v' }, estimate: usd(100) });
    await expectFunded(fund(stack, t, 'workspace:w', 'REPAY_DEBT', 200));
    const noRemaining = await create(t, retried);
    await expectFunded(fund(stack, t, 'workspace:w', 'CREDIT', 100));
    const served = await create(t, retried);

    expectError(inDebt, 409, 'DEBT_OUTSTANDING');
    // Precedence: DEBT_OUTSTANDING (workspace:w) over BUDGET_EXCEEDED (app:none has no ledger).
    expectError(debtAndNoLedger, 409, 'DEBT_OUTSTANDING');
    expect(sibling.status).toBe(200);
    // SPEC § Idempotency rule 4: a failed request leaves nothing, the retry is processed afresh.
    expectError(noRemaining, 409, 'BUDGET_EXCEEDED');
    expect(served.status).toBe(200);
    expect(balancesIn(t, served.body)).toEqual({
      '': L(10_000, 1_200, 200, 0, 8_600),
      'workspace:w': L(1_100, 1_000, 100, 0, 0),
    });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 1_200, 200, 0, 8_600),
      'workspace:v': L(1_000, 0, 100, 0, 900),
      'workspace:w': L(1_100, 1_000, 100, 0, 0),
    });
  });

  it('names the effective tenant in X-Service-Tenant and X-Cycles-Tenant, with a unique X-Request-Id', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });

    const r = await reserve(t);
    const e = await extend(t, r.body.reservation_id, { extend_by_ms: 1_000 });
    const c = await commit(t, r.body.reservation_id, { actual: usd(10) });
    const r2 = await reserve(t);
    const rl = await release(t, r2.body.reservation_id);

    const responses = [r, e, c, r2, rl];
    expect(responses.map((x) => x.status)).toEqual([200, 200, 200, 200, 200]);
    for (const res of responses) {
      expect(res.headers.get('x-service-tenant')).toBe(t.tenant);
      expect(res.headers.get('x-cycles-tenant')).toBe(t.tenant);
    }
    const ids = responses.map((x) => x.headers.get('x-request-id'));
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe.concurrent('POST /v1/reservations idempotency', () => {
  it('replays the original body, reservation_id included, and holds once', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(300) });

    const first = await create(t, body);
    await reserve(t, { estimate: usd(100) });
    const again = await create(t, body);

    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 400, 0, 9_600),
      'workspace:w': L(1_000, 0, 400, 0, 600),
    });
  });

  it('ignores key order, whitespace and explicit defaults when comparing payloads', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const key = randomUUID();
    const compact = `{"idempotency_key":"${key}","subject":{"workspace":"w"},"action":{"kind":"llm","name":"m"},"estimate":{"unit":"USD_MICROCENTS","amount":50}}`;
    const reordered = `{\n  "estimate": { "amount": 50, "unit": "USD_MICROCENTS" },\n  "action": {"name": "m", "kind": "llm"},\n  "subject": { "workspace": "w" },\n  "idempotency_key": "${key}",\n  "ttl_ms": 60000\n}`;

    const first = await create(t, { raw: compact });
    const again = await create(t, { raw: reordered });

    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 50, 0, 950));
  });

  it('replays a reserve whose budget is spent since, and refuses another payload on that key 409', async () => {
    // The reserve reads no record before deciding: a refusal looks for it first.
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(600) });

    const first = await create(t, body);
    await reserve(t, { estimate: usd(400) });
    const again = await create(t, body);
    const other = await create(t, { ...body, estimate: usd(700) });

    expect(first.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 1_000, 0, 0));
  });

  it('refuses with 409 IDEMPOTENCY_MISMATCH the same key with another payload', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(100) });
    await create(t, body);

    const estimate = await reserve(t, { ...body, estimate: usd(101) });
    const metadata = await reserve(t, { ...body, metadata: { a: 1 } });
    const ttl = await reserve(t, { ...body, ttl_ms: 1_000 });

    expectError(estimate, 409, 'IDEMPOTENCY_MISMATCH');
    expectError(metadata, 409, 'IDEMPOTENCY_MISMATCH');
    expectError(ttl, 409, 'IDEMPOTENCY_MISMATCH');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
  });

  it('keeps keys per tenant: the same key makes two reservations for two tenants', async () => {
    const a = await givenTenant(stack);
    const b = await givenTenant(stack);
    await givenBudgets(stack, a, { '': 1_000, 'workspace:w': 1_000 });
    await givenBudgets(stack, b, { '': 1_000, 'workspace:w': 1_000 });
    const key = randomUUID();

    const ra = await reserve(a, { idempotency_key: key });
    const rb = await reserve(b, { idempotency_key: key, estimate: usd(7) });

    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect(ra.body.reservation_id).not.toBe(rb.body.reservation_id);
    expect((await ledgers(stack, b))['workspace:w']).toEqual(L(1_000, 0, 7, 0, 993));
  });

  it('accepts X-Idempotency-Key equal to the body key, and refuses a different or over-long one with 400', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const body = reserveBody();

    const differs = await reserve(t, body, {
      'x-idempotency-key': `${String(body.idempotency_key)}x`,
    });
    const tooLong = await reserve(
      t,
      { ...body, idempotency_key: 'k'.repeat(257) },
      { 'x-idempotency-key': 'k'.repeat(257) },
    );
    const same = await reserve(t, body, { 'x-idempotency-key': String(body.idempotency_key) });

    expectError(differs, 400, 'INVALID_REQUEST');
    expectError(tooLong, 400, 'INVALID_REQUEST');
    expect(same.status).toBe(200);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
  });

  it('processes a retry of a refused request as fresh once the budget exists', async () => {
    const t = await givenTenantWith(stack, { '': 1_000 });
    const body = reserveBody();
    const refused = await create(t, body);
    await givenBudgets(stack, t, { 'workspace:w': 500 });

    const retried = await create(t, body);

    expectError(refused, 409, 'BUDGET_EXCEEDED');
    expect(retried.status).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000, 0, 100, 0, 900),
      'workspace:w': L(500, 0, 100, 0, 400),
    });
  });

  it('replays a reserve and its commit stored as 0.3 stored them, and GET reads them alike', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(300) });
    const first = await create(t, body);
    const id = first.body.reservation_id;
    const commitBody = { idempotency_key: randomUUID(), actual: usd(250) };
    const committed = await commit(t, id, commitBody);
    const shown = await getReservation(t, id);
    await storeAsBefore04(String(id));

    const again = await create(t, body);
    const commitAgain = await commit(t, id, commitBody);
    const other = await commit(t, id, { ...commitBody, actual: usd(251) });
    const shownAgain = await getReservation(t, id);

    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expect(commitAgain.body).toEqual(committed.body);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect(shownAgain.body).toEqual(shown.body);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 250, 0, 0, 750));
  });

  it('replays the creation response after the reservation was committed', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(300) });
    const first = await create(t, body);
    await commit(t, first.body.reservation_id, { actual: usd(200) });

    const again = await create(t, body);

    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 200, 0, 0, 800));
  });
});

// ---- POST /v1/reservations/{id}/commit ------------------------------------------------------

describe.concurrent('POST /v1/reservations/{reservation_id}/commit', () => {
  it('charges actual, returns the unused part and answers with exactly SPEC fields', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { estimate: usd(300) });

    const res = await commit(t, r.body.reservation_id, {
      actual: usd(120),
      metrics: {
        tokens_input: 10,
        tokens_output: 5,
        latency_ms: 80,
        model_version: 'm-1',
        custom: { a: 1 },
      },
      metadata: { trace: 'x' },
    });

    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['balances', 'charged', 'released', 'status']);
    expect(res.body).toMatchObject({ status: 'COMMITTED', charged: usd(120), released: usd(180) });
    const after = { '': L(10_000, 120, 0, 0, 9_880), 'workspace:w': L(1_000, 120, 0, 0, 880) };
    expect(balancesIn(t, res.body)).toEqual(after);
    expect(await ledgers(stack, t)).toEqual(after);
    const got = await getReservation(t, r.body.reservation_id);
    expect(got.body).toMatchObject({
      status: 'COMMITTED',
      reserved: usd(300),
      committed: usd(120),
      finalized_at_ms: expect.any(Number),
    });
  });

  it('charges exactly the reserved amount with nothing released', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { estimate: usd(300) });

    const res = await commit(t, r.body.reservation_id, { actual: usd(300) });

    expect(res.body).toMatchObject({ status: 'COMMITTED', charged: usd(300), released: usd(0) });
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 300, 0, 0, 700));
  });

  // Every case: tenant root 10 000 (limit 0), workspace:w 1 000 (limit 500), 300 held on both,
  // so remaining is 9 700 and 700 before the commit; a refused commit leaves them so.
  const ok = { status: 200 } as const;
  const refused = (code: string) => ({ status: 409, code }) as const;
  const held = [L(10_000, 0, 300, 0, 9_700), L(1_000, 0, 300, 0, 700)] as const;
  it.for<[string, number, { status: 200 } | { status: 409; code: string }, Counters, Counters]>([
    ['REJECT', 301, refused('BUDGET_EXCEEDED'), ...held],
    ['ALLOW_IF_AVAILABLE', 1_000, ok, L(10_000, 1_000, 0, 0, 9_000), L(1_000, 1_000, 0, 0, 0)],
    ['ALLOW_IF_AVAILABLE', 1_001, refused('BUDGET_EXCEEDED'), ...held],
    ['ALLOW_WITH_OVERDRAFT', 900, ok, L(10_000, 900, 0, 0, 9_100), L(1_000, 900, 0, 0, 100)],
    [
      'ALLOW_WITH_OVERDRAFT',
      1_200,
      ok,
      L(10_000, 1_200, 0, 0, 8_800),
      L(1_000, 1_000, 0, 200, -200),
    ],
    [
      'ALLOW_WITH_OVERDRAFT',
      1_500,
      ok,
      L(10_000, 1_500, 0, 0, 8_500),
      L(1_000, 1_000, 0, 500, -500),
    ],
    ['ALLOW_WITH_OVERDRAFT', 1_501, refused('OVERDRAFT_LIMIT_EXCEEDED'), ...held],
  ])(
    'under %s commits actual %i as %j with exact ledgers',
    async ([policy, actual, expected, root, workspace]) => {
      const t = await givenTenantWith(stack, {
        '': 10_000,
        'workspace:w': { allocated: 1_000, overdraftLimit: 500 },
      });
      const r = await reserve(t, { estimate: usd(300), overage_policy: policy });

      const res = await commit(t, r.body.reservation_id, { actual: usd(actual) });

      expect(await ledgers(stack, t)).toEqual({ '': root, 'workspace:w': workspace });
      if (expected.status === 200) {
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ charged: usd(actual), released: usd(0) });
        expect(balancesIn(t, res.body)).toEqual({ '': root, 'workspace:w': workspace });
        return;
      }
      expectError(res, expected.status, expected.code);
      // A refused commit leaves the reservation ACTIVE: it can still be committed.
      expect((await getReservation(t, r.body.reservation_id)).body.status).toBe('ACTIVE');
      const retry = await commit(t, r.body.reservation_id, { actual: usd(300) });
      expect(retry.status).toBe(200);
    },
  );

  it('accumulates debt across commits up to overdraft_limit and no further', async () => {
    const t = await givenTenantWith(stack, {
      '': 10_000,
      'workspace:w': { allocated: 1_000, overdraftLimit: 500 },
    });
    const policy = { overage_policy: 'ALLOW_WITH_OVERDRAFT' };
    const r1 = await reserve(t, { estimate: usd(300), ...policy });
    const r2 = await reserve(t, { estimate: usd(100), ...policy });

    const first = await commit(t, r1.body.reservation_id, { actual: usd(1_000) });
    const tooMuch = await commit(t, r2.body.reservation_id, { actual: usd(501) });
    const upToLimit = await commit(t, r2.body.reservation_id, { actual: usd(500) });

    expect(first.status).toBe(200);
    expect(balancesIn(t, first.body)).toEqual({
      '': L(10_000, 1_000, 100, 0, 8_900),
      'workspace:w': L(1_000, 900, 100, 100, -100),
    });
    expectError(tooMuch, 409, 'OVERDRAFT_LIMIT_EXCEEDED');
    expect(upToLimit.status).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 1_500, 0, 0, 8_500),
      'workspace:w': L(1_000, 1_000, 0, 500, -500),
    });
  });

  it('refuses with 400 UNIT_MISMATCH an actual in another unit, leaving the reservation ACTIVE', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);

    const res = await commit(t, r.body.reservation_id, { actual: { unit: 'TOKENS', amount: 10 } });

    expectError(res, 400, 'UNIT_MISMATCH');
    expect((await getReservation(t, r.body.reservation_id)).body.status).toBe('ACTIVE');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
  });

  it.for<[string, Json]>([
    ['no actual', {}],
    ['a negative actual', { actual: usd(-1) }],
    ['a fractional actual', { actual: usd(0.5) }],
    ['a negative tokens_input', { actual: usd(1), metrics: { tokens_input: -1 } }],
    ['a negative tokens_output', { actual: usd(1), metrics: { tokens_output: -1 } }],
    ['a fractional latency_ms', { actual: usd(1), metrics: { latency_ms: 1.5 } }],
    [
      'a model_version of 129 characters',
      { actual: usd(1), metrics: { model_version: 'm'.repeat(129) } },
    ],
    ['an empty idempotency_key', { actual: usd(1), idempotency_key: '' }],
  ])('refuses %s with 400 INVALID_REQUEST', async ([, body]) => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);

    const res = await commit(t, r.body.reservation_id, body);

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
  });

  it('accepts a model_version of exactly 128 characters and zero metrics', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);

    const res = await commit(t, r.body.reservation_id, {
      actual: usd(1),
      metrics: { model_version: 'm'.repeat(128), tokens_input: 0, tokens_output: 0, latency_ms: 0 },
    });

    expect(res.status).toBe(200);
  });

  it('replays the original body for the same key and payload, charging once', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { estimate: usd(300) });
    const key = randomUUID();
    const first = await commit(t, r.body.reservation_id, {
      idempotency_key: key,
      actual: usd(250),
    });
    await reserve(t, { estimate: usd(100) });

    const again = await commit(t, r.body.reservation_id, {
      idempotency_key: key,
      actual: usd(250),
    });
    const other = await commit(t, r.body.reservation_id, {
      idempotency_key: key,
      actual: usd(251),
    });

    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 250, 100, 0, 650));
  });

  it('processes a retry of a refused commit as fresh after funding', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { estimate: usd(300), overage_policy: 'ALLOW_IF_AVAILABLE' });
    const body = { idempotency_key: randomUUID(), actual: usd(1_100) };
    const refused = await commit(t, r.body.reservation_id, body);
    await expectFunded(fund(stack, t, 'workspace:w', 'CREDIT', 100));

    const retried = await commit(t, r.body.reservation_id, body);

    expectError(refused, 409, 'BUDGET_EXCEEDED');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ charged: usd(1_100) });
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_100, 1_100, 0, 0, 0));
  });

  it('scopes keys per endpoint: one key may commit one reservation and release another', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r1 = await reserve(t);
    const r2 = await reserve(t);
    const key = randomUUID();

    const committed = await commit(t, r1.body.reservation_id, {
      idempotency_key: key,
      actual: usd(40),
    });
    const released = await release(t, r2.body.reservation_id, { idempotency_key: key });

    expect([committed.status, released.status]).toEqual([200, 200]);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 40, 0, 0, 960));
  });
});

// ---- POST /v1/reservations/{id}/release -----------------------------------------------------

describe.concurrent('POST /v1/reservations/{reservation_id}/release', () => {
  it('returns the whole hold and answers with exactly SPEC fields', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { estimate: usd(300) });

    const res = await release(t, r.body.reservation_id, { reason: 'not needed' });

    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['balances', 'released', 'status']);
    expect(res.body).toMatchObject({ status: 'RELEASED', released: usd(300) });
    const after = { '': L(10_000, 0, 0, 0, 10_000), 'workspace:w': L(1_000, 0, 0, 0, 1_000) };
    expect(balancesIn(t, res.body)).toEqual(after);
    expect(await ledgers(stack, t)).toEqual(after);
    const got = await getReservation(t, r.body.reservation_id);
    expect(got.body).toMatchObject({ status: 'RELEASED', finalized_at_ms: expect.any(Number) });
    expect(got.body.committed).toBeUndefined();
  });

  it('replays the original body for the same key, and refuses another payload with 409', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);
    const key = randomUUID();
    const first = await release(t, r.body.reservation_id, { idempotency_key: key });

    const again = await release(t, r.body.reservation_id, { idempotency_key: key });
    const other = await release(t, r.body.reservation_id, { idempotency_key: key, reason: 'x' });

    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 0, 0, 1_000));
  });
});

// ---- POST /v1/reservations/{id}/extend ------------------------------------------------------

describe.concurrent('POST /v1/reservations/{reservation_id}/extend', () => {
  it('adds extend_by_ms to the current expires_at_ms, cumulatively', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { metadata: { a: 1 } });
    const e0 = Number(r.body.expires_at_ms);

    const once = await extend(t, r.body.reservation_id, { extend_by_ms: 1_000 });
    const twice = await extend(t, r.body.reservation_id, {
      extend_by_ms: 2_500,
      metadata: { b: 2 },
    });

    expect(once.status).toBe(200);
    expect(once.body).toMatchObject({ status: 'ACTIVE', expires_at_ms: e0 + 1_000 });
    expect(twice.body).toMatchObject({ status: 'ACTIVE', expires_at_ms: e0 + 3_500 });
    for (const res of [once, twice]) {
      const keys = Object.keys(res.body).sort();
      expect([
        'expires_at_ms,remaining_ttl_ms,status',
        'balances,expires_at_ms,remaining_ttl_ms,status',
      ]).toContain(keys.join(','));
      if (res.body.balances !== undefined) {
        expect(balancesIn(t, res.body)).toEqual({
          '': L(1_000, 0, 100, 0, 900),
          'workspace:w': L(1_000, 0, 100, 0, 900),
        });
      }
    }
    const got = await getReservation(t, r.body.reservation_id);
    expect(got.body).toMatchObject({ status: 'ACTIVE', expires_at_ms: e0 + 3_500 });
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
  });

  it.for([
    [0, 400],
    [1, 200],
    [86_400_000, 200],
    [86_400_001, 400],
    [1.5, 400],
  ])('for extend_by_ms %d answers %i', async ([by, status]) => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);

    const res = await extend(t, r.body.reservation_id, { extend_by_ms: by });

    const got = await getReservation(t, r.body.reservation_id);
    if (status === 400) {
      expectError(res, 400, 'INVALID_REQUEST');
      expect(got.body.expires_at_ms).toBe(r.body.expires_at_ms);
    } else {
      expect(res.status).toBe(200);
      expect(got.body.expires_at_ms).toBe(Number(r.body.expires_at_ms) + Number(by));
    }
  });

  it('refuses a missing extend_by_ms with 400', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);

    const res = await extend(t, r.body.reservation_id, {});

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('replays the same extension without applying it twice, and refuses another payload', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t);
    const key = randomUUID();
    const first = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 5_000,
    });

    const again = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 5_000,
    });
    const other = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 6_000,
    });

    expect(again.status).toBe(200);
    expect(withoutLease(again.body)).toEqual(withoutLease(first.body));
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    const got = await getReservation(t, r.body.reservation_id);
    expect(got.body.expires_at_ms).toBe(Number(r.body.expires_at_ms) + 5_000);
  });
});

// ---- errors shared by commit, release and extend --------------------------------------------

const ACTIONS = [
  ['commit', { actual: usd(10) }],
  ['release', {}],
  ['extend', { extend_by_ms: 1_000 }],
] as const;
const act = { commit, release, extend };

describe.concurrent('commit, release and extend', () => {
  it.for(ACTIONS)(
    '%s answers 404 NOT_FOUND for a reservation that never existed',
    async ([action, body]) => {
      const t = await givenTenant(stack);

      const res = await act[action](t, 'rsv_never_existed', body);
      const longest = await act[action](t, 'r'.repeat(128), body);
      const tooLong = await act[action](t, 'r'.repeat(129), body);

      expectError(res, 404, 'NOT_FOUND');
      expectError(longest, 404, 'NOT_FOUND');
      expectError(tooLong, 400, 'INVALID_REQUEST');
    },
  );

  it.for(ACTIONS)(
    "%s answers 403 FORBIDDEN for another tenant's reservation and changes nothing",
    async ([action, body]) => {
      const owner = await givenTenant(stack);
      const intruder = await givenTenant(stack);
      await givenBudgets(stack, owner, { '': 1_000, 'workspace:w': 1_000 });
      const r = await reserve(owner);

      const res = await act[action](intruder, r.body.reservation_id, body);
      const peek = await getReservation(intruder, r.body.reservation_id);

      expectError(res, 403, 'FORBIDDEN');
      expectError(peek, 403, 'FORBIDDEN');
      const got = await getReservation(owner, r.body.reservation_id);
      expect(got.body).toMatchObject({ status: 'ACTIVE', expires_at_ms: r.body.expires_at_ms });
      expect((await ledgers(stack, owner))['workspace:w']).toEqual(L(1_000, 0, 100, 0, 900));
    },
  );

  it.for([
    ['commit', 'commit'],
    ['commit', 'release'],
    ['commit', 'extend'],
    ['release', 'commit'],
    ['release', 'release'],
    ['release', 'extend'],
  ] as const)(
    'after %s, %s answers 409 RESERVATION_FINALIZED and changes nothing',
    async ([first, then]) => {
      const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
      const r = await reserve(t);
      const bodyOf = (a: string) => ACTIONS.find(([name]) => name === a)?.[1] ?? {};
      const done = await act[first](t, r.body.reservation_id, bodyOf(first));
      expect(done.status).toBe(200);
      const before = await ledgers(stack, t);

      const res = await act[then](t, r.body.reservation_id, bodyOf(then));

      expectError(res, 409, 'RESERVATION_FINALIZED');
      expect(await ledgers(stack, t)).toEqual(before);
      const got = await getReservation(t, r.body.reservation_id);
      expect(got.body.status).toBe(first === 'commit' ? 'COMMITTED' : 'RELEASED');
    },
  );
});
