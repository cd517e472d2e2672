import type { Unit } from '../../domain/amounts.js';
import { type Budget, budgetKey } from '../../domain/budget.js';
import { emptyShards, respread, type Shard } from '../../domain/escrow.js';
import { BUDGET_ALLOCATED, shardKey } from '../entities/ledger.js';
import { closedPeriodItem, closedPeriodOf, isClosedPeriodItem } from '../entities/period.js';
import { and, attr, putIfAbsent, update } from '../expressions.js';
import { keys } from '../keys.js';
import { queryPage } from '../pages.js';
import { getItems, transact } from '../transact.js';
import { SHARD_FIELDS, shardCounters, shardCountIs } from './placement.js';
import { forgetShards } from './shard-cache.js';

// Rolling budgets in the table (domain/period.ts): the ledger item is the current period's;
// each closed period has an item of its own, in one partition per budget, by start.

/**
 * A rolling budget enters its next period (domain/period.ts `rolledOver`), exactly once: the
 * budget as read becomes the closed period's own item (with its holds, which settle there; its
 * debt moves on), and the ledger item becomes `after`. Conditioned on the ledger still being what
 * was read: of concurrent requests that see the boundary, one rolls over, the others fail and
 * read again ('stale').
 */
export async function rollOverLedger(
  tenant: string,
  before: Budget,
  after: Budget,
): Promise<'rolled' | 'stale'> {
  const { scope, unit } = before.ref;
  if (!before.period || !after.period) throw new Error(`${scope} does not roll over`);
  if (before.layout.kind === 'sharded') return rollOverShards(tenant, before, after);
  const was = before.counters;
  const outcome = await transact([
    putIfAbsent(closedPeriodItem(tenant, before)),
    update(
      keys.ledger(scope, unit),
      {
        set: {
          allocated: after.counters.allocated,
          spent: after.counters.spent,
          reserved: after.counters.reserved,
          remaining: after.counters.remaining,
          period_start: after.period.start,
          period_end: after.period.end,
        },
      },
      {
        condition: and(
          attr('period_start').eq(before.period.start),
          attr('allocated').eq(was.allocated),
          attr('spent').eq(was.spent),
          attr('reserved').eq(was.reserved),
          attr('debt').eq(was.debt),
        ),
      },
    ),
  ]);
  return outcome.kind === 'committed' ? 'rolled' : 'stale';
}

/**
 * A sharded rolling budget enters its next period: every shard moves together, in one
 * transaction, each conditioned on its counters as read (so the closed period's item is their
 * exact sum at that instant) and shard 0 on the period and the count. The closed period is one
 * item, whatever the budget's shards: the holds taken in it settle there, few and late, so it
 * needs no spreading (docs/decisions.md § Rolling budgets). The new period's allocation is
 * spread over the shards as a new budget's is; its debt (carried on) on shard 0.
 */
async function rollOverShards(
  tenant: string,
  before: Budget,
  after: Budget,
): Promise<'rolled' | 'stale'> {
  const { scope, unit } = before.ref;
  if (before.layout.kind !== 'sharded' || !before.period || !after.period) {
    throw new Error(`${scope} is not a sharded rolling budget`);
  }
  const read = before.layout.shards;
  const next = respread(emptyShards(read.length), after.counters);
  const { start, end } = after.period;
  const outcome = await transact(
    [
      putIfAbsent(closedPeriodItem(tenant, before)),
      ...next.map((shard, k) =>
        update(
          shardKey(scope, unit, k),
          {
            set: {
              ...shardCounters(shard),
              period_start: start,
              period_end: end,
              ...(k === 0 && { [BUDGET_ALLOCATED]: after.counters.allocated }),
            },
          },
          {
            condition: and(
              attr('period_start').eq(before.period?.start),
              k === 0 && shardCountIs(read.length),
              ...SHARD_FIELDS.map((f) => attr(f).eq((read[k] as Shard)[f])),
            ),
          },
        ),
      ),
    ],
    'settle',
  );
  forgetShards(before.ref);
  return outcome.kind === 'committed' ? 'rolled' : 'stale';
}

/** The budgets of closed periods (`period.closed`), by budgetKey: where holds taken in them settle. */
export async function getClosedPeriodBudgets(
  wanted: readonly { readonly scope: string; readonly unit: Unit; readonly start: number }[],
): Promise<Map<string, Budget>> {
  const items = await getItems(wanted.map((w) => keys.ledgerPeriod(w.scope, w.unit, w.start)));
  const budgets = new Map<string, Budget>();
  for (const item of items.values()) {
    if (!isClosedPeriodItem(item)) continue;
    const budget = closedPeriodOf(item);
    budgets.set(budgetKey(budget.ref), budget);
  }
  return budgets;
}

/** A rolling budget's closed periods, newest first. */
export async function queryClosedPeriods(q: {
  readonly scope: string;
  readonly unit: Unit;
  readonly after?: string | undefined;
  readonly limit: number;
}) {
  const { pk } = keys.ledgerPeriod(q.scope, q.unit, 0);
  const page = await queryPage({
    partitionKey: 'pk',
    partition: pk,
    sortKey: 'sk',
    lowest: '',
    highest: '~',
    newestFirst: true,
    after: q.after,
    limit: q.limit,
  });
  return {
    periods: page.items.filter(isClosedPeriodItem).map(closedPeriodOf),
    nextPosition: page.nextPosition,
  };
}
