import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../functions/store/keys.js';
import { balancesOf, ledgerKey, type WireAmount, type WireBalance } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenBudgets,
  givenTenant,
  givenTenantWith,
  reserveBody,
  scopeOf,
  sleep,
  type Unit,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// Server time runs with real time (listings order by creation time); tests move it forward
// instead of waiting. The tests of this file run one at a time.
const clock = testClock();
const stack = useTestStack({ env: { API_KEY_CACHE_TTL_MS: '5000' }, clock });

const rt = (path: string) => `${stack.runtimeUrl}${path}`;

type Amount = WireAmount;
type Balance = WireBalance;
interface Reservation {
  reservation_id: string;
  status: string;
  idempotency_key: string;
  subject: Json;
  action: Json;
  reserved: Amount;
  committed?: Amount;
  created_at_ms: number;
  expires_at_ms: number;
  finalized_at_ms?: number;
  scope_path: string;
  affected_scopes: string[];
  metadata?: Json;
}
interface Page<K extends string, T> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: { [key in K]: T[] } & { has_more: boolean; next_cursor?: string };
}

const reserve = (t: GivenTenant, overrides: Json = {}, headers = t.headers) =>
  request('POST', rt('/v1/reservations'), { headers, body: reserveBody(overrides) });
const decide = (t: GivenTenant, body: Json) =>
  request('POST', rt('/v1/decide'), { headers: t.headers, body });
const listBalances = async (t: GivenTenant, query: string) =>
  (await request('GET', rt(`/v1/balances?${query}`), { headers: t.headers })) as Page<
    'balances',
    Balance
  >;
const listReservations = async (t: GivenTenant, query = '') =>
  (await request('GET', rt(`/v1/reservations${query ? `?${query}` : ''}`), {
    headers: t.headers,
  })) as Page<'reservations', Reservation>;
const getReservation = (t: GivenTenant, id: string) =>
  request<Reservation>('GET', rt(`/v1/reservations/${id}`), { headers: t.headers });
const commit = (t: GivenTenant, id: string, amount: number, extra: Json = {}) =>
  request('POST', rt(`/v1/reservations/${id}/commit`), {
    headers: t.headers,
    body: {
      idempotency_key: randomUUID(),
      actual: { unit: 'USD_MICROCENTS', amount },
      ...extra,
    },
  });
const release = (t: GivenTenant, id: string) =>
  request('POST', rt(`/v1/reservations/${id}/release`), {
    headers: t.headers,
    body: { idempotency_key: randomUUID() },
  });
const postEvent = (t: GivenTenant, body: Json) =>
  request('POST', rt('/v1/events'), {
    headers: t.headers,
    body: {
      idempotency_key: randomUUID(),
      action: { kind: 'tool.call', name: 'search' },
      ...body,
    },
  });

/** Creates a reservation that must succeed and returns its id. */
async function reserveOk(t: GivenTenant, overrides: Json = {}): Promise<string> {
  const res = await reserve(t, overrides);
  if (res.status !== 200) throw new Error(`reserve: ${res.status} ${JSON.stringify(res.body)}`);
  return String(res.body.reservation_id);
}

/** Runs `count` tasks, at most `concurrency` at a time, results in task order. */
async function inPool<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

/**
 * Puts a ledger over its overdraft limit (debt > overdraft_limit, invariant kept). No API can
 * get there — debt is capped at the limit — but SPEC's blocking rule 2 must still be honoured.
 */
async function forceOverLimit(scope: string, unit: Unit, debt: number): Promise<void> {
  const { documentClient, tableName } = await import('../../functions/store/client.js');
  await documentClient.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.ledger(scope, unit),
      UpdateExpression: 'SET #debt = :debt, #remaining = #remaining - :debt',
      ConditionExpression: 'attribute_exists(#pk) AND #debt = :zero',
      ExpressionAttributeNames: { '#pk': 'pk', '#debt': 'debt', '#remaining': 'remaining' },
      ExpressionAttributeValues: { ':debt': debt, ':zero': 0 },
    }),
  );
}

