import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  fund,
  type GivenTenant,
  givenBudget,
  givenTenant,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Budgets split into escrow shards (docs/scaling.md): every answer and every balance must be
// what the same budget unsharded would give, to the unit, under concurrency too. The shard
// items are read straight from the table to see that the load really spreads.
const clock = testClock();
const stack = useTestStack({ clock });
const { reserve, commit, release, charge, refund } = reservationsApi(stack);

let table: DynamoDBDocumentClient | undefined;
afterAll(() => table?.destroy());

/** The counters of each shard of a budget, straight from the table. */
async function shardsOf(t: GivenTenant, rel: string, n: number) {
  table ??= DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.dynamoEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  const base = `LEDGER#${scopeOf(t, rel)}#USD_MICROCENTS`;
  const out = [];
  for (let k = 0; k < n; k++) {
    const { Item } = await table.send(
      new GetCommand({
        TableName: process.env.TABLE_NAME,
        Key: { pk: k === 0 ? base : `${base}#${k}`, sk: '-' },
      }),
    );
    out.push(Item);
  }
  return out;
}

/** A tenant with a sharded root budget and an unsharded workspace under it. */
async function shardedTenant(
  root: number,
  shards: number,
  options: { overdraftLimit?: number } = {},
) {
  const t = await givenTenant(stack);
  await givenBudget(stack, t, '', root, { shards, ...options });
  await givenBudget(stack, t, 'workspace:w', 1_000_000);
  return t;
}

