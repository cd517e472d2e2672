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
 * A shard that covers `amount` on its own, looking from `seed` onward, so concurrent holds
 * (seeded by their ids) spread over the shards instead of racing for the first.
 */
export function pickShard(
  shards: readonly Shard[],
  amount: number,
  seed: number,
): number | undefined {
  const n = shards.length;
  for (let i = 0; i < n; i++) {
    const k = (seed + i) % n;
    const shard = shards[k];
    if (shard && shardCovers(shard, amount)) return k;
  }
  return undefined;
}

/**
 * How a change reaches a sharded budget. `pinned` is the shard the reservation holds on (commit,
 * release, expiry); a hold or an event has none and may take any shard that covers it.
 */
export type Route =
  | { readonly path: 'fast'; readonly shard: number; readonly covers?: number | undefined }
  | { readonly path: 'exact' };

export function routeChange(
  change: Pick<LedgerChange, 'guard'>,
  shards: readonly Shard[],
  pinned: number | undefined,
  seed: number,
): Route {
  const guard: LedgerGuard = change.guard;
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
 * The exact path: the shards as `after` (the budget once the change is applied, computed on
 * the merged ledger) should be laid out. Holds stay where they are (a reservation settles on its
 * own shard), so the change's reserved and spent go to `pin`; debt goes to shard 0; and the
 * remaining is split evenly while the budget is healthy, so each shard can serve fast holds.
 * Each shard's allocation is whatever makes its own remaining come out; only their sum is
 * visible. Integers throughout.
 */
export function respread(
  shards: readonly Shard[],
  after: Counters,
  pin?: { readonly shard: number; readonly delta: LedgerDelta },
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
  const base = Math.floor(after.remaining / n);
  const extra = after.remaining - base * n;
  return shards.map((_, k) => {
    const debt = k === 0 ? after.debt : 0;
    const remaining = gated ? (k === 0 ? after.remaining : 0) : base + (k < extra ? 1 : 0);
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
 * The moves that even out a healthy budget's remaining over its shards, each between two shards
 * (so each is a small transaction that a busy budget lets through): from the shards above an
 * even share to those below, largest first. None while the shards are gated: only the exact path
 * may lay out a budget with debt or a negative remaining.
 */
export function evenOutMoves(shards: readonly Shard[]): ShardMove[] {
  if (shards.length < 2 || shards.some((s) => s.gated || s.debt > 0 || s.remaining < 0)) return [];
  const total = shards.reduce((sum, s) => sum + s.remaining, 0);
  const share = Math.floor(total / shards.length);
  const surplus = shards
    .map((s, k) => ({ k, left: s.remaining - share }))
    .filter((x) => x.left > 0)
    .sort((a, b) => b.left - a.left);
  const moves: ShardMove[] = [];
  for (const [to, s] of shards.entries()) {
    let need = share - s.remaining;
    for (const donor of surplus) {
      if (need <= 0) break;
      const amount = Math.min(need, donor.left);
      if (amount <= 0) continue;
      moves.push({ from: donor.k, to, amount });
      donor.left -= amount;
      need -= amount;
    }
  }
  return moves;
}
