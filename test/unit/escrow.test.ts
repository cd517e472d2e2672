import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emptyLedger, type Ledger } from '../../functions/domain/budget.js';
import {
  applyToShard,
  emptyShards,
  evenOutMoves,
  grownShardCount,
  growthFactor,
  heaviestPathExtra,
  liveShards,
  MAX_PATH_EXTRA_SHARDS,
  MAX_SHARDS,
  mostShardsOnPaths,
  needOf,
  pickShard,
  respread,
  routeChange,
  runningLow,
  type Shard,
  type ShardMove,
  shardCovers,
  sumShards,
} from '../../functions/domain/escrow.js';
import {
  applyDelta,
  chargeLedger,
  type FundOperation,
  fundChange,
  holdChange,
  type LedgerChange,
  type OveragePolicy,
  releaseChange,
} from '../../functions/domain/ledger.js';
import { scopeRefusal } from '../../functions/domain/refusals.js';
import { releaseChanges } from '../../functions/domain/reservation.js';
import { eventPolicy } from '../../functions/domain/settlement.js';
import { reservationOf } from '../../functions/store/entities/reservation.js';
import { aReservation } from '../helpers/budgets.js';

/** The budget a set of shards makes up: its scope, unit and limit, and the shards' sums. */
const mergedOf = (base: Pick<Ledger, 'scope' | 'unit' | 'overdraftLimit'>, shards: Shard[]) => ({
  ...base,
  ...sumShards(shards),
});

// The escrow algorithm against one model: the same random sequence of reserve, commit,
// release, expiry, event and funding applied to one unsharded ledger (the model, SPEC's rules as
// the domain already implements them) and to a budget of N shards routed the way the store
// routes them (fast on one shard under its own condition, or exact over all shards). Every
// decision must match the model's, the shards must always sum to the model, and invariant E
// (not gated ⇒ every shard's remaining ≥ 0 and no debt) must hold after every step, so that
// a fast hold can never oversubscribe the budget.

const SCOPE = 'tenant:t';
const UNIT = 'TOKENS';
const MAX = 1_000_000_000;

type Op =
  | { readonly kind: 'reserve'; readonly amount: number; readonly seed: number }
  | { readonly kind: 'commit'; readonly pick: number; readonly actual: number }
  | { readonly kind: 'release' | 'expire'; readonly pick: number }
  | {
      readonly kind: 'event';
      readonly actual: number;
      readonly policy: OveragePolicy;
      seed: number;
    }
  | { readonly kind: 'fund'; readonly operation: FundOperation; readonly amount: number };

const policies: OveragePolicy[] = ['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT'];
const amount = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 400 }));
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('reserve' as const), amount, seed: fc.nat() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('commit' as const), pick: fc.nat(), actual: amount }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('event' as const),
      actual: amount,
      policy: fc.constantFrom(...policies),
      seed: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('fund' as const),
      operation: fc.constantFrom<FundOperation>('CREDIT', 'RESET', 'REPAY_DEBT'),
      amount: fc.integer({ min: 0, max: 600 }),
    }),
  },
);

interface Hold {
  readonly held: number;
  readonly policy: OveragePolicy;
  readonly shard: number;
}

/** A sharded budget routed as the store routes it. */
class ShardedBudget {
  shards: Shard[];
  readonly fastPaths = { fast: 0, exact: 0 };

  constructor(
    initial: Ledger,
    n: number,
    public overdraftLimit: number,
  ) {
    this.shards = respread(emptyShards(n), initial);
  }

  get ledger(): Ledger {
    return mergedOf({ scope: SCOPE, unit: UNIT, overdraftLimit: this.overdraftLimit }, this.shards);
  }

  /** Applies a change decided on the merged ledger; returns the shard it landed on. */
  apply(change: LedgerChange, pinned: number | undefined, seed: number): number {
    const route = routeChange(change, this.shards, pinned, seed);
    if (route.path === 'fast') {
      const shard = this.shards[route.shard] as Shard;
      if (route.covers !== undefined) expect(shardCovers(shard, route.covers)).toBe(true);
      this.shards[route.shard] = applyToShard(shard, change.delta);
      this.fastPaths.fast++;
      return route.shard;
    }
    const shard = pinned ?? seed % this.shards.length;
    this.shards = respread(
      this.shards,
      applyDelta(this.ledger, change.delta),
      { shard, delta: change.delta },
      needOf(change),
    );
    this.fastPaths.exact++;
    return shard;
  }
}

