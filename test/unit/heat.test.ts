import { describe, expect, it } from 'vitest';
import { deadlineBudgetMs } from '../../functions/deadline.js';
import {
  budgetsBlamed,
  busyRetryAfterMs,
  noteAttempt,
  noteHeat,
  takeHotBudgets,
} from '../../functions/store/budgets/heat.js';
import {
  applyToCachedShard,
  cachedShard,
  cachedWhole,
  forgetShards,
  mark,
  rememberShard,
  SHARD_CACHE_MS,
} from '../../functions/store/budgets/shard-cache.js';
import { shardKey } from '../../functions/store/entities/ledger.js';
import type { TransactItem } from '../../functions/store/expressions.js';
import { keys } from '../../functions/store/keys.js';

// A budget's heat: the share of the transactions on its items that met a conflict, in one
// process over a window (store/budgets/heat.ts; defaults: 20 conflicts, 10 %, 10 s).

const ref = (scope: string) => ({ scope, unit: 'USD_MICROCENTS' as const });
const onShard = (scope: string, k: number): TransactItem => ({
  Update: { TableName: 't', Key: shardKey(scope, 'USD_MICROCENTS', k), UpdateExpression: 'x' },
});

describe('the budget of a ledger key', () => {
  it('is read from the end, so a scope may hold #', () => {
    expect(keys.budgetOfLedgerPk(keys.ledger('tenant:a/dimensions:run=1#2', 'TOKENS').pk)).toEqual({
      scope: 'tenant:a/dimensions:run=1#2',
      unit: 'TOKENS',
    });
    expect(keys.budgetOfLedgerPk(keys.ledgerShard('tenant:a', 'CREDITS', 12).pk)).toEqual({
      scope: 'tenant:a',
      unit: 'CREDITS',
    });
    expect(keys.budgetOfLedgerPk(keys.reservation('rsv_1').pk)).toBeUndefined();
  });
});

describe('heat', () => {
  it('blames the budgets of the items a cancellation names, each once', () => {
    const items = [onShard('tenant:h0', 3), onShard('tenant:h0', 0), onShard('tenant:h1', 0)];
    const reasons = [
      { code: 'TransactionConflict' },
      { code: 'None' },
      { code: 'ThrottlingError' },
    ];

    expect(budgetsBlamed(items, reasons)).toEqual([ref('tenant:h0'), ref('tenant:h1')]);
  });

  it('makes a budget hot once 20 of its transactions and 10 % of them met a conflict, once', () => {
    const at = 1_000_000;
    const few = 'tenant:few';
    const rare = 'tenant:rare';
    const hot = 'tenant:hot';
    for (let i = 0; i < 19; i++) noteHeat(ref(few), 1, at);
    for (let i = 0; i < 300; i++) noteAttempt([onShard(rare, 0)], at);
    for (let i = 0; i < 25; i++) noteHeat(ref(rare), 1, at);
    for (let i = 0; i < 100; i++) noteAttempt([onShard(hot, i % 4)], at);
    for (let i = 0; i < 20; i++) noteHeat(ref(hot), 1, at);

    // 20 conflicts in 100 attempts (a conflict is an attempt too): the share a growth is sized by.
    expect(takeHotBudgets(at)).toEqual([{ ref: ref(hot), share: 0.2 }]);
    expect(takeHotBudgets(at + 2_000)).toEqual([]);
  });

  it('counts a busy answer as the whole threshold, and forgets conflicts older than the window', () => {
    const at = 2_000_000;
    for (let i = 0; i < 19; i++) noteHeat(ref('tenant:old'), 1, at);
    noteHeat(ref('tenant:old'), 1, at + 10_500);
    noteHeat(ref('tenant:busy'), 20, at + 10_500);

    expect(takeHotBudgets(at + 10_500)).toEqual([{ ref: ref('tenant:busy'), share: 1 }]);
  });

  it('tells a busy client to stay away longer the hotter the budget: 1 s to 5 s, jittered ±50 %', () => {
    const at = 3_000_000;
    for (let i = 0; i < 100; i++) noteAttempt([onShard('tenant:warm', 0)], at);
    for (let i = 0; i < 10; i++) noteHeat(ref('tenant:warm'), 1, at);
    noteHeat(ref('tenant:scalding'), 20, at);

    // 10 conflicts in 100 attempts: 1 s × (1 + 4 × 0.1), from half of it to one and a half.
    expect(busyRetryAfterMs([ref('tenant:warm')], at, 0.5)).toBe(1_400);
    expect(busyRetryAfterMs([ref('tenant:warm')], at, 0)).toBe(700);
    expect(busyRetryAfterMs([ref('tenant:warm')], at, 1)).toBe(2_100);
    // The hottest budget of a write counts: every attempt conflicted.
    expect(busyRetryAfterMs([ref('tenant:warm'), ref('tenant:scalding')], at, 0.5)).toBe(5_000);
    // Nothing known of it (growth off, or never blamed): the caller keeps its own figure.
    expect(busyRetryAfterMs([ref('tenant:unknown')], at, 0.5)).toBeUndefined();
  });
});