/** A tenant with budgets on root and workspace:w, in one of three blocking conditions. */
async function givenCondition(
  condition: 'BUDGET_EXCEEDED' | 'DEBT_OUTSTANDING' | 'OVERDRAFT_LIMIT_EXCEEDED',
): Promise<GivenTenant> {
  const t = await givenTenant(stack);
  await givenBudget(stack, t, '', 1_000_000);
  await givenBudget(stack, t, 'workspace:w', 1_000, { overdraftLimit: 500 });
  if (condition === 'BUDGET_EXCEEDED') {
    await reserveOk(t, { estimate: { unit: 'USD_MICROCENTS', amount: 950 } });
  } else if (condition === 'DEBT_OUTSTANDING') {
    // 1_200 on 1_000: 1_000 spent, 200 debt, below the 500 limit.
    const ev = await postEvent(t, {
      subject: { workspace: 'w' },
      actual: { unit: 'USD_MICROCENTS', amount: 1_200 },
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    if (ev.status !== 201) throw new Error(`event: ${ev.status} ${JSON.stringify(ev.body)}`);
  } else {
    await forceOverLimit(scopeOf(t, 'workspace:w'), 'USD_MICROCENTS', 600);
  }
  return t;
}

const CONDITIONS = ['BUDGET_EXCEEDED', 'DEBT_OUTSTANDING', 'OVERDRAFT_LIMIT_EXCEEDED'] as const;

describe('POST /v1/reservations with dry_run: true', () => {
  it('answers ALLOW with scopes, reserved and current balances, but no id and no expiry', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 5_000 });
    const before = await balancesOf(stack, t);

    const res = await reserve(t, {
      dry_run: true,
      estimate: { unit: 'USD_MICROCENTS', amount: 4_000 },
    });

    expect(res.status).toBe(200);
    const scopes = [scopeOf(t, ''), scopeOf(t, 'workspace:w')];
    expect(res.body).toEqual({
      decision: 'ALLOW',
      affected_scopes: scopes,
      scope_path: scopes[1],
      reserved: { unit: 'USD_MICROCENTS', amount: 4_000 },
      balances: scopes.map((s) => before.get(`${s}#USD_MICROCENTS`)),
    });
  });

  it('persists nothing: no reservation in any listing, balances unchanged', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 5_000 });
    const before = await balancesOf(stack, t);
    const key = randomUUID();

    const res = await reserve(t, { idempotency_key: key, dry_run: true });

    expect(res.status).toBe(200);
    expect(await balancesOf(stack, t)).toEqual(before);
    expect((await listReservations(t)).body.reservations).toEqual([]);
    expect((await listReservations(t, `idempotency_key=${key}`)).body.reservations).toEqual([]);
    expect((await listReservations(t, 'status=ACTIVE')).body.reservations).toEqual([]);
  });

  it('leaves the idempotency key unused: a live reservation with the same key is created after it', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 5_000 });
    const key = randomUUID();
    await reserve(t, { idempotency_key: key, dry_run: true });

    const live = await reserve(t, { idempotency_key: key });

    expect(live.status).toBe(200);
    expect(live.body.reservation_id).toEqual(expect.any(String));
    const reservedNow = (await balancesOf(stack, t)).get(ledgerKey(t, 'workspace:w'))?.reserved;
    expect(reservedNow).toEqual({ unit: 'USD_MICROCENTS', amount: 100 });
  });

  it.each(CONDITIONS)('answers 200 DENY with reason_code %s, persisting nothing', async (code) => {
    const t = await givenCondition(code);
    const before = await balancesOf(stack, t);
    const activeBefore = (await listReservations(t)).body.reservations;

    const res = await reserve(t, { dry_run: true });

    expect(res.status).toBe(200);
    const scopes = [scopeOf(t, ''), scopeOf(t, 'workspace:w')];
    expect(res.body).toEqual({
      decision: 'DENY',
      reason_code: code,
      affected_scopes: scopes,
      scope_path: scopes[1],
      reserved: { unit: 'USD_MICROCENTS', amount: 100 },
      balances: scopes.map((s) => before.get(`${s}#USD_MICROCENTS`)),
    });
    expect(await balancesOf(stack, t)).toEqual(before);
    expect((await listReservations(t)).body.reservations).toEqual(activeBefore);
  });

  it.each(CONDITIONS)('a live reservation never answers DENY: %s is a 409 error', async (code) => {
    const t = await givenCondition(code);
    const before = await balancesOf(stack, t);

    const res = await reserve(t);

    expectError(res, 409, code);
    expect(res.body.decision).toBeUndefined();
    expect(await balancesOf(stack, t)).toEqual(before);
  });

  it('answers DENY BUDGET_EXCEEDED for a scope without a ledger, still naming every affected scope', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000);
    const before = await balancesOf(stack, t);

    const res = await reserve(t, { dry_run: true, subject: { workspace: 'w', app: 'none' } });

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      decision: 'DENY',
      reason_code: 'BUDGET_EXCEEDED',
      affected_scopes: [
        scopeOf(t, ''),
        scopeOf(t, 'workspace:w'),
        scopeOf(t, 'workspace:w/app:none'),
      ],
      scope_path: scopeOf(t, 'workspace:w/app:none'),
    });
    expect(res.body.balances).toEqual([before.get(`${scopeOf(t, '')}#USD_MICROCENTS`)]);
    expect(res.body).not.toHaveProperty('reservation_id');
    expect(res.body).not.toHaveProperty('expires_at_ms');
    expect(res.body).not.toHaveProperty('retry_after_ms');
  });

  it('allows exactly the remaining amount and denies one unit more', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 700 });

    const exact = await reserve(t, {
      dry_run: true,
      estimate: { unit: 'USD_MICROCENTS', amount: 700 },
    });
    const over = await reserve(t, {
      dry_run: true,
      estimate: { unit: 'USD_MICROCENTS', amount: 701 },
    });

    expect(exact.body.decision).toBe('ALLOW');
    expect(over.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_EXCEEDED' });
  });

  it("answers 403 for another tenant's subject, as a live reservation does", async () => {
    const t = await givenTenant(stack);

    const res = await reserve(t, {
      dry_run: true,
      subject: { tenant: 'someone-else', workspace: 'w' },
    });

    expectError(res, 403, 'FORBIDDEN');
  });
});