function run(ops: readonly Op[], n: number, allocated: number, overdraftLimit: number) {
  let model: Ledger = {
    ...emptyLedger(SCOPE, UNIT),
    allocated,
    remaining: allocated,
    overdraftLimit,
  };
  const budget = new ShardedBudget(model, n, overdraftLimit);
  const holds: Hold[] = [];
  const take = (pick: number) => holds.splice(pick % holds.length, 1)[0] as Hold;

  for (const o of ops) {
    const merged = budget.ledger;
    expect(merged).toEqual(model);
    switch (o.kind) {
      case 'reserve': {
        const refusal = scopeRefusal(SCOPE, UNIT, model, o.amount);
        // A fast hold is possible only when the model admits: that is what makes it safe.
        const fast = pickShard(budget.shards, o.amount, o.seed);
        if (fast !== undefined) expect(refusal).toBeUndefined();
        if (refusal) break;
        const change = holdChange(SCOPE, UNIT, o.amount);
        const shard = budget.apply(change, undefined, o.seed);
        model = applyDelta(model, change.delta);
        holds.push({ held: o.amount, policy: policies[o.seed % 3] as OveragePolicy, shard });
        break;
      }
      case 'commit': {
        if (holds.length === 0) break;
        const h = take(o.pick);
        const outcome = chargeLedger(model, h.held, o.actual, h.policy);
        if (outcome.kind === 'refused') {
          // Refused on the merged ledger, as the exact path would: the hold is released.
          holds.push(h);
          break;
        }
        budget.apply(outcome.change, h.shard, 0);
        model = applyDelta(model, outcome.change.delta);
        break;
      }
      case 'release':
      case 'expire': {
        if (holds.length === 0) break;
        const h = take(o.pick);
        const change = releaseChange(SCOPE, UNIT, h.held);
        budget.apply(change, h.shard, 0);
        model = applyDelta(model, change.delta);
        break;
      }
      case 'event': {
        const outcome = chargeLedger(model, 0, o.actual, eventPolicy(o.policy));
        if (outcome.kind === 'refused') {
          expect(pickShard(budget.shards, o.actual, o.seed) === undefined || o.actual === 0).toBe(
            true,
          );
          break;
        }
        budget.apply(outcome.change, undefined, o.seed);
        model = applyDelta(model, outcome.change.delta);
        break;
      }
      case 'fund': {
        let change: LedgerChange;
        try {
          change = fundChange(model, o.operation, o.amount, MAX);
        } catch {
          break;
        }
        budget.apply(change, undefined, 0);
        model = applyDelta(model, change.delta);
        break;
      }
    }
    const after = budget.ledger;
    expect(after).toEqual(model);
    // Invariant E, and where debt and holds live.
    const gated = budget.shards.map((s) => s.gated);
    expect(new Set(gated).size).toBe(1);
    if (!gated[0]) {
      expect(after.debt).toBe(0);
      for (const s of budget.shards) expect(s.remaining).toBeGreaterThanOrEqual(0);
    }
    expect(budget.shards.slice(1).map((s) => s.debt)).toEqual(budget.shards.slice(1).map(() => 0));
    const heldOn = (k: number) =>
      holds.filter((h) => h.shard === k).reduce((total, h) => total + h.held, 0);
    expect(budget.shards.map((s) => s.reserved)).toEqual(budget.shards.map((_, k) => heldOn(k)));
  }
  return budget.fastPaths;
}

describe('escrow shards against the unsharded model', () => {
  it('decide exactly as one ledger and always sum to it, for 1 to 32 shards', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 120 }),
        fc.integer({ min: 1, max: MAX_SHARDS }),
        fc.integer({ min: 0, max: 2_000 }),
        fc.integer({ min: 0, max: 300 }),
        (ops, n, allocated, overdraftLimit) => {
          run(ops, n, allocated, overdraftLimit);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('takes the fast path for most holds while the budget is far from spent', () => {
    const ops: Op[] = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? { kind: 'reserve', amount: 10, seed: i * 7919 }
        : { kind: 'commit', pick: 0, actual: 8 },
    );
    const paths = run(ops, 8, 100_000, 0);
    expect(paths.exact).toBe(0);
    expect(paths.fast).toBe(200);
  });
});

