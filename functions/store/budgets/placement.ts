import {
  type BudgetRef,
  type Budgets,
  balanceOf,
  budgetAt,
  budgetKey,
} from '../../domain/budget.js';
import { needOf, respread, routeChange, type Shard } from '../../domain/escrow.js';
import { applyDelta, type LedgerChange, type LedgerDelta } from '../../domain/ledger.js';
import { ATTRIBUTE, BUDGET_ALLOCATED, shardKey } from '../entities/ledger.js';
import { and, attr, type Condition, or, type TransactItem, update } from '../expressions.js';
import { hashOf, keys } from '../keys.js';
import { debtMark } from './watch.js';

// Where a budget change lands (domain/escrow.ts, docs/scaling.md): an unsharded budget's ledger
// item, under the change's own guard; a sharded one's shard (fast path) or every shard rewritten
// (exact path); a rolling budget's current period or the closed period a hold belongs to.

/** The items of changes placed on their budgets, and which of them prove a budget's state. */
export interface PlacedChanges {
  readonly items: TransactItem[];
  /** Per item: the index of the change whose failed condition proves a refusal, if any. */
  readonly proofs: (number | undefined)[];
  /** Per change: the shard it landed on (0 for an unsharded budget). */
  readonly shards: number[];
  /**
   * Whether a sharded budget is rewritten whole (exact path): conditioned on every shard as
   * read, such a write is not sent again after a conflict (another write moved a shard, so its
   * condition would fail): the operation reads again instead.
   */
  exact: boolean;
  /** The budgets (by budgetKey) rewritten whole. */
  readonly rewritten: string[];
  /** The sharded budgets touched, for this process's shard cache (store/write.ts). */
  readonly touches: ShardTouches;
}

/** What a write does to sharded budgets: changes on one shard each, and budgets rewritten whole. */
export interface ShardTouches {
  readonly fast: { readonly ref: BudgetRef; readonly shard: number; readonly delta: LedgerDelta }[];
  readonly whole: BudgetRef[];
}

/**
 * Each change as the items that apply it. An unsharded budget: its ledger item, with the
 * change's own guard (a failed condition there proves the refusal). A sharded one, routed by
 * `routeChange`: one shard under its own condition (fast), or every shard rewritten by
 * `respread` under the condition that none moved since it was read (exact). A failed shard
 * condition proves nothing about the budget: the operation reads again. `budgets`: as read
 * (a settlement pinned to its shard needs none: the sweeper reads no budgets).
 */
export function placeChanges(
  changes: readonly LedgerChange[],
  budgets: Budgets,
  seed: number,
): PlacedChanges {
  const placed: PlacedChanges = {
    items: [],
    proofs: [],
    shards: [],
    exact: false,
    rewritten: [],
    touches: { fast: [], whole: [] },
  };
  changes.forEach((change, i) => {
    const budget = budgetAt(budgets, change.scope, change.unit);
    const layout = budget?.layout.kind === 'sharded' ? budget.layout : undefined;
    // A closed period is one item whatever its budget's shards (store/entities/period.ts).
    if (change.period?.closed) {
      placed.items.push(ledgerUpdate(change));
      placed.proofs.push(i);
      placed.shards.push(change.shard ?? 0);
      return;
    }
    if (!budget || !layout) {
      if (change.shard && change.guard.kind === 'exists') {
        placed.items.push(shardUpdate(change, change.shard, undefined));
        placed.proofs.push(undefined);
        placed.touches.fast.push({ ref: change, shard: change.shard, delta: change.delta });
      } else {
        placed.items.push(ledgerUpdate(change));
        placed.proofs.push(i);
      }
      placed.shards.push(change.shard ?? 0);
      return;
    }
    const route = routeChange(change, layout.shards, change.shard, seed);
    if (route.path === 'fast') {
      placed.items.push(shardUpdate(change, route.shard, route.covers));
      placed.proofs.push(undefined);
      placed.shards.push(route.shard);
      placed.touches.fast.push({ ref: budget.ref, shard: route.shard, delta: change.delta });
      return;
    }
    const pin = change.shard ?? seed % layout.shards.length;
    const total = applyDelta(balanceOf(budget), change.delta);
    // The remaining gathers on shards that have what the change had to find on one.
    const after = respread(
      layout.shards,
      total,
      { shard: pin, delta: change.delta },
      needOf(change),
    );
    after.forEach((shard, k) => {
      placed.items.push(
        shardRewrite(change, k, layout.shards[k] as Shard, shard, {
          count: layout.shards.length,
          allocated: total.allocated,
        }),
      );
      placed.proofs.push(undefined);
    });
    placed.shards.push(pin);
    placed.exact = true;
    placed.rewritten.push(budgetKey(budget.ref));
    placed.touches.whole.push(budget.ref);
  });
  return placed;
}