describe('POST /v1/decide', () => {
  const decideBody = (overrides: Json = {}) => reserveBody(overrides);

  it('answers 200 ALLOW with the affected scopes and nothing else', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 5_000 });
    const before = await balancesOf(stack, t);

    const res = await decide(t, decideBody());

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      decision: 'ALLOW',
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w')],
    });
    expect(await balancesOf(stack, t)).toEqual(before);
    expect((await listReservations(t)).body.reservations).toEqual([]);
  });

  it.each(CONDITIONS)('answers 200 DENY with reason_code %s, never 409', async (code) => {
    const t = await givenCondition(code);
    const before = await balancesOf(stack, t);

    const res = await decide(t, decideBody());

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      decision: 'DENY',
      reason_code: code,
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w')],
    });
    expect(await balancesOf(stack, t)).toEqual(before);
  });

  it('answers DENY BUDGET_EXCEEDED for a scope without any budget', async () => {
    const t = await givenTenant(stack);

    const res = await decide(t, decideBody({ subject: { agent: 'a1' } }));

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      decision: 'DENY',
      reason_code: 'BUDGET_EXCEEDED',
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'agent:a1')],
    });
  });

  it('replays the first answer for the same key and payload, even after the budget changed', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000);
    const body = decideBody({ subject: { app: 'x' } });
    const first = await decide(t, body);
    await givenBudget(stack, t, 'app:x', 10_000);

    const again = await decide(t, body);
    const fresh = await decide(t, { ...body, idempotency_key: randomUUID() });

    expect(first.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_EXCEEDED' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(fresh.body.decision).toBe('ALLOW');
  });

  it('answers 409 IDEMPOTENCY_MISMATCH for the same key with another payload', async () => {
    const t = await givenTenant(stack);
    const body = decideBody();
    await decide(t, body);

    const res = await decide(t, { ...body, estimate: { unit: 'USD_MICROCENTS', amount: 101 } });

    expectError(res, 409, 'IDEMPOTENCY_MISMATCH');
  });

  it('gives concurrent requests with one key one and the same answer', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 5_000 });
    const body = decideBody();

    const results = await Promise.all(Array.from({ length: 10 }, () => decide(t, body)));

    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    for (const r of results) expect(r.body).toEqual(results[0]?.body);
  });

  it("answers 403 FORBIDDEN for another tenant's subject", async () => {
    const t = await givenTenant(stack);

    const res = await decide(t, decideBody({ subject: { tenant: 'not-mine', workspace: 'w' } }));

    expectError(res, 403, 'FORBIDDEN');
  });

  it.each([
    ['no estimate', { estimate: undefined }],
    ['no action', { action: undefined }],
    ['no idempotency key', { idempotency_key: undefined }],
    ['a subject with only dimensions', { subject: { dimensions: { env: 'prod' } } }],
    ['a negative estimate', { estimate: { unit: 'USD_MICROCENTS', amount: -1 } }],
    ['a fractional estimate', { estimate: { unit: 'USD_MICROCENTS', amount: 1.5 } }],
    ['an unknown unit', { estimate: { unit: 'EUR', amount: 1 } }],
  ])('answers 400 INVALID_REQUEST for %s', async (_what, overrides) => {
    const t = await givenTenant(stack);

    const res = await decide(t, decideBody(overrides));

    expectError(res, 400, 'INVALID_REQUEST');
  });
});

