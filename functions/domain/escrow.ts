import type { Counters } from './budget.js';
import type { LedgerChange, LedgerDelta, LedgerGuard } from './ledger.js';
import { LEVELS, MAX_DIMENSIONS } from './scopes.js';

/**
 * Escrow shards: a budget split N ways so that no single item takes every write (a DynamoDB
 * item takes one transaction at a time and cancels the others). Each shard holds part of the
 * allocation as its own counters; the budget is exactly their sum, and SPEC's rules are applied
 * to that sum, never to a shard (docs/scaling.md).
 *
 * Two ways to change a sharded budget:
 * - **fast**: one shard, with a condition only that shard needs to check. Taking budget (a hold,
 *   a covered overage, an event) needs `shardCovers`; giving it back (commit at or under the
 *   estimate, release, expiry) needs nothing. Invariant E: while the shards are not gated,
 *   every shard's remaining is ≥ 0 and the budget has no debt, so a shard that covers an amount
 *   proves the budget does.
 * - **exact**: every shard at once, each conditioned on the values read, the change computed on
 *   their sum by the ordinary domain rules, and the shards laid out afresh by `respread`. Used
 *   for refusals, debt and overdraft, funding, and when no single shard has room.
 *
 * Debt and the overdraft limit live on shard 0 only; `gated` is set on every shard while the
 * budget has debt or a negative remaining, which turns every taking of budget to the exact path.
 */
export interface Shard extends Counters {
  readonly gated: boolean;
}

/** Shards per budget at most (docs/scaling.md: 64 carry one budget past 1,000 pairs/s). */
export const MAX_SHARDS = 64;

/**
 * An exact write touches every shard of every budget on its subject's path in one transaction of
 * at most 100 items, two of them not ledgers (the reservation, event or funding record, and an
 * audit record). A path has at most 6 + 16 levels (LEVELS and MAX_DIMENSIONS), each budget one
 * item unsharded; so what sharding adds along one path, Σ (shards − 1), may be 98 − 22 = 76.
 */
export const MAX_PATH_EXTRA_SHARDS = 100 - 2 - (LEVELS.length + MAX_DIMENSIONS);

/** Whether `inner` is `outer` or below it in the scope path. */
const within = (inner: string, outer: string) => inner === outer || inner.startsWith(`${outer}/`);

/**
 * Σ (shards − 1) on the heaviest path through `scope` once it has `shards`, given the other
 * sharded budgets of its tenant in the same unit (scope → shards): its ancestors, itself, and
 * the heaviest chain of its sharded descendants. At most MAX_PATH_EXTRA_SHARDS is allowed.
 */
export function heaviestPathExtra(
  sharded: ReadonlyMap<string, number>,
  scope: string,
  shards: number,
): number {
  const extra = (n: number) => Math.max(0, n - 1);
  let above = 0;
  const below: [string, number][] = [];
  for (const [other, n] of sharded) {
    if (other === scope) continue;
    if (within(scope, other)) above += extra(n);
    else if (within(other, scope)) below.push([other, n]);
  }
  const chains = below.map(([leaf]) =>
    below.reduce((sum, [other, n]) => sum + (within(leaf, other) ? extra(n) : 0), 0),
  );
  return above + extra(shards) + Math.max(0, ...chains);
}

/** The counters of the budget a set of shards makes up: their sums. */
export function sumShards(shards: readonly Shard[]): Counters {
  const sum = (field: keyof Counters) => shards.reduce((total, s) => total + s[field], 0);
  return {
    allocated: sum('allocated'),
    spent: sum('spent'),
    reserved: sum('reserved'),
    debt: sum('debt'),
    remaining: sum('remaining'),
  };
}

/** While this holds, only the exact path may take budget (invariant E would not hold). */
export const mustGate = (budget: Counters): boolean => budget.debt > 0 || budget.remaining < 0;

/** The fast path's condition for taking `amount` from one shard (by invariant E, enough). */
export const shardCovers = (s: Shard, amount: number): boolean => !s.gated && s.remaining >= amount;

/**
 * A shard that covers `amount` on its own, chosen among those that do by `seed`, so concurrent
 * holds (seeded by their ids) spread over them instead of racing for the first — also when the
 * remaining is gathered on a few shards (`liveShards`).
 */
export function pickShard(
  shards: readonly Shard[],
  amount: number,
  seed: number,
): number | undefined {
  const covering: number[] = [];
  shards.forEach((shard, k) => {
    if (shardCovers(shard, amount)) covering.push(k);
  });
  return covering.length === 0 ? undefined : covering[seed % covering.length];
}