/** The rewrites of whole budgets under way in this process, by budgetKey. */
const rewriting = new Map<string, Promise<unknown>>();

/**
 * One rewrite of a whole budget at a time in this process: a write that would rewrite a budget
 * another request of this process is rewriting waits for it and answers undefined instead of
 * being sent — it was decided on the shards before that rewrite, so its conditions would fail;
 * its caller reads again, and most likely finds a shard that covers it (the rewrite gathers the
 * remaining onto shards that do). A burst that meets a budget with no covering shard so sends
 * one rewrite, not one per request (docs/scaling.md § At the edges). Lambda runs one request
 * per process: there the rewrites race in DynamoDB and the losers read again.
 */
export async function oneRewriteAtATime<T>(
  budgets: readonly string[],
  write: () => Promise<T>,
): Promise<T | undefined> {
  const busy = budgets.map((b) => rewriting.get(b)).filter((p) => p !== undefined);
  if (busy.length > 0) {
    await Promise.allSettled(busy);
    return undefined;
  }
  const done = write();
  for (const b of budgets) rewriting.set(b, done);
  const forget = () => {
    for (const b of budgets) if (rewriting.get(b) === done) rewriting.delete(b);
  };
  done.then(forget, forget);
  return done;
}

/**
 * Every non-zero counter of a change's delta added to its attribute (remaining always); a change
 * that adds debt to a current period also marks the item for the debt watch (budgets/watch.ts).
 */
const deltaUpdate = (change: LedgerChange) => {
  const { delta } = change;
  const add: Record<string, number> = {};
  for (const field of ['allocated', 'spent', 'reserved', 'debt', 'remaining'] as const) {
    const d = delta[field];
    if (d || field === 'remaining') add[field] = d ?? 0;
  }
  const marks = (delta.debt ?? 0) > 0 && !change.period?.closed;
  return { add, ...(marks && { set: debtMark(change) }) };
};

/**
 * A new hold needs an ACTIVE budget: a freeze that lands between the read and the write fails
 * the condition, and the read that follows refuses BUDGET_FROZEN. On every item of a budget
 * (shards too), since a hold may land on any of them.
 */
export const openBudget = (): Condition =>
  or(attr('status').notExists(), attr('status').eq('ACTIVE'));

/**
 * A budget its tenant's close has not closed: the close closes every budget before the tenant's
 * record flips, so a change decided before that (a refund, a funding) fails here and, read again,
 * is refused 409 (the closed-tenant rule). On every item of a budget, as `openBudget`.
 */
export const notClosedBudget = (): Condition =>
  or(attr('status').notExists(), attr('status').ne('CLOSED'));

/** Refunds (`returns`) and the operator's changes decided on exact values never land on a closed budget. */
const refusesClosed = (change: LedgerChange): boolean =>
  change.guard.kind === 'returns' || change.guard.kind === 'snapshot';

/**
 * That a budget still has the n shards it was read with (on shard 0, which counts them): a
 * write to every shard must not miss one added since.
 */
export const shardCountIs = (n: number): Condition =>
  n === 1 ? attr('shards').notExists() : attr('shards').eq(n);