describe('GET /v1/balances', () => {
  let t: GivenTenant;
  let other: GivenTenant;
  const usd = (rel: string) => `${scopeOf(t, rel)}#USD_MICROCENTS`;
  const tokens = (rel: string) => `${scopeOf(t, rel)}#TOKENS`;
  const keysOf = (balances: Balance[]) =>
    balances.map((b) => `${b.scope_path}#${b.allocated.unit}`);
  const sorted = (xs: string[]) => [...xs].sort();

  beforeAll(async () => {
    t = await givenTenant(stack);
    other = await givenTenant(stack);
    const usdScopes = [
      '',
      'workspace:w',
      'workspace:w/app:a',
      'workspace:w/app:a/workflow:f',
      'workspace:w/app:a/workflow:f/agent:g',
      'workspace:w/app:a/workflow:f/agent:g/toolset:s',
      'workspace:w/dimensions:env=prod',
      'workspace:w2',
      'workspace:w2/app:a',
      'app:a',
      'agent:g',
    ];
    await Promise.all(usdScopes.map((s) => givenBudget(stack, t, s, 1_000)));
    await givenBudget(stack, t, 'workspace:w', 77, { unit: 'TOKENS' });
    await givenBudgets(stack, other, { '': 1_000, 'workspace:w': 1_000 });
    await givenBudget(stack, other, 'workspace:w/app:a', 1_000);
  });

  /** workspace:w/app:a and the three ledgers below it. */
  const wAppA = () => [
    usd('workspace:w/app:a'),
    usd('workspace:w/app:a/workflow:f'),
    usd('workspace:w/app:a/workflow:f/agent:g'),
    usd('workspace:w/app:a/workflow:f/agent:g/toolset:s'),
  ];
  const ALL = () => [
    usd(''),
    usd('workspace:w'),
    tokens('workspace:w'),
    ...wAppA(),
    usd('workspace:w/dimensions:env=prod'),
    usd('workspace:w2'),
    usd('workspace:w2/app:a'),
    usd('app:a'),
    usd('agent:g'),
  ];

  it.each<[string, () => string[]]>([
    ['tenant=T', () => [usd('')]],
    ['workspace=w', () => [usd('workspace:w'), tokens('workspace:w')]],
    ['tenant=T&workspace=w', () => [usd('workspace:w'), tokens('workspace:w')]],
    ['app=a', () => [usd('workspace:w/app:a'), usd('workspace:w2/app:a'), usd('app:a')]],
    ['workspace=w&app=a', () => [usd('workspace:w/app:a')]],
    ['workspace=w2&app=a', () => [usd('workspace:w2/app:a')]],
    ['workflow=f', () => [usd('workspace:w/app:a/workflow:f')]],
    ['agent=g', () => [usd('workspace:w/app:a/workflow:f/agent:g'), usd('agent:g')]],
    ['workspace=w&agent=g', () => [usd('workspace:w/app:a/workflow:f/agent:g')]],
    ['toolset=s', () => [usd('workspace:w/app:a/workflow:f/agent:g/toolset:s')]],
    ['workspace=nowhere', () => []],
  ])(
    'without include_children, %s returns the ledgers at exactly the deepest filtered level',
    async (query, expected) => {
      const res = await listBalances(t, `${query.replace('tenant=T', `tenant=${t.tenant}`)}`);

      expect(res.status).toBe(200);
      expect(keysOf(res.body.balances)).toEqual(sorted(expected()));
      expect(res.body.has_more).toBe(false);
      expect(res.body).not.toHaveProperty('next_cursor');
    },
  );

  it.each<[string, () => string[]]>([
    ['tenant=T', () => ALL()],
    [
      'workspace=w',
      () => [
        usd('workspace:w'),
        tokens('workspace:w'),
        ...wAppA(),
        usd('workspace:w/dimensions:env=prod'),
      ],
    ],
    ['app=a', () => [...wAppA(), usd('workspace:w2/app:a'), usd('app:a')]],
    ['workspace=w&app=a', () => wAppA()],
    [
      'workflow=f',
      () => [
        usd('workspace:w/app:a/workflow:f'),
        usd('workspace:w/app:a/workflow:f/agent:g'),
        usd('workspace:w/app:a/workflow:f/agent:g/toolset:s'),
      ],
    ],
    [
      'agent=g',
      () => [
        usd('workspace:w/app:a/workflow:f/agent:g'),
        usd('workspace:w/app:a/workflow:f/agent:g/toolset:s'),
        usd('agent:g'),
      ],
    ],
    ['toolset=s', () => [usd('workspace:w/app:a/workflow:f/agent:g/toolset:s')]],
  ])('with include_children=true, %s also returns every ledger below', async (query, expected) => {
    const res = await listBalances(
      t,
      `${query.replace('tenant=T', `tenant=${t.tenant}`)}&include_children=true`,
    );

    expect(res.status).toBe(200);
    expect(keysOf(res.body.balances)).toEqual(sorted(expected()));
  });

  it('treats include_children=false like no include_children', async () => {
    const res = await listBalances(t, 'workspace=w&include_children=false');

    expect(keysOf(res.body.balances)).toEqual(sorted([usd('workspace:w'), tokens('workspace:w')]));
  });

  it("reports each ledger's current figures", async () => {
    const r = await reserve(t, {
      subject: { workspace: 'w2', app: 'a' },
      estimate: { unit: 'USD_MICROCENTS', amount: 40 },
    });
    await commit(t, String(r.body.reservation_id), 30);

    const res = await listBalances(t, 'workspace=w2&app=a');

    expect(res.body.balances).toEqual([
      {
        scope: scopeOf(t, 'workspace:w2/app:a'),
        scope_path: scopeOf(t, 'workspace:w2/app:a'),
        remaining: { unit: 'USD_MICROCENTS', amount: 970 },
        allocated: { unit: 'USD_MICROCENTS', amount: 1_000 },
        spent: { unit: 'USD_MICROCENTS', amount: 30 },
        reserved: { unit: 'USD_MICROCENTS', amount: 0 },
        debt: { unit: 'USD_MICROCENTS', amount: 0 },
        overdraft_limit: { unit: 'USD_MICROCENTS', amount: 0 },
        is_over_limit: false,
      },
    ]);
  });

  it("never shows another tenant's ledgers, even with the same segment names", async () => {
    const mine = await listBalances(t, 'workspace=w&include_children=true');
    const theirs = await listBalances(other, 'workspace=w&include_children=true');

    expect(mine.body.balances.every((b) => b.scope_path.startsWith(`tenant:${t.tenant}/`))).toBe(
      true,
    );
    expect(keysOf(theirs.body.balances)).toEqual([
      `tenant:${other.tenant}/workspace:w#USD_MICROCENTS`,
      `tenant:${other.tenant}/workspace:w/app:a#USD_MICROCENTS`,
    ]);
  });

  it.each(['', 'include_children=true', 'limit=10', 'dimensions=env'])(
    'answers 400 INVALID_REQUEST without a subject filter (?%s)',
    async (query) => {
      const res = await listBalances(t, query);

      expectError(res, 400, 'INVALID_REQUEST');
    },
  );

  it.each(['tenant=OTHER', 'tenant=OTHER&workspace=w', 'tenant=OTHER&include_children=true'])(
    "answers 403 FORBIDDEN for another tenant's name (%s)",
    async (query) => {
      const res = await listBalances(t, query.replace('OTHER', other.tenant));

      expectError(res, 403, 'FORBIDDEN');
    },
  );

  it.each(['0', '201', '-1', '1.5', 'ten'])('answers 400 for limit=%s', async (limit) => {
    const res = await listBalances(t, `tenant=${t.tenant}&include_children=true&limit=${limit}`);

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('accepts limit=1 and limit=200, answering at most that many', async () => {
    const one = await listBalances(t, `tenant=${t.tenant}&include_children=true&limit=1`);
    const max = await listBalances(t, `tenant=${t.tenant}&include_children=true&limit=200`);

    expect(one.status).toBe(200);
    expect(keysOf(one.body.balances)).toEqual([sorted(ALL())[0]]);
    expect(one.body.has_more).toBe(true);
    expect(one.body.next_cursor).toEqual(expect.any(String));
    expect(max.status).toBe(200);
    expect(keysOf(max.body.balances)).toEqual(sorted(ALL()));
    expect(max.body.has_more).toBe(false);
    expect(max.body).not.toHaveProperty('next_cursor');
  });

  it('pages through a filtered set in path order with has_more and next_cursor', async () => {
    const seen: string[] = [];
    const pages: boolean[] = [];
    let cursor: string | undefined;

    do {
      const res = await listBalances(
        t,
        `workspace=w&include_children=true&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      seen.push(...keysOf(res.body.balances));
      pages.push(res.body.has_more);
      expect(res.body.has_more).toBe(res.body.next_cursor !== undefined);
      cursor = res.body.next_cursor;
    } while (cursor);

    expect(seen).toEqual(
      sorted(keysOf((await listBalances(t, 'workspace=w&include_children=true')).body.balances)),
    );
    expect(seen).toHaveLength(7);
    expect(pages).toEqual([true, true, true, false]);
  });
});

describe('GET /v1/reservations', () => {
  let t: GivenTenant;
  let other: GivenTenant;
  const ids: Record<string, string> = {};
  const idemKeys: Record<string, string> = {};
  const idsOf = (rs: Reservation[]) => rs.map((r) => r.reservation_id);
  const newestFirst = (...names: string[]) => [...names].reverse().map((n) => ids[n]);

  beforeAll(async () => {
    t = await givenTenant(stack);
    other = await givenTenant(stack);
    for (const s of [
      '',
      'workspace:w',
      'workspace:w/app:a',
      'workspace:w/app:b',
      'workspace:w/app:a/workflow:f',
      'workspace:w/app:a/workflow:f/agent:g',
      'workspace:w/app:a/workflow:f/agent:g/toolset:s',
      'workspace:w2',
      'workspace:w2/app:a',
      'app:a',
      'agent:g',
    ]) {
      await givenBudget(stack, t, s, 1_000_000);
    }
    await givenBudgets(stack, other, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const subjects: Record<string, Json> = {
      r1: { workspace: 'w' },
      r2: { workspace: 'w', app: 'a' },
      r3: { workspace: 'w', app: 'a', workflow: 'f', agent: 'g', toolset: 's' },
      r4: { workspace: 'w2', app: 'a' },
      r5: { app: 'a' },
      r6: { agent: 'g' },
      r7: { workspace: 'w', app: 'b' },
    };
    // One at a time, a few ms of server time apart, so "newest first" has one right answer.
    for (const [name, subject] of Object.entries(subjects)) {
      idemKeys[name] = `key-${name}-${randomUUID()}`;
      ids[name] = await reserveOk(t, { idempotency_key: idemKeys[name], subject });
      clock.advance(3);
    }
    await commit(t, ids.r2 ?? '', 50);
    await release(t, ids.r7 ?? '');
    await reserveOk(other, { subject: { workspace: 'w' } });
  });

  it('lists every reservation of the tenant, newest first', async () => {
    const res = await listReservations(t);

    expect(res.status).toBe(200);
    expect(idsOf(res.body.reservations)).toEqual(
      newestFirst('r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'),
    );
    expect(res.body.has_more).toBe(false);
    expect(res.body).not.toHaveProperty('next_cursor');
  });

  it.each<[string, string[]]>([
    ['workspace=w', ['r1', 'r2', 'r3', 'r7']],
    ['app=a', ['r2', 'r3', 'r4', 'r5']],
    ['workspace=w&app=a', ['r2', 'r3']],
    ['workspace=w2&app=a', ['r4']],
    ['workflow=f', ['r3']],
    ['agent=g', ['r3', 'r6']],
    ['toolset=s', ['r3']],
    ['workspace=nowhere', []],
    ['status=ACTIVE', ['r1', 'r3', 'r4', 'r5', 'r6']],
    ['status=COMMITTED', ['r2']],
    ['status=RELEASED', ['r7']],
    ['status=EXPIRED', []],
    ['workspace=w&status=ACTIVE', ['r1', 'r3']],
    ['app=a&status=COMMITTED', ['r2']],
    ['tenant=T', ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']],
    ['tenant=T&agent=g', ['r3', 'r6']],
  ])('filters on %s', async (query, expected) => {
    const res = await listReservations(t, query.replace('tenant=T', `tenant=${t.tenant}`));

    expect(res.status).toBe(200);
    expect(idsOf(res.body.reservations)).toEqual(newestFirst(...expected));
  });

  it('shows the current status and committed amount of each reservation', async () => {
    const res = await listReservations(t, 'workspace=w&app=a');

    expect(res.body.reservations[0]).toMatchObject({
      reservation_id: ids.r3,
      status: 'ACTIVE',
      idempotency_key: idemKeys.r3,
    });
    expect(res.body.reservations[1]).toMatchObject({
      reservation_id: ids.r2,
      status: 'COMMITTED',
      committed: { unit: 'USD_MICROCENTS', amount: 50 },
    });
  });

  it('finds exactly one reservation by idempotency_key, right after it was created', async () => {
    const key = `fresh-${randomUUID()}`;
    const id = await reserveOk(t, { idempotency_key: key, subject: { workspace: 'w2' } });

    const res = await listReservations(t, `idempotency_key=${key}`);

    expect(res.status).toBe(200);
    expect(idsOf(res.body.reservations)).toEqual([id]);
    expect(res.body.reservations[0]?.idempotency_key).toBe(key);
    expect(res.body.has_more).toBe(false);
    await release(t, id);
  });

  it.each<[string, string[]]>([
    ['idempotency_key=K3', ['r3']],
    ['idempotency_key=K3&status=ACTIVE', ['r3']],
    ['idempotency_key=K3&status=COMMITTED', []],
    ['idempotency_key=K3&workspace=w2', []],
    ['idempotency_key=unknown-key', []],
  ])('combines idempotency_key with other filters: %s', async (query, expected) => {
    const res = await listReservations(
      t,
      query.replace('K3', encodeURIComponent(idemKeys.r3 ?? '')),
    );

    expect(res.status).toBe(200);
    expect(idsOf(res.body.reservations)).toEqual(expected.map((n) => ids[n]));
  });

  it("never shows another tenant's reservations, even by their idempotency key", async () => {
    const all = await listReservations(other);
    const sameWorkspace = await listReservations(other, 'workspace=w');
    const byKey = await listReservations(other, `idempotency_key=${idemKeys.r1}`);

    const mine = new Set(Object.values(ids));
    expect(all.body.reservations).toHaveLength(1);
    expect(all.body.reservations.some((r) => mine.has(r.reservation_id))).toBe(false);
    expect(sameWorkspace.body.reservations.some((r) => mine.has(r.reservation_id))).toBe(false);
    expect(byKey.body.reservations).toEqual([]);
  });

  it('answers 403 FORBIDDEN for ?tenant= naming another tenant', async () => {
    const res = await listReservations(other, `tenant=${t.tenant}`);

    expectError(res, 403, 'FORBIDDEN');
  });

  it.each([
    'limit=0',
    'limit=201',
    'limit=x',
    'status=PENDING',
    `idempotency_key=${'k'.repeat(257)}`,
    'workspace=a%20b',
  ])('answers 400 INVALID_REQUEST for %s', async (query) => {
    const res = await listReservations(t, query);

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('pages with limit and cursor: limit=1 and limit=200 are accepted', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await listReservations(
        t,
        `workspace=w&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.reservations.length).toBeLessThanOrEqual(1);
      seen.push(...idsOf(res.body.reservations));
      cursor = res.body.next_cursor;
    } while (cursor);
    const max = await listReservations(t, 'workspace=w&limit=200');

    expect(seen).toEqual(newestFirst('r1', 'r2', 'r3', 'r7'));
    expect(idsOf(max.body.reservations)).toEqual(seen);
  });
});

describe('GET /v1/reservations/{reservation_id}', () => {
  let t: GivenTenant;
  const idsOf = (rs: Reservation[]) => rs.map((r) => r.reservation_id);
  beforeAll(async () => {
    t = await givenTenant(stack);
    await givenBudgets(stack, t, { '': 1_000_000, 'workspace:w': 1_000_000 });
    await givenBudget(stack, t, 'workspace:w/app:a', 1_000_000);
  });

  it('returns every field of an ACTIVE reservation, metadata included, and no committed yet', async () => {
    const key = randomUUID();
    // Server time (the test clock, which earlier tests moved forward), not Date.now().
    const startedAt = clock.now();
    const created = await reserve(t, {
      idempotency_key: key,
      subject: { tenant: t.tenant, workspace: 'w', app: 'a' },
      action: { kind: 'llm.completion', name: 'model-x', tags: ['prod', 'batch'] },
      estimate: { unit: 'USD_MICROCENTS', amount: 250 },
      ttl_ms: 120_000,
      metadata: { run: 'r-1', nested: { depth: 2, list: [1, 'two', true] } },
    });
    const finishedAt = clock.now();
    const id = String(created.body.reservation_id);

    const res = await getReservation(t, id);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      reservation_id: id,
      status: 'ACTIVE',
      idempotency_key: key,
      subject: { tenant: t.tenant, workspace: 'w', app: 'a' },
      action: { kind: 'llm.completion', name: 'model-x', tags: ['prod', 'batch'] },
      reserved: { unit: 'USD_MICROCENTS', amount: 250 },
      created_at_ms: expect.any(Number),
      expires_at_ms: created.body.expires_at_ms,
      scope_path: scopeOf(t, 'workspace:w/app:a'),
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w'), scopeOf(t, 'workspace:w/app:a')],
      metadata: { run: 'r-1', nested: { depth: 2, list: [1, 'two', true] } },
    });
    expect(res.body.created_at_ms).toBeGreaterThanOrEqual(startedAt);
    expect(res.body.created_at_ms).toBeLessThanOrEqual(finishedAt);
    expect(res.body.expires_at_ms - res.body.created_at_ms).toBe(120_000);
  });

  it('adds committed and finalized_at_ms once committed', async () => {
    const id = await reserveOk(t, { estimate: { unit: 'USD_MICROCENTS', amount: 300 } });
    const before = await getReservation(t, id);
    const committedAt = clock.now();
    await commit(t, id, 275);

    const res = await getReservation(t, id);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...before.body,
      status: 'COMMITTED',
      committed: { unit: 'USD_MICROCENTS', amount: 275 },
      finalized_at_ms: expect.any(Number),
    });
    expect(res.body.finalized_at_ms).toBeGreaterThanOrEqual(committedAt);
  });

  it('adds finalized_at_ms, but no committed, once released', async () => {
    const id = await reserveOk(t);
    await release(t, id);

    const res = await getReservation(t, id);

    expect(res.body.status).toBe('RELEASED');
    expect(res.body.finalized_at_ms).toEqual(expect.any(Number));
    expect(res.body).not.toHaveProperty('committed');
  });

  it('shows the moved expires_at_ms after an extend', async () => {
    const id = await reserveOk(t);
    const before = await getReservation(t, id);
    await request('POST', rt(`/v1/reservations/${id}/extend`), {
      headers: t.headers,
      body: { idempotency_key: randomUUID(), extend_by_ms: 30_000 },
    });

    const res = await getReservation(t, id);

    expect(res.body.expires_at_ms).toBe(before.body.expires_at_ms + 30_000);
    expect(res.body.status).toBe('ACTIVE');
  });

  it("answers 403 FORBIDDEN for another tenant's reservation", async () => {
    const id = await reserveOk(t);
    const intruder = await givenTenant(stack);

    const res = await getReservation(intruder, id);

    expectError(res, 403, 'FORBIDDEN');
    expect(JSON.stringify(res.body)).not.toContain(t.tenant);
  });

  it('answers 404 NOT_FOUND for an id that never existed', async () => {
    const res = await getReservation(t, `rsv_${'0'.repeat(32)}`);

    expectError(res, 404, 'NOT_FOUND');
  });

  it('answers 400 for an id longer than 128 characters', async () => {
    const res = await getReservation(t, 'r'.repeat(129));

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it('answers 410 RESERVATION_EXPIRED past TTL plus grace, before and after the sweep, with the reservation in details', async () => {
    const expiring = await reserveOk(t, { ttl_ms: 1_000, grace_period_ms: 0 });
    const inGrace = await reserveOk(t, { ttl_ms: 1_000, grace_period_ms: 60_000 });
    clock.advance(1_150);

    const unswept = await getReservation(t, expiring);
    const graced = await getReservation(t, inGrace);
    const stuck = await listReservations(t, 'status=ACTIVE');
    const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');
    await sweepOnce();
    const swept = await getReservation(t, expiring);
    const expiredList = await listReservations(t, 'status=EXPIRED');

    expect(expectError(unswept, 410, 'RESERVATION_EXPIRED').details).toMatchObject({
      reservation: { reservation_id: expiring, status: 'EXPIRED' },
    });
    expect(graced.status).toBe(200);
    expect(graced.body.status).toBe('ACTIVE');
    expect(idsOf(stuck.body.reservations)).toContain(expiring);
    expect(expectError(swept, 410, 'RESERVATION_EXPIRED').details).toMatchObject({
      reservation: {
        reservation_id: expiring,
        status: 'EXPIRED',
        reserved: { unit: 'USD_MICROCENTS', amount: 100 },
        finalized_at_ms: expect.any(Number),
      },
    });
    expect(idsOf(expiredList.body.reservations)).toEqual([expiring]);
  });
});