describe('a budget split into shards', () => {
  it('is created with its allocation split evenly, and shows as one budget', async () => {
    const t = await shardedTenant(1_003, 4);

    const shards = await shardsOf(t, '', 4);

    expect(shards.map((s) => s?.remaining)).toEqual([251, 251, 251, 250]);
    expect(shards[0]?.shards).toBe(4);
    expect((await ledgers(stack, t))['']).toEqual(L(1_003, 0, 0, 0, 1_003));
  });

  it('refuses shards outside 1..64 with 400', async () => {
    const t = await givenTenant(stack);
    for (const shards of [0, 65, 1.5]) {
      const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
        headers: adminHeaders,
        body: { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS', allocated: usd(10), shards },
      });
      expectError(res, 400, 'INVALID_REQUEST');
    }
  });

  it('takes 64 shards on one budget, and refuses more shards on its paths than one transaction holds', async () => {
    const t = await shardedTenant(64_000, 64);
    const create = (rel: string, shards: number) =>
      request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
        headers: adminHeaders,
        body: { scope: scopeOf(t, rel), unit: 'USD_MICROCENTS', allocated: usd(10_000), shards },
      });

    // Root 63 extra + agent a 13 extra = 76, the most one path may add.
    const agent = await create('workspace:w/agent:a', 14);
    const tooMany = await create('workspace:w/agent:a/toolset:t', 2);
    const sibling = await create('workspace:w/agent:b', 14);
    const otherUnit = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: scopeOf(t, 'workspace:w/agent:a/toolset:t'),
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 10 },
        shards: 64,
      },
    });
    // Overage beyond every single shard: the exact path rewrites all 64 + 1 + 14 ledgers at once.
    const r = await reserve(t, {
      subject: { tenant: t.tenant, workspace: 'w', agent: 'a' },
      estimate: usd(900),
      overage_policy: 'ALLOW_IF_AVAILABLE',
    });
    const committed = await commit(t, r.body.reservation_id, { actual: usd(9_500) });

    expect([agent.status, sibling.status, otherUnit.status]).toEqual([201, 201, 201]);
    expectError(tooMany, 400, 'INVALID_REQUEST');
    expect(r.status).toBe(200);
    expect(committed.status).toBe(200);
    expect((await ledgers(stack, t))['']).toEqual(L(64_000, 9_500, 0, 0, 54_500));
    const shards = await shardsOf(t, '', 64);
    expect(shards.reduce((sum, s) => sum + Number(s?.remaining), 0)).toBe(54_500);
    expect(shards.every((s) => Number(s?.remaining) >= 0)).toBe(true);
  });

  it('admits exactly what the whole budget covers under concurrency, spreading holds over shards', async () => {
    const t = await shardedTenant(3_000, 4);

    const results = await Promise.all(
      Array.from({ length: 40 }, () => reserve(t, { estimate: usd(100) })),
    );

    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, 409, 'BUDGET_EXCEEDED');
    expect((await ledgers(stack, t))['']).toEqual(L(3_000, 0, 3_000, 0, 0));
    const shards = await shardsOf(t, '', 4);
    expect(shards.reduce((sum, s) => sum + Number(s?.reserved), 0)).toBe(3_000);
  });

  it('uses the whole budget even when no single shard could hold the amount', async () => {
    const t = await shardedTenant(1_000, 4);

    const big = await reserve(t, { estimate: usd(900) });
    const over = await reserve(t, { estimate: usd(101) });
    const rest = await reserve(t, { estimate: usd(100) });

    expect([big.status, rest.status]).toEqual([200, 200]);
    expectError(over, 409, 'BUDGET_EXCEEDED');
    expect(over.body.details).toMatchObject({ remaining: 100, requested: 101 });
    expect((await ledgers(stack, t))['']).toEqual(L(1_000, 0, 1_000, 0, 0));
  });

  it('settles commits and releases on the shard of each hold, exactly', async () => {
    const t = await shardedTenant(10_000, 8);
    const held = await Promise.all(
      Array.from({ length: 16 }, () => reserve(t, { estimate: usd(500) })),
    );
    expect(held.every((r) => r.status === 200)).toBe(true);

    const settled = await Promise.all(
      held.map((r, i) =>
        i % 2 === 0
          ? commit(t, r.body.reservation_id, { actual: usd(300) })
          : release(t, r.body.reservation_id),
      ),
    );

    expect(settled.map((r) => r.status)).toEqual(held.map(() => 200));
    expect((await ledgers(stack, t))['']).toEqual(L(10_000, 2_400, 0, 0, 7_600));
    const shards = await shardsOf(t, '', 8);
    expect(shards.map((s) => s?.reserved)).toEqual(shards.map(() => 0));
    expect(shards.every((s) => Number(s?.remaining) >= 0)).toBe(true);
  });

  it('answers a settlement with whole balances when its hold’s shard was cached before the hold', async () => {
    // As when another process took the holds: this process's shard cache still shows the shards
    // as they were before them (store/budgets/shard-cache.ts), and a commit gives a hold back.
    const { mark, rememberShard } = await import('../../functions/store/budgets/shard-cache.js');
    const t = await shardedTenant(10_000, 4);
    const before = await shardsOf(t, '', 4);
    const held = await Promise.all(
      Array.from({ length: 8 }, () => reserve(t, { estimate: usd(100) })),
    );
    expect(held.map((r) => r.status)).toEqual(held.map(() => 200));
    const ref = { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS' as const };
    for (let k = 1; k < 4; k++) {
      const stale = before[k];
      if (stale) rememberShard(ref, k, stale, mark());
    }

    for (const r of held) {
      const committed = await commit(t, r.body.reservation_id, { actual: usd(60) });
      expect(committed.status).toBe(200);
      const root = (committed.body.balances as Json[]).find((b) => b.scope === ref.scope) ?? {};
      // At most a second stale, never impossible: the hold's own shard was read afresh (the
      // cached one, given the hold back, answered a negative `reserved`).
      expect((root.reserved as Json).amount).toBeGreaterThanOrEqual(0);
    }
    expect((await ledgers(stack, t))['']).toEqual(L(10_000, 480, 0, 0, 9_520));
  });

  it('answers charges and refunds with whole balances when their shards were cached before the holds and the charges', async () => {
    // As when another process took the holds and charged them: this process's shard cache shows
    // the shards as they were before (store/budgets/shard-cache.ts). A charge gives part of a
    // hold back on its shard, a refund takes spent back there.
    const { mark, rememberShard } = await import('../../functions/store/budgets/shard-cache.js');
    const { readHeldShards } = await import('../../functions/store/budgets/read.js');
    const { readReservation } = await import('../../functions/store/reservation-queries.js');
    const { shardKey } = await import('../../functions/store/entities/ledger.js');
    const t = await shardedTenant(10_000, 4);
    const ref = { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS' as const };
    const cache = (shards: readonly (Json | undefined)[]) => {
      for (let k = 1; k < 4; k++) {
        const stale = shards[k];
        if (stale) rememberShard(ref, k, stale, mark());
      }
    };
    const root = (res: { body: Json }) =>
      (res.body.balances as Json[]).find((b) => b.scope === ref.scope) as Json;
    const before = await shardsOf(t, '', 4);
    const held = await Promise.all(
      Array.from({ length: 8 }, () => reserve(t, { estimate: usd(100) })),
    );
    expect(held.map((r) => r.status)).toEqual(held.map(() => 200));
    const ids = held.map((r) => String(r.body.reservation_id));
    const holding = await shardsOf(t, '', 4);

    cache(before);
    for (const id of ids) {
      const charged = await charge(t, id, { amount: usd(30) });
      expect(charged.status).toBe(200);
      expect((root(charged).reserved as Json).amount).toBeGreaterThanOrEqual(0);
    }
    for (const id of ids) expect((await commit(t, id, { actual: usd(60) })).status).toBe(200);

    // Cached with the holds but before the charges: room for the hold, none of its spent. The
    // refund's read takes its hold's shard afresh.
    let onShards = 0;
    for (const id of ids) {
      const r = await readReservation(id);
      const hold = r?.holds.find((h) => h.scope === ref.scope);
      if (!r || !hold || hold.shard < 1) continue;
      cache(holding); // the cache keeps a shard a second
      const items = new Map();
      await readHeldShards(items, r);
      expect([...items.keys()], id).toEqual([shardKey(ref.scope, ref.unit, hold.shard).pk]);
      onShards++;
    }
    expect(onShards).toBeGreaterThan(0);
    cache(holding);
    for (const id of ids) {
      const refunded = await refund(
        t,
        id,
        { amount: usd(20), reason: 'provider refunded it' },
        adminHeaders,
      );
      expect(refunded.status).toBe(200);
      // Spent taken back, never credited to the allocation as if spent had been reset since.
      expect((root(refunded).allocated as Json).amount).toBe(10_000);
      expect((root(refunded).spent as Json).amount).toBeGreaterThanOrEqual(0);
    }
    expect((await ledgers(stack, t))['']).toEqual(L(10_000, 320, 0, 0, 9_680));
  });

  it('charges an overage beyond one shard from the whole budget, and refuses what no shard sum covers', async () => {
    const t = await shardedTenant(1_000, 4);
    const r = await reserve(t, { estimate: usd(100), overage_policy: 'ALLOW_IF_AVAILABLE' });

    const charged = await commit(t, r.body.reservation_id, { actual: usd(700) });
    const r2 = await reserve(t, { estimate: usd(100), overage_policy: 'ALLOW_IF_AVAILABLE' });
    const refused = await commit(t, r2.body.reservation_id, { actual: usd(400) });

    expect(charged.status).toBe(200);
    expectError(refused, 409, 'BUDGET_EXCEEDED');
    expect((await ledgers(stack, t))['']).toEqual(L(1_000, 700, 100, 0, 200));
  });

  it('goes into debt within the overdraft limit, then refuses reserves until the debt is repaid', async () => {
    const t = await shardedTenant(1_000, 4, { overdraftLimit: 500 });
    const r = await reserve(t, { estimate: usd(800), overage_policy: 'ALLOW_WITH_OVERDRAFT' });

    const committed = await commit(t, r.body.reservation_id, { actual: usd(1_300) });
    const blocked = await reserve(t, { estimate: usd(1) });
    const repaid = await fund(stack, t, '', 'REPAY_DEBT', 400);
    const after = await reserve(t, { estimate: usd(100) });

    expect(committed.status).toBe(200);
    expectError(blocked, 409, 'DEBT_OUTSTANDING');
    expect(repaid.status).toBe(200);
    expect(after.status).toBe(200);
    expect((await ledgers(stack, t))['']).toEqual(L(1_100, 1_000, 100, 0, 0));
  });

  it('funds exactly: RESET below what is spent gates the budget, CREDIT reopens it', async () => {
    const t = await shardedTenant(1_000, 4);
    const r = await reserve(t, { estimate: usd(400) });
    await commit(t, r.body.reservation_id, { actual: usd(400) });

    const reset = await fund(stack, t, '', 'RESET', 300);
    const blocked = await reserve(t, { estimate: usd(0) });
    const credit = await fund(stack, t, '', 'CREDIT', 500);
    const open = await reserve(t, { estimate: usd(400) });
    const over = await reserve(t, { estimate: usd(1) });

    expect([reset.status, credit.status, open.status]).toEqual([200, 200, 200]);
    expectError(blocked, 409, 'BUDGET_EXCEEDED');
    expectError(over, 409, 'BUDGET_EXCEEDED');
    expect((await ledgers(stack, t))['']).toEqual(L(800, 400, 400, 0, 0));
  });

  it('debits events from the whole budget, and answers decide and dry runs as for one ledger', async () => {
    const t = await shardedTenant(1_000, 4);
    const event = (amount: number) =>
      request('POST', `${stack.runtimeUrl}/v1/events`, {
        headers: t.headers,
        body: {
          idempotency_key: `e-${amount}-${Math.random()}`,
          subject: { workspace: 'w' },
          action: { kind: 'tool', name: 'search' },
          actual: usd(amount),
        },
      });
    const decide = (amount: number) =>
      request('POST', `${stack.runtimeUrl}/v1/decide`, {
        headers: t.headers,
        body: {
          idempotency_key: `d-${amount}-${Math.random()}`,
          subject: { workspace: 'w' },
          action: { kind: 'tool', name: 'search' },
          estimate: usd(amount),
        },
      });

    expect((await event(600)).status).toBe(201);
    expect((await decide(400)).body.decision).toBe('ALLOW');
    expect((await decide(401)).body.decision).toBe('DENY');
    expect((await reserve(t, { estimate: usd(400), dry_run: true })).body.decision).toBe('ALLOW');
    expectError(await event(401), 409, 'BUDGET_EXCEEDED');
    expect((await ledgers(stack, t))['']).toEqual(L(1_000, 600, 0, 0, 400));
  });

  it('returns expired holds to their shards', async () => {
    const t = await shardedTenant(2_000, 4);
    const held = await Promise.all(
      Array.from({ length: 8 }, () =>
        reserve(t, { estimate: usd(250), ttl_ms: 1_000, grace_period_ms: 0 }),
      ),
    );
    expect(held.every((r) => r.status === 200)).toBe(true);
    clock.advance(2_000);

    const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');
    await sweepOnce();

    expect((await ledgers(stack, t))['']).toEqual(L(2_000, 0, 0, 0, 2_000));
    const shards = await shardsOf(t, '', 4);
    expect(shards.map((s) => s?.reserved)).toEqual([0, 0, 0, 0]);
    expect((await reserve(t, { estimate: usd(2_000) })).status).toBe(200);
  });
});