describe('a request’s deadline', () => {
  const lambda = {
    REQUEST_DEADLINE_MS: 0,
    DYNAMODB_MAX_ATTEMPTS: 3,
    DYNAMODB_ATTEMPT_TIMEOUT_MS: 1_000,
  };

  it('leaves one DynamoDB call’s worst case before the function times out', () => {
    // A 10 s function: 3 attempts of 1 s and the SDK's 0.5 s of backoff kept back; a 5 s one.
    expect(deadlineBudgetMs(10_000, lambda)).toBe(6_500);
    expect(deadlineBudgetMs(5_000, lambda)).toBe(1_500);
    expect(deadlineBudgetMs(3_000, lambda)).toBe(0);
    expect(deadlineBudgetMs(undefined, lambda)).toBeUndefined();
    expect(deadlineBudgetMs(10_000, { ...lambda, REQUEST_DEADLINE_MS: 250 })).toBe(250);
    // Locally (no Lambda) REQUEST_DEADLINE_MS defaults to 20 s.
    expect(deadlineBudgetMs(10_000)).toBe(20_000);
  });
});

describe('the shards a write reads from the last second', () => {
  it('are used while young, move with this process’s writes, and are forgotten on demand', () => {
    const budget = ref('tenant:cached');
    const at = 5_000_000;
    const shard = { allocated: 10, spent: 0, reserved: 0, debt: 0, remaining: 10 };
    rememberShard(budget, 1, shard, mark(), at);
    rememberShard(budget, 2, shard, mark(), at);
    rememberShard(budget, 0, shard, mark(), at);

    applyToCachedShard(budget, 1, { reserved: 4, remaining: -4 }, mark());

    expect(cachedShard(budget, 1, at + 10)).toMatchObject({ reserved: 4, remaining: 6 });
    expect(cachedShard(budget, 0, at)).toBeUndefined();
    expect(cachedWhole(budget, 3, at + SHARD_CACHE_MS - 1)).toBe(true);
    expect(cachedWhole(budget, 4, at)).toBe(false);
    expect(cachedShard(budget, 2, at + SHARD_CACHE_MS)).toBeUndefined();
    forgetShards(budget);
    expect(cachedShard(budget, 1, at)).toBeUndefined();
  });

  it('never applies a write to a read that may already show it, nor keeps a read that may predate one', () => {
    // Requests overlap in one process (the local server): a commit's write of shard 1 and
    // another request's read of it. Their order is unknown when they overlap.
    const budget = ref('tenant:overlap');
    const at = Date.now();
    const held = { allocated: 10, spent: 0, reserved: 4, debt: 0, remaining: 6 };
    const given = { allocated: 10, spent: 4, reserved: 0, debt: 0, remaining: 6 };
    const commit = { spent: 4, reserved: -4 };

    // The read began before the commit's write and came back after it began: it may show the
    // hold given back already, so the write forgets it rather than giving the hold back twice
    // (the `reserved` of −4 a commit once answered with).
    rememberShard(budget, 1, held, mark(), at);
    const writeAt = mark();
    rememberShard(budget, 1, given, mark() - 1, at);
    applyToCachedShard(budget, 1, commit, writeAt);
    expect(cachedShard(budget, 1, at)).toBeUndefined();

    // The read began before the write finished and comes back after: it may predate the write,
    // so it is not remembered over the entry the write moved.
    rememberShard(budget, 1, held, mark(), at);
    const readAt = mark();
    applyToCachedShard(budget, 1, commit, mark());
    rememberShard(budget, 1, held, readAt, at);
    expect(cachedShard(budget, 1, at)).toMatchObject({ spent: 4, reserved: 0 });

    // A read begun after the write finished is remembered.
    rememberShard(budget, 1, given, mark(), at);
    expect(cachedShard(budget, 1, at)).toMatchObject({ spent: 4, reserved: 0 });
    // Nor after a budget rewritten whole (growth, evening out) while the read was out.
    const before = mark();
    forgetShards(budget);
    rememberShard(budget, 2, held, before, at);
    expect(cachedShard(budget, 2, at)).toBeUndefined();
  });
});