describe('respread', () => {
  it('splits a healthy remaining evenly, in integers, keeping holds on their shards', () => {
    const shards = respread(emptyShards(3), {
      ...emptyLedger(SCOPE, UNIT),
      allocated: 10,
      remaining: 10,
    });
    expect(shards.map((s) => s.remaining)).toEqual([4, 3, 3]);
    expect(shards.map((s) => s.allocated)).toEqual([4, 3, 3]);
    const moved = respread(
      shards,
      { ...emptyLedger(SCOPE, UNIT), allocated: 10, reserved: 5, remaining: 5 },
      {
        shard: 2,
        delta: { reserved: 5, remaining: -5 },
      },
    );
    expect(moved.map((s) => s.reserved)).toEqual([0, 0, 5]);
    expect(moved.map((s) => s.remaining)).toEqual([2, 2, 1]);
  });

  it('gates every shard and keeps debt on shard 0 while the budget is in debt', () => {
    const budget = {
      ...emptyLedger(SCOPE, UNIT),
      allocated: 10,
      spent: 15,
      debt: 5,
      remaining: -10,
    };
    const shards = respread(
      emptyShards(4).map((s, k) => (k === 1 ? { ...s, spent: 15 } : s)),
      budget,
    );
    expect(shards.every((s) => s.gated)).toBe(true);
    expect(shards.map((s) => s.debt)).toEqual([5, 0, 0, 0]);
    expect(pickShard(shards, 1, 0)).toBeUndefined();
    expect(mergedOf({ scope: SCOPE, unit: UNIT, overdraftLimit: 0 }, shards)).toEqual({
      ...budget,
      overdraftLimit: 0,
    });
  });

  it('refuses to lay out shards that do not add up to the budget', () => {
    expect(() => respread(emptyShards(2), { ...emptyLedger(SCOPE, UNIT), reserved: 1 })).toThrow();
  });

  it('gathers a remaining short of a hold on every shard onto the shards it fills, shard 0 first', () => {
    const low = { ...emptyLedger(SCOPE, UNIT), allocated: 7_431, remaining: 7_431 };

    const gathered = respread(emptyShards(64), low, undefined, 1_000);
    const spent = respread(
      emptyShards(16),
      { ...low, remaining: 431, spent: 7_000 },
      {
        shard: 3,
        delta: { spent: 7_000, remaining: -7_000 },
      },
      1_000,
    );

    expect(gathered.map((s) => s.remaining).filter((r) => r > 0)).toEqual([
      1_062, 1_062, 1_062, 1_062, 1_061, 1_061, 1_061,
    ]);
    expect(gathered.filter((s) => shardCovers(s, 1_000))).toHaveLength(7);
    expect(spent.map((s) => s.remaining)).toEqual([431, ...Array(15).fill(0)]);
    expect(respread(emptyShards(4), low, undefined, 10).map((s) => s.remaining)).toEqual([
      1_858, 1_858, 1_858, 1_857,
    ]);
  });
});

describe('liveShards and needOf: how many shards a healthy remaining is laid out over', () => {
  it('is every shard without a need, and as many as the remaining fills with it, at least one', () => {
    expect(liveShards(16, 100)).toBe(16);
    expect(liveShards(16, 100_000, 10)).toBe(16);
    expect(liveShards(16, 35, 10)).toBe(3);
    expect(liveShards(16, 5, 10)).toBe(1);
    expect(liveShards(16, 0, 10)).toBe(1);
    expect(needOf(holdChange(SCOPE, UNIT, 25))).toBe(25);
    expect(needOf(releaseChange(SCOPE, UNIT, 25))).toBeUndefined();
  });
});

describe('budgets that shard themselves', () => {
  it('double, at most the ceiling and the room the path rule leaves, and not when they cannot grow', () => {
    expect(grownShardCount(1, 16, 64)).toBe(2);
    expect(grownShardCount(8, 16, 64)).toBe(16);
    expect(grownShardCount(16, 16, 64)).toBeUndefined();
    expect(grownShardCount(8, 16, 12)).toBe(12);
    expect(grownShardCount(8, 64, 8)).toBeUndefined();
    expect(grownShardCount(1, 16, 64, 8)).toBe(8);
    expect(grownShardCount(4, 16, 64, 8)).toBe(16);
  });

  it('grows a budget by enough to bring its conflicts to the target, 2× to 8×', () => {
    expect(growthFactor(0.1, 0.1)).toBe(2);
    expect(growthFactor(0.15, 0.1)).toBe(2);
    expect(growthFactor(0.3, 0.1)).toBe(4);
    expect(growthFactor(0.5, 0.1)).toBe(8);
    expect(growthFactor(1, 0.1)).toBe(8);
  });

  it('leave a path room for what its other sharded budgets take', () => {
    const sharded = new Map([
      ['tenant:t', 64],
      ['tenant:t/workspace:w/agent:a', 5],
    ]);

    expect(mostShardsOnPaths(new Map(), 'tenant:t')).toBe(MAX_SHARDS);
    // 76 − 63 above − 4 below = 9 extra: 10 shards.
    expect(mostShardsOnPaths(sharded, 'tenant:t/workspace:w')).toBe(10);
    expect(heaviestPathExtra(sharded, 'tenant:t/workspace:w', 10)).toBe(MAX_PATH_EXTRA_SHARDS);
  });

  it('do not grow while running low: their remaining gathered on fewer than half of the shards', () => {
    const shard = (remaining: number) => ({ ...(emptyShards(1)[0] as Shard), remaining });
    expect(runningLow([shard(5), shard(0), shard(0), shard(0)])).toBe(true);
    expect(runningLow([shard(5), shard(5), shard(0), shard(0)])).toBe(false);
  });
});