/** The conditional Update that applies one change to an unsharded budget's ledger item. */
export function ledgerUpdate(change: LedgerChange): TransactItem {
  const { guard, period } = change;
  const guarded: Condition[] = [];
  switch (guard.kind) {
    case 'exists':
      break;
    case 'admit':
      // SPEC core behaviour 2 and blocking rules 1-2: is_over_limit implies debt > 0.
      guarded.push(attr('remaining').gte(guard.amount), attr('debt').eq(0), openBudget());
      break;
    case 'covers':
      guarded.push(attr('remaining').gte(guard.amount));
      break;
    case 'maxAllocated':
      guarded.push(attr('allocated').lte(guard.atMost));
      break;
    case 'returns':
      guarded.push(attr('spent').gte(guard.spent), attr('debt').gte(guard.debt));
      break;
    case 'snapshot':
      for (const [field, value] of Object.entries(guard.values)) {
        guarded.push(attr(ATTRIBUTE[field as keyof typeof ATTRIBUTE]).eq(value));
      }
      break;
  }
  return update(
    period?.closed
      ? keys.ledgerPeriod(change.scope, change.unit, period.start)
      : keys.ledger(change.scope, change.unit),
    deltaUpdate(change),
    {
      condition: and(
        attr('pk').exists(),
        ...guarded,
        // Decided on the budget as one item: not once it has shards (PATCH `shards` since the
        // read), where the change must go by the exact path that keeps the gate.
        (guard.kind === 'snapshot' || guard.kind === 'maxAllocated') && shardCountIs(1),
        inCurrentPeriod(change),
        // A closed period's ledger has no status: only the budget's current item is closed.
        !period?.closed && refusesClosed(change) && notClosedBudget(),
      ),
      returnOld: true,
    },
  );
}

/** Decided in this period: a change must not land in the next one, should the budget roll over. */
const inCurrentPeriod = (change: LedgerChange): Condition | false =>
  change.period !== undefined &&
  !change.period.closed &&
  attr('period_start').eq(change.period.start);

/** The fast path: the change's delta on one shard, which must cover `covers` when given. */
function shardUpdate(change: LedgerChange, k: number, covers: number | undefined): TransactItem {
  return update(shardKey(change.scope, change.unit, k), deltaUpdate(change), {
    condition: and(
      attr('pk').exists(),
      covers !== undefined && attr('remaining').gte(covers),
      covers !== undefined && attr('gated').eq(false),
      change.guard.kind === 'admit' && openBudget(),
      // Every shard of a rolling budget carries its period (store/budgets/periods.ts).
      inCurrentPeriod(change),
      // A refund's spent comes off this shard: it must still hold that much.
      change.guard.kind === 'returns' && attr('spent').gte(change.guard.spent),
      refusesClosed(change) && notClosedBudget(),
    ),
  });
}

/** What a rewrite sets on a shard and what it checks was read. */
export const SHARD_FIELDS = [
  'allocated',
  'spent',
  'reserved',
  'debt',
  'remaining',
  'gated',
] as const;

/** A shard's attributes as a rewrite sets them. */
export const shardCounters = (s: Shard): Record<string, unknown> =>
  Object.fromEntries(SHARD_FIELDS.map((f) => [f, s[f]]));

/**
 * The exact path, one shard: its new counters, if it still holds what was read. Shard 0 also
 * keeps the budget's allocation (`budget_allocated`), for reads that are not one instant.
 */
function shardRewrite(
  change: LedgerChange,
  k: number,
  before: Shard,
  after: Shard,
  budget: { readonly count: number; readonly allocated: number },
): TransactItem {
  const set = shardCounters(after);
  if (k === 0) set[BUDGET_ALLOCATED] = budget.allocated;
  return update(
    shardKey(change.scope, change.unit, k),
    { set: { ...set, ...(after.debt > before.debt && debtMark(change)) } },
    {
      condition: and(
        attr('pk').exists(),
        // Laid out over the shards read: not once more shards were added (PATCH `shards`).
        k === 0 && shardCountIs(budget.count),
        ...SHARD_FIELDS.map((f) => attr(f).eq(before[f])),
        change.guard.kind === 'admit' && openBudget(),
        k === 0 && inCurrentPeriod(change),
        refusesClosed(change) && notClosedBudget(),
      ),
    },
  );
}

/**
 * The seed a hold's shard is picked from (domain/escrow.ts pickShard): stable for an id, so a
 * request placed again after a stale read tries the same shard first; another one for each
 * retry after a conflict, so that retry goes to a shard that is likely not busy.
 */
export const seedOf = (id: string, attempt = 0): number =>
  hashOf(attempt === 0 ? id : `${id}~${attempt}`);