/**
 * How a change reaches a sharded budget. `pinned` is the shard the reservation holds on (commit,
 * release, expiry); a hold or an event has none and may take any shard that covers it.
 */
export type Route =
  | { readonly path: 'fast'; readonly shard: number; readonly covers?: number | undefined }
  | { readonly path: 'exact' };

export function routeChange(
  change: Pick<LedgerChange, 'guard'> & { readonly delta?: LedgerDelta | undefined },
  shards: readonly Shard[],
  pinned: number | undefined,
  seed: number,
): Route {
  const guard: LedgerGuard = change.guard;
  // A change of the allocation (funding) rewrites every shard: the budget's allocation, kept on
  // shard 0 for reads that are not one instant (store/budgets/read.ts), changes with it.
  if ((change.delta?.allocated ?? 0) !== 0) return { path: 'exact' };
  switch (guard.kind) {
    case 'exists':
      // Gives budget back (or charges exactly what is held): no shard condition needed.
      return { path: 'fast', shard: pinned ?? seed % shards.length };
    case 'admit':
    case 'covers': {
      const shard =
        pinned === undefined
          ? pickShard(shards, guard.amount, seed)
          : shardCovers(shards[pinned] ?? ZERO, guard.amount)
            ? pinned
            : undefined;
      return shard === undefined
        ? { path: 'exact' }
        : { path: 'fast', shard, covers: guard.amount };
    }
    case 'returns': {
      // A refund: debt lives on shard 0 and gates the budget, so it goes exact; taking back only
      // spent, any one shard that still holds that much spent will do (its own, first).
      if (guard.debt > 0) return { path: 'exact' };
      const n = shards.length;
      const first = pinned ?? seed % n;
      for (let i = 0; i < n; i++) {
        const k = (first + i) % n;
        if ((shards[k]?.spent ?? 0) >= guard.spent) return { path: 'fast', shard: k };
      }
      return { path: 'exact' };
    }
    case 'snapshot':
    case 'maxAllocated':
      return { path: 'exact' };
  }
}

const ZERO: Shard = { allocated: 0, spent: 0, reserved: 0, debt: 0, remaining: 0, gated: true };

/** A fast change on one shard (the store applies the same delta atomically). */
export function applyToShard(s: Shard, delta: LedgerDelta): Shard {
  return {
    allocated: s.allocated + (delta.allocated ?? 0),
    spent: s.spent + (delta.spent ?? 0),
    reserved: s.reserved + (delta.reserved ?? 0),
    debt: s.debt + (delta.debt ?? 0),
    remaining: s.remaining + (delta.remaining ?? 0),
    gated: s.gated,
  };
}

/**
 * Over how many shards a healthy budget's remaining is laid out: all n, so that each serves
 * fast holds, unless it would not fill n shards with `need` each (the amount the change that
 * ran the exact path had to find on one shard): then over as many as it fills, at least one.
 * So as a budget runs low its remaining gathers onto fewer shards: holds stay on the fast path
 * until it is truly spent, a refusal is decided on few live shards, and a burst near exhaustion
 * does not turn every hold into a write of every shard (docs/scaling.md § At the edges).
 */
export function liveShards(n: number, remaining: number, need = 0): number {
  if (!(need > 0)) return n;
  return Math.min(n, Math.max(1, Math.floor(remaining / need)));
}

/** What a change had to find on one shard: the exact path gathers the remaining by it. */
export const needOf = (change: Pick<LedgerChange, 'guard'>): number | undefined =>
  change.guard.kind === 'admit' || change.guard.kind === 'covers' ? change.guard.amount : undefined;

/**
 * The exact path: the shards as `after` (the budget once the change is applied, computed on
 * the merged ledger) should be laid out. Holds stay where they are (a reservation settles on its
 * own shard), so the change's reserved and spent go to `pin`; debt goes to shard 0; and the
 * remaining is split evenly over shards 0..m−1 (`liveShards`, given `need`) while the budget is
 * healthy, so each of them can serve fast holds. Each shard's allocation is whatever makes its
 * own remaining come out; only their sum is visible. Integers throughout.
 */