describe('pickShard', () => {
  it('spreads holds evenly over the shards that cover them, whichever those are', () => {
    const shards = respread(
      emptyShards(16),
      {
        ...emptyLedger(SCOPE, UNIT),
        allocated: 3_000,
        remaining: 3_000,
      },
      undefined,
      1_000,
    );
    const picked = new Map<number | undefined, number>();
    for (let seed = 0; seed < 300; seed++) {
      const k = pickShard(shards, 1_000, seed);
      picked.set(k, (picked.get(k) ?? 0) + 1);
    }
    expect([...picked.entries()].sort()).toEqual([
      [0, 100],
      [1, 100],
      [2, 100],
    ]);
  });
});

describe('routeChange', () => {
  const shards = respread(emptyShards(4), {
    ...emptyLedger(SCOPE, UNIT),
    allocated: 40,
    remaining: 40,
  });

  it('rewrites every shard for a change of the allocation, which shard 0 keeps for reads', () => {
    const debit = fundChange(
      mergedOf({ scope: SCOPE, unit: UNIT, overdraftLimit: 0 }, shards),
      'DEBIT',
      5,
      1_000,
    );

    expect(debit.guard.kind).toBe('covers');
    expect(routeChange(debit, shards, undefined, 0)).toEqual({ path: 'exact' });
  });

  it('settles on the pinned shard without a condition', () => {
    expect(routeChange({ guard: { kind: 'exists' } }, shards, 3, 0)).toEqual({
      path: 'fast',
      shard: 3,
    });
  });

  it('holds on a shard that covers the amount, from the seed onward, else goes exact', () => {
    expect(routeChange({ guard: { kind: 'admit', amount: 10 } }, shards, undefined, 6)).toEqual({
      path: 'fast',
      shard: 2,
      covers: 10,
    });
    expect(routeChange({ guard: { kind: 'admit', amount: 11 } }, shards, undefined, 6)).toEqual({
      path: 'exact',
    });
    // Not gated, every shard is at 0 or more (invariant E): a zero hold fits any of them.
    expect(routeChange({ guard: { kind: 'admit', amount: 0 } }, shards, undefined, 0)).toEqual({
      path: 'fast',
      shard: 0,
      covers: 0,
    });
  });

  it('always takes the exact path for funding and overdraft charges', () => {
    expect(
      routeChange({ guard: { kind: 'maxAllocated', atMost: 5 } }, shards, undefined, 0).path,
    ).toBe('exact');
    expect(routeChange({ guard: { kind: 'snapshot', values: {} } }, shards, 1, 0).path).toBe(
      'exact',
    );
  });
});

describe('onHolds', () => {
  const scopes = ['tenant:t', 'tenant:t/workspace:w'];
  const r = aReservation(scopes, {
    holds: [
      { scope: 'tenant:t', shard: 3 },
      { scope: 'tenant:t/workspace:w', shard: 0 },
    ],
  });

  it('pins every settlement to its hold’s shard, shard 0 included and when none is recorded', () => {
    expect(releaseChanges(r).map((c) => c.shard)).toEqual([3, 0]);
    // A reservation whose holds all landed on shard 0 records none: its settlements go to 0,
    // never to a shard picked afresh (that would move reserved between shards).
    const unrecorded = reservationOf({
      pk: 'RESERVATION#rsv_1',
      type: 'reservation',
      tenant: 't',
      status: 'ACTIVE',
      unit: 'TOKENS',
      estimate: 10,
      scopes,
    });
    expect(releaseChanges(unrecorded).map((c) => c.shard)).toEqual([0, 0]);
  });
});