describe('cursors', () => {
  let t: GivenTenant;
  let other: GivenTenant;
  beforeAll(async () => {
    t = await givenTenant(stack);
    other = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    for (const w of ['a', 'b', 'c']) {
      await givenBudget(stack, t, `workspace:${w}`, 1_000_000);
      await givenBudget(stack, t, `workspace:${w}/app:x`, 1_000_000);
    }
    for (const w of ['a', 'a', 'b', 'b']) await reserveOk(t, { subject: { workspace: w } });
    await givenBudget(stack, other, '', 1_000_000);
  });

  const cursorOf = async (who: GivenTenant, path: string): Promise<string> => {
    const res = await request('GET', rt(path), { headers: who.headers });
    const cursor = res.body.next_cursor;
    if (typeof cursor !== 'string') throw new Error(`no cursor: ${JSON.stringify(res.body)}`);
    return cursor;
  };
  const withCursor = (who: GivenTenant, path: string, cursor: string) =>
    request('GET', rt(`${path}&cursor=${encodeURIComponent(cursor)}`), { headers: who.headers });
  const flip = (s: string, at: number) =>
    `${s.slice(0, at)}${s[at] === 'A' ? 'B' : 'A'}${s.slice(at + 1)}`;

  it('accepts its own cursor back', async () => {
    const cursor = await cursorOf(
      t,
      '/v1/balances?include_children=true&tenant=T&limit=2'.replace('T', t.tenant),
    );

    const res = await withCursor(
      t,
      `/v1/balances?include_children=true&tenant=${t.tenant}&limit=2`,
      cursor,
    );

    expect(res.status).toBe(200);
  });

  it.each([
    ['balances', '/v1/balances?workspace=a&include_children=true&limit=1'],
    ['reservations', '/v1/reservations?workspace=a&limit=1'],
  ])('refuses a tampered %s cursor with 400 INVALID_REQUEST', async (_route, path) => {
    const cursor = await cursorOf(t, path);
    const [payload = '', mac = ''] = cursor.split('.');
    const forged = [
      flip(cursor, cursor.length - 1),
      flip(cursor, 0),
      `${Buffer.from(JSON.stringify({ p: 'zzzz' })).toString('base64url')}.${mac}`,
      `${payload}.`,
      payload,
      'not-a-cursor',
      `${cursor}x`,
    ];

    const results = await Promise.all(forged.map((c) => withCursor(t, path, c)));

    for (const res of results) expectError(res, 400, 'INVALID_REQUEST');
  });

  it.each([
    [
      '/v1/balances?workspace=a&include_children=true&limit=1',
      '/v1/balances?workspace=b&include_children=true&limit=1',
    ],
    ['/v1/balances?workspace=a&include_children=true&limit=1', '/v1/balances?workspace=a&limit=1'],
    [
      '/v1/balances?workspace=a&include_children=true&limit=1',
      '/v1/balances?app=x&include_children=true&limit=1',
    ],
    ['/v1/reservations?workspace=a&limit=1', '/v1/reservations?workspace=b&limit=1'],
    ['/v1/reservations?workspace=a&limit=1', '/v1/reservations?status=ACTIVE&limit=1'],
    ['/v1/reservations?limit=1', '/v1/reservations?workspace=a&limit=1'],
    [
      '/v1/reservations?workspace=a&limit=1',
      '/v1/balances?workspace=a&include_children=true&limit=1',
    ],
    [
      '/v1/balances?workspace=a&include_children=true&limit=1',
      '/v1/reservations?workspace=a&limit=1',
    ],
  ])('refuses a cursor from %s reused on %s with 400', async (from, to) => {
    const cursor = await cursorOf(t, from);

    const res = await withCursor(t, to, cursor);

    expectError(res, 400, 'INVALID_REQUEST');
  });

  it.each(['/v1/balances?workspace=a&include_children=true&limit=1', '/v1/reservations?limit=1'])(
    "refuses another tenant's cursor for %s with 400",
    async (path) => {
      const cursor = await cursorOf(t, path);

      const res = await withCursor(other, path, cursor);

      expectError(res, 400, 'INVALID_REQUEST');
    },
  );
});