export function respread(
  shards: readonly Shard[],
  after: Counters,
  pin?: { readonly shard: number; readonly delta: LedgerDelta },
  need?: number,
): Shard[] {
  const n = shards.length;
  const gated = mustGate(after);
  const reserved = shards.map(
    (s, k) => s.reserved + (k === pin?.shard ? (pin.delta.reserved ?? 0) : 0),
  );
  const spent = shards.map((s, k) => s.spent + (k === pin?.shard ? (pin.delta.spent ?? 0) : 0));
  const total = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
  if (total(reserved) !== after.reserved || total(spent) !== after.spent) {
    throw new Error('respread: the shards and the budget disagree on reserved or spent');
  }
  const m = gated ? 1 : liveShards(n, after.remaining, need);
  const base = Math.floor(after.remaining / m);
  const extra = after.remaining - base * m;
  return shards.map((_, k) => {
    const debt = k === 0 ? after.debt : 0;
    const remaining = k >= m ? 0 : base + (k < extra ? 1 : 0);
    return {
      allocated: remaining + (spent[k] ?? 0) + (reserved[k] ?? 0) + debt,
      spent: spent[k] ?? 0,
      reserved: reserved[k] ?? 0,
      debt,
      remaining,
      gated,
    };
  });
}

/** `n` empty shards: `respread(emptyShards(n), budget)` splits a new budget n ways. */
export const emptyShards = (n: number): Shard[] =>
  Array.from({ length: n }, () => ({ ...ZERO, gated: false }));

/** Part of one shard's remaining (with its allocation) moved to another: the budget's sum stays. */
export interface ShardMove {
  readonly from: number;
  readonly to: number;
  readonly amount: number;
}

/**
 * The moves that even out a healthy budget's remaining over its live shards (`liveShards`, given
 * `need`: all of them unless the remaining is short of a hold of `need` on each), each between two
 * shards (so each is a small transaction that a busy budget lets through): from the shards above
 * their share to those below, largest first. A shard past the live ones has a share of 0, so a
 * budget running low is gathered onto fewer shards this way too. None while the shards are gated:
 * only the exact path may lay out a budget with debt or a negative remaining.
 */
export function evenOutMoves(shards: readonly Shard[], need = 0): ShardMove[] {
  if (shards.length < 2 || shards.some((s) => s.gated || s.debt > 0 || s.remaining < 0)) return [];
  const total = shards.reduce((sum, s) => sum + s.remaining, 0);
  const live = liveShards(shards.length, total, need);
  const shareOf = (k: number) => (k < live ? Math.floor(total / live) : 0);
  const surplus = shards
    .map((s, k) => ({ k, left: s.remaining - shareOf(k) }))
    .filter((x) => x.left > 0)
    .sort((a, b) => b.left - a.left);
  const moves: ShardMove[] = [];
  for (const [to, s] of shards.entries()) {
    let want = shareOf(to) - s.remaining;
    for (const donor of surplus) {
      if (want <= 0) break;
      const amount = Math.min(want, donor.left);
      if (amount <= 0) continue;
      moves.push({ from: donor.k, to, amount });
      donor.left -= amount;
      want -= amount;
    }
  }
  return moves;
}

/**
 * The most shards a budget at `scope` may have, given the other sharded budgets of its tenant in
 * its unit (scope → shards): what keeps every path through it within one transaction.
 */
export const mostShardsOnPaths = (sharded: ReadonlyMap<string, number>, scope: string): number =>
  Math.min(MAX_SHARDS, MAX_PATH_EXTRA_SHARDS - heaviestPathExtra(sharded, scope, 1) + 1);

/**
 * The count a budget that met sustained contention grows to by itself: `factor` times (2 unless
 * told), at most `ceiling` (AUTO_SHARDS_MAX) and `room` (the path rule); undefined when it
 * cannot grow.
 */
export function grownShardCount(
  current: number,
  ceiling: number,
  room: number,
  factor = 2,
): number | undefined {
  const to = Math.min(current * factor, ceiling, room);
  return to > current ? to : undefined;
}

/**
 * How many times its shards a hot budget grows by: enough to bring the share of its
 * transactions that meet a conflict (`share`, 0–1) down to `target` if the load spread evenly
 * (each shard then meets share ÷ factor), a power of two from 2 to 8. A budget that half its
 * transactions find busy grows 1 → 8 at once instead of in three steps a second apart, in which
 * its reserves keep being turned away.
 */
export function growthFactor(share: number, target: number): number {
  const wanted = target > 0 ? share / target : 2;
  let factor = 2;
  while (factor < 8 && factor < wanted) factor *= 2;
  return factor;
}

/**
 * Whether a sharded budget's remaining is gathered on some of its shards (`liveShards`): it is
 * running low, and more shards would only be spread thin (fewer than half hold any).
 */
export function runningLow(shards: readonly Shard[]): boolean {
  const holding = shards.filter((s) => s.remaining > 0).length;
  return holding * 2 < shards.length;
}