describe('heaviestPathExtra: sharded budgets on one path fit one transaction', () => {
  const T = 'tenant:acme';
  const W = `${T}/workspace:w`;

  it('leaves room for a path of every level plus the two records: 76 extra shards', () => {
    expect(MAX_SHARDS).toBe(64);
    expect(MAX_PATH_EXTRA_SHARDS).toBe(100 - 2 - 22);
  });

  it('adds ancestors, the budget itself and its heaviest chain of descendants', () => {
    const sharded = new Map([
      [T, 64],
      [`${W}/agent:a`, 8],
      [`${W}/agent:a/toolset:t`, 4],
      [`${W}/agent:b`, 10],
      [`${T}/workspace:w2`, 16],
    ]);

    // tenant 63 + workspace 3 + max(agent a 7 + toolset 3, agent b 9) = 76.
    expect(heaviestPathExtra(sharded, W, 4)).toBe(76);
    // An unsharded budget adds nothing of its own.
    expect(heaviestPathExtra(sharded, W, 1)).toBe(63 + 10);
    // A sibling's chain is not on the path: workspace:w2 is not under workspace:w.
    expect(heaviestPathExtra(new Map([[`${T}/workspace:w2`, 64]]), W, 64)).toBe(63);
  });

  it('counts the budget once when it is already in the map', () => {
    expect(heaviestPathExtra(new Map([[T, 64]]), T, 64)).toBe(63);
  });

  it('never allows a path past 98 ledger items, whatever order the budgets come in', () => {
    const levels = [T, W, `${W}/app:a`, `${W}/app:a/workflow:f`, `${W}/app:a/workflow:f/agent:g`];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...levels), fc.integer({ min: 1, max: MAX_SHARDS }))),
        (creations) => {
          const sharded = new Map<string, number>();
          for (const [scope, shards] of creations) {
            if (sharded.has(scope) || shards === 1) continue;
            if (heaviestPathExtra(sharded, scope, shards) <= MAX_PATH_EXTRA_SHARDS)
              sharded.set(scope, shards);
          }
          // Every level on the deepest path, unsharded ones counting 1, plus 16 dimension levels.
          const items = levels.reduce((sum, scope) => sum + (sharded.get(scope) ?? 1), 0) + 17;
          expect(items).toBeLessThanOrEqual(98);
        },
      ),
    );
  });
});

/** A move applied: what the store's conditional updates do (remaining and allocation). */
function applyMove(shards: readonly Shard[], move: ShardMove): Shard[] {
  return shards.map((s, k) => {
    const d = k === move.from ? -move.amount : k === move.to ? move.amount : 0;
    return d === 0 ? s : { ...s, allocated: s.allocated + d, remaining: s.remaining + d };
  });
}

describe('evenOutMoves: rights moved between two shards at a time', () => {
  const shard = (remaining: number, extra: Partial<Shard> = {}): Shard => ({
    allocated: remaining + (extra.spent ?? 0) + (extra.reserved ?? 0),
    spent: 0,
    reserved: 0,
    debt: 0,
    remaining,
    gated: false,
    ...extra,
  });

  it('fills new empty shards from the old ones, to an even share', () => {
    const grown = [shard(400, { reserved: 50 }), shard(400), shard(0), shard(0)];

    const moves = evenOutMoves(grown);
    const after = moves.reduce(applyMove, grown);

    expect(after.map((s) => s.remaining)).toEqual([200, 200, 200, 200]);
    expect(after[0]?.reserved).toBe(50);
    expect(moves.every((m) => m.amount > 0 && m.from !== m.to)).toBe(true);
  });

  it('moves nothing while the budget is gated', () => {
    expect(evenOutMoves([shard(10, { gated: true }), shard(0, { gated: true })])).toEqual([]);
  });

  it('keeps every sum and leaves no shard negative, whatever the shards hold', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            remaining: fc.integer({ min: 0, max: 10_000 }),
            spent: fc.integer({ min: 0, max: 1_000 }),
            reserved: fc.integer({ min: 0, max: 1_000 }),
          }),
          { minLength: 1, maxLength: MAX_SHARDS },
        ),
        (raw) => {
          const shards = raw.map((r) => shard(r.remaining, r));
          const before = mergedOf(
            { scope: 's', unit: 'USD_MICROCENTS', overdraftLimit: 0 },
            shards,
          );
          const moves = evenOutMoves(shards);
          const after = moves.reduce((s, m) => {
            const next = applyMove(s, m);
            expect(next[m.from]?.remaining).toBeGreaterThanOrEqual(0);
            return next;
          }, shards);

          expect(
            mergedOf({ scope: 's', unit: 'USD_MICROCENTS', overdraftLimit: 0 }, after),
          ).toEqual(before);
          const share = Math.floor(before.remaining / shards.length);
          for (const s of after) expect(s.remaining).toBeGreaterThanOrEqual(share);
        },
      ),
    );
  });
});