describe('pagination under concurrent writes', () => {
  const INITIAL = 300;

  /** A throttled background writer; `done` lists the items whose write has completed. */
  function startWriter(write: (n: number) => Promise<string>) {
    let stopped = false;
    let n = 0;
    const done: string[] = [];
    const lane = (async () => {
      while (!stopped) {
        done.push(await write(n++));
        await sleep(60);
      }
    })();
    return {
      done,
      async untilMoreThan(count: number) {
        while (done.length <= count) await sleep(5);
      },
      async stop() {
        stopped = true;
        await lane;
      },
    };
  }

  /** Walks every page of `path`; `afterFirstPage` lets a concurrent write land mid-walk. */
  async function walk<T>(
    who: GivenTenant,
    path: string,
    listKey: 'balances' | 'reservations',
    limit: number,
    idOf: (item: T) => string,
    afterFirstPage: () => Promise<void> = async () => undefined,
  ): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const url = `${path}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await request('GET', rt(url), { headers: who.headers });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const page = res.body[listKey] as T[];
      expect(page.length).toBeLessThanOrEqual(limit);
      expect(res.body.has_more).toBe(res.body.next_cursor !== undefined);
      items.push(...page);
      cursor = res.body.next_cursor as string | undefined;
      if (++pages === 1) await afterFirstPage();
      expect(pages).toBeLessThan(2_000);
    } while (cursor);
    expect(new Set(items.map(idOf)).size).toBe(items.length);
    return items;
  }

  /** Walks while `writer` keeps writing, and records what existed when the walk started. */
  async function walkDuringWrites<T>(
    writer: ReturnType<typeof startWriter>,
    existing: readonly string[],
    ...args: Parameters<typeof walk<T>>
  ) {
    const pre = new Set([...existing, ...writer.done]);
    const writesAtStart = writer.done.length;
    const [who, path, listKey, limit, idOf] = args;
    const items = await walk<T>(who, path, listKey, limit, idOf, () =>
      writer.untilMoreThan(writesAtStart),
    );
    return { pre, items, writesDuring: writer.done.length - writesAtStart };
  }

  it('visits every reservation that existed before the walk exactly once, newest first, at limits 1, 7 and 200', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000_000, 'workspace:w': 1_000_000_000 });
    const initial = await inPool(INITIAL, 10, () => reserveOk(t, { subject: { workspace: 'w' } }));
    const defaultPage = await listReservations(t);
    const writer = startWriter(() => reserveOk(t, { subject: { workspace: 'w' } }));
    const walks = [];

    for (const [limit, path] of [
      [1, `/v1/reservations?tenant=${t.tenant}`],
      [7, '/v1/reservations?workspace=w'],
      [200, '/v1/reservations?status=ACTIVE'],
    ] as const) {
      walks.push(
        await walkDuringWrites<Reservation>(
          writer,
          initial,
          t,
          path,
          'reservations',
          limit,
          (r) => r.reservation_id,
        ),
      );
    }
    await writer.stop();
    const finalOrder = (
      await walk<Reservation>(
        t,
        '/v1/reservations?workspace=w',
        'reservations',
        200,
        (r) => r.reservation_id,
      )
    ).map((r) => r.reservation_id);

    expect(defaultPage.body.reservations).toHaveLength(50);
    expect(defaultPage.body.has_more).toBe(true);
    const known = new Set([...initial, ...writer.done]);
    for (const { pre, items, writesDuring } of walks) {
      const visited = items.map((r) => r.reservation_id);
      expect(writesDuring).toBeGreaterThan(0);
      expect(visited.filter((id) => pre.has(id))).toHaveLength(pre.size);
      expect(visited.every((id) => known.has(id))).toBe(true);
      const created = items.map((r) => r.created_at_ms);
      expect(created).toEqual([...created].sort((a, b) => b - a));
      expect(visited.filter((id) => pre.has(id))).toEqual(finalOrder.filter((id) => pre.has(id)));
    }
  });

  it('visits every ledger that existed before the walk exactly once, in path order, at limits 1, 7 and 200', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    const pad = (i: number) => String(i).padStart(3, '0');
    const rels = [
      ...Array.from({ length: 160 }, (_, i) => `workspace:w${pad(i)}`),
      ...Array.from({ length: INITIAL - 160 }, (_, i) => `workspace:w${pad(2 * i)}/app:a`),
    ];
    await inPool(rels.length, 10, (i) => givenBudget(stack, t, rels[i] ?? '', 1_000));
    const all = new Set(
      [scopeOf(t, ''), ...rels.map((r) => scopeOf(t, r))].map((s) => `${s}#USD_MICROCENTS`),
    );
    // New ledgers land all over the path order, before and after the walk's position.
    const writer = startWriter(async (n) => {
      const rel = `workspace:w${pad((n * 37) % 160)}-new${n}`;
      await givenBudget(stack, t, rel, 1_000);
      return `${scopeOf(t, rel)}#USD_MICROCENTS`;
    });
    const keyOf = (b: Balance) => `${b.scope_path}#${b.allocated.unit}`;
    const defaultPage = await listBalances(t, `tenant=${t.tenant}&include_children=true`);
    const walks = [];

    for (const limit of [1, 7, 200]) {
      walks.push(
        await walkDuringWrites<Balance>(
          writer,
          [...all],
          t,
          `/v1/balances?tenant=${t.tenant}&include_children=true`,
          'balances',
          limit,
          keyOf,
        ),
      );
    }
    await writer.stop();

    expect(defaultPage.body.balances).toHaveLength(50);
    expect(defaultPage.body.has_more).toBe(true);
    expect(all.size).toBeGreaterThanOrEqual(INITIAL);
    const known = new Set([...all, ...writer.done]);
    for (const { pre, items, writesDuring } of walks) {
      const visited = items.map(keyOf);
      expect(writesDuring).toBeGreaterThan(0);
      expect(visited.filter((k) => pre.has(k))).toHaveLength(pre.size);
      expect(visited.every((k) => known.has(k))).toBe(true);
      expect(visited).toEqual([...visited].sort());
    }
  });
});