describe('a budget given more shards (PATCH shards)', () => {
  const budgetQuery = (t: GivenTenant, rel: string) =>
    `scope=${encodeURIComponent(scopeOf(t, rel))}&unit=USD_MICROCENTS`;
  const patch = (t: GivenTenant, rel: string, body: Record<string, unknown>) =>
    request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${budgetQuery(t, rel)}`, {
      headers: adminHeaders,
      body,
    });
  const sumOf = (shards: readonly (Record<string, unknown> | undefined)[], field: string) =>
    shards.reduce((sum, s) => sum + Number(s?.[field]), 0);

  it('grows from 4 to 8 while reservations come and go, every balance exact, the remaining spread', async () => {
    const t = await shardedTenant(8_000, 4);
    const early = await Promise.all(
      Array.from({ length: 10 }, () => reserve(t, { estimate: usd(100) })),
    );

    const [grown, ...during] = await Promise.all([
      patch(t, '', { shards: 8 }),
      ...Array.from({ length: 20 }, () => reserve(t, { estimate: usd(100) })),
    ]);
    const settled = await Promise.all(
      [...early, ...during].map((r) => commit(t, r.body.reservation_id, { actual: usd(60) })),
    );

    expect(grown?.status).toBe(200);
    expect([...early, ...during].map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(settled.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect((await ledgers(stack, t))['']).toEqual(L(8_000, 1_800, 0, 0, 6_200));
    const shards = await shardsOf(t, '', 8);
    expect(shards[0]?.shards).toBe(8);
    expect(sumOf(shards, 'remaining')).toBe(6_200);
    expect(sumOf(shards, 'allocated')).toBe(8_000);
    // The new shards got their part of the remaining, so holds can land on them.
    expect(shards.slice(4).every((s) => Number(s?.remaining) > 0)).toBe(true);
    expect(shards.every((s) => Number(s?.remaining) >= 0 && s?.gated === false)).toBe(true);
  });

  it('splits an unsharded budget with a hold open, which settles where it was taken', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 1_000_000);
    const r = await reserve(t, { estimate: usd(300) });

    const grown = await patch(t, '', { shards: 4 });
    const committed = await commit(t, r.body.reservation_id, { actual: usd(200) });
    const after = await reserve(t, { estimate: usd(100) });

    expect([grown.status, committed.status, after.status]).toEqual([200, 200, 200]);
    expect((await ledgers(stack, t))['']).toEqual(L(1_000, 200, 100, 0, 700));
    const shards = await shardsOf(t, '', 4);
    expect(sumOf(shards, 'remaining')).toBe(700);
    expect(shards[0]?.spent).toBe(200);
  });

  it('settles holds whose ids name no budgets (the fallback read) with whole balances, the budget grown and its shard cached before the holds', async () => {
    // An agent name long enough that the reservation id cannot carry its hint (over 128
    // characters): commit reads the reservation first, then its budgets (use-cases/
    // budget-reader.ts settlingSource). The holds' shard must be read afresh there too.
    const { mark, rememberShard } = await import('../../functions/store/budgets/shard-cache.js');
    const { hintedBudgets } = await import('../../functions/domain/reservation-id.js');
    const agent = 'a'.repeat(100);
    const t = await shardedTenant(10_000, 2);
    await givenBudget(stack, t, `workspace:w/agent:${agent}`, 1_000_000);
    const ref = { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS' as const };
    const before = await shardsOf(t, '', 2);
    const held = await Promise.all(
      Array.from({ length: 8 }, () =>
        reserve(t, { estimate: usd(100), subject: { workspace: 'w', agent } }),
      ),
    );
    expect(held.map((r) => r.status)).toEqual(held.map(() => 200));
    const ids = held.map((r) => String(r.body.reservation_id));
    expect(ids.map((id) => hintedBudgets(id, t.tenant))).toEqual(ids.map(() => undefined));
    const onShardOne = (await shardsOf(t, '', 2))[1]?.reserved;
    expect(Number(onShardOne)).toBeGreaterThan(0);

    expect((await patch(t, '', { shards: 4 })).status).toBe(200);
    // As when another process took the holds: this one still has shard 1 from before them.
    if (before[1]) rememberShard(ref, 1, before[1], mark());
    for (const id of ids) {
      const committed = await commit(t, id, { actual: usd(60) });
      expect(committed.status).toBe(200);
      const root = (committed.body.balances as Json[]).find((b) => b.scope === ref.scope) ?? {};
      expect((root.reserved as Json).amount).toBeGreaterThanOrEqual(0);
    }

    expect((await ledgers(stack, t))['']).toEqual(L(10_000, 480, 0, 0, 9_520));
  });

  it('never shrinks, answers the same count unchanged, and keeps a frozen budget frozen on every shard', async () => {
    const t = await shardedTenant(4_000, 4);
    const combined = await patch(t, '', { shards: 8, overdraft_limit: usd(5) });
    const fewer = await patch(t, '', { shards: 2 });
    const same = await patch(t, '', { shards: 4 });
    await request('POST', `${stack.adminUrl}/v1/admin/budgets/freeze?${budgetQuery(t, '')}`, {
      headers: adminHeaders,
    });
    const grown = await patch(t, '', { shards: 16 });
    const refused = await Promise.all(
      Array.from({ length: 8 }, () => reserve(t, { estimate: usd(10) })),
    );

    // shards comes alone: nothing of the combined PATCH was applied.
    expectError(combined, 400, 'INVALID_REQUEST');
    expectError(fewer, 400, 'INVALID_REQUEST');
    expect([same.status, grown.status]).toEqual([200, 200]);
    expect(grown.body.overdraft_limit).toEqual(usd(0));
    for (const r of refused) expectError(r, 409, 'BUDGET_FROZEN');
    const shards = await shardsOf(t, '', 16);
    expect(shards.every((s) => s?.status === 'FROZEN')).toBe(true);
  });

  it('makes a status change read before the budget grew read again, then freezes every shard', async () => {
    const t = await shardedTenant(4_000, 4);
    const { getBudgetRecords } = await import('../../functions/store/budgets/read.js');
    const { setBudgetStatus } = await import('../../functions/store/budgets/writes.js');
    const [before] = await getBudgetRecords(
      [{ scope: scopeOf(t, ''), unit: 'USD_MICROCENTS' }],
      'view',
    );

    const grown = await patch(t, '', { shards: 8 });
    const stale = before && (await setBudgetStatus(before.budget, 'FROZEN', 'now', undefined));
    const frozen = await request(
      'POST',
      `${stack.adminUrl}/v1/admin/budgets/freeze?${budgetQuery(t, '')}`,
      { headers: adminHeaders },
    );

    expect([grown.status, stale, frozen.status]).toEqual([200, 'stale', 200]);
    expect((await shardsOf(t, '', 8)).map((s) => s?.status)).toEqual(Array(8).fill('FROZEN'));
  });

  it('bounds the scopes of sharded budgets a tenant item lists, and still takes unsharded ones', async () => {
    const t = await givenTenant(stack);
    // A workspace and 4 dimension levels of the longest keys and values: about 990 characters.
    const scopeNo = (i: number) =>
      [
        `workspace:${`w${i}`.padEnd(128, 'w')}`,
        ...Array.from(
          { length: 4 },
          (_, d) => `dimensions:${`k${d}`.padEnd(64, 'x')}=${`v${i}`.padEnd(128, 'y')}`,
        ),
      ].join('/');
    const create = (rel: string, shards: number) =>
      request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
        headers: adminHeaders,
        body: { scope: scopeOf(t, rel), unit: 'USD_MICROCENTS', allocated: usd(100), shards },
      });

    // A scope longer than a DynamoDB key holds is a 400 before anything is sent (it was a 500).
    const tooLong = await create(
      Array.from(
        { length: 16 },
        (_, d) => `dimensions:${`k${d}`.padStart(3, '0')}=${'v'.repeat(128)}`,
      ).join('/'),
      1,
    );
    expectError(tooLong, 400, 'INVALID_REQUEST');

    const statuses: number[] = [];
    for (let i = 0; i < 130 && !statuses.includes(400); i++)
      statuses.push((await create(scopeNo(i), 2)).status);
    const refused = await create(scopeNo(1_000), 2);
    const unsharded = await create(scopeNo(1_001), 1);

    // 100,000 characters: some 100 such budgets, then 400 (not a 500 from a 400 KB item).
    expect(scopeOf(t, scopeNo(0)).length).toBeLessThanOrEqual(1000);
    expect(statuses.length).toBeGreaterThan(90);
    expect(statuses.slice(0, -1).every((x) => x === 201)).toBe(true);
    expect(statuses.at(-1)).toBe(400);
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(unsharded.status).toBe(201);
  });

  it('grows a rolling budget too, and refuses more shards than a path through the budget has room for', async () => {
    const t = await shardedTenant(64_000, 64);
    const workspace = await patch(t, 'workspace:w', { shards: 14 });
    const tooMany = await patch(t, 'workspace:w', { shards: 15 });
    const rolling = await givenTenant(stack);
    await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: scopeOf(rolling, ''),
        unit: 'USD_MICROCENTS',
        allocated: usd(1_000),
        period: 'DAILY',
      },
    });
    const periodic = await patch(rolling, '', { shards: 4 });

    expect(workspace.status).toBe(200);
    expectError(tooMany, 400, 'INVALID_REQUEST');
    expect([periodic.status, periodic.body.shards, periodic.body.period]).toEqual([
      200,
      4,
      'DAILY',
    ]);
    expect((await shardsOf(rolling, '', 4)).map((s) => s?.period_start)).toEqual(
      Array(4).fill(Date.parse(String(periodic.body.period_start))),
    );
  });
});