describe('case of standard subject values', () => {
  it('makes Prod, PROD and prod one scope: budget, reservation, balances and listings agree', async () => {
    const t = await givenTenant(stack);
    const created = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: `${scopeOf(t, '')}/workspace:Prod`,
        unit: 'USD_MICROCENTS',
        allocated: { unit: 'USD_MICROCENTS', amount: 1_000 },
      },
    });
    await givenBudget(stack, t, '', 10_000);

    const id = await reserveOk(t, { subject: { workspace: 'PROD' } });
    const got = await request('GET', rt(`/v1/reservations/${id}`), { headers: t.headers });
    const balances = await request('GET', rt('/v1/balances?workspace=pRoD'), {
      headers: t.headers,
    });
    const listed = await request('GET', rt('/v1/reservations?workspace=prod'), {
      headers: t.headers,
    });

    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.scope).toBe(`${scopeOf(t, '')}/workspace:prod`);
    expect(got.body.subject).toMatchObject({ workspace: 'PROD' });
    expect(got.body.scope_path).toBe(`${scopeOf(t, '')}/workspace:prod`);
    const [balance] = balances.body.balances as Balance[];
    expect(balance?.scope).toBe(`${scopeOf(t, '')}/workspace:prod`);
    expect(balance?.reserved.amount).toBe(100);
    expect((listed.body.reservations as Reservation[]).map((r) => r.reservation_id)).toEqual([id]);
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
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const q = `cursor=${encodeURIComponent(cursor)}`;

    const reservations = await request('GET', rt(`/v1/reservations?${q}`), { headers: t.headers });
    const balances = await request('GET', rt(`/v1/balances?tenant=${t.tenant}&${q}`), {
      headers: t.headers,
    });

    expectError(reservations, 400, 'INVALID_REQUEST');
    expectError(balances, 400, 'INVALID_REQUEST');
  });
});
