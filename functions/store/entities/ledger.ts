import type { Unit } from '../../domain/amounts.js';
import {
  type Budget,
  type BudgetLayout,
  type BudgetRef,
  type BudgetStatus,
  type Counters,
  SINGLE,
} from '../../domain/budget.js';
import { normalThresholds } from '../../domain/budget-events.js';
import type { BudgetCaps, Caps } from '../../domain/caps.js';
import type { Shard } from '../../domain/escrow.js';
import type { LedgerField } from '../../domain/ledger.js';
import type { LedgerPeriod, Period, PeriodKind } from '../../domain/period.js';
import type { Segment, SegmentKind } from '../../domain/scopes.js';
import { segmentText } from '../../domain/scopes.js';
import type { Item, Key } from '../expressions.js';
import { keys } from '../keys.js';

// The ledger family: a budget's ledger item (shard 0 of a sharded budget, with the budget's
// status and settings), the items of its shards k ≥ 1, and its ledger index entries, one per
// segment of its path (docs/table-design.md). A closed period's ledger is store/entities/period.ts.

/** Written on every item of the family from this version on (absent: written before). */
export const LEDGER_VERSION = 1;

export const isLedgerItem = (item: Item | undefined): item is Item => item?.type === 'ledger';
export const isShardItem = (item: Item | undefined): item is Item => item?.type === 'ledger-shard';

/** The item attribute of each field of a ledger a guard or a change names. */
export const ATTRIBUTE: Record<LedgerField, string> = {
  allocated: 'allocated',
  spent: 'spent',
  reserved: 'reserved',
  debt: 'debt',
  overdraftLimit: 'overdraft_limit',
  remaining: 'remaining',
};

/**
 * On shard 0 of a sharded budget: the budget's allocation (the sum of its shards'), changed only
 * by the writes that change it (creation, funding, a rollover, each of which rewrites every
 * shard), so that a read that is not one instant still reports it exactly
 * (store/budgets/read.ts). Absent on budgets sharded before it was kept: their shards' sum.
 */
export const BUDGET_ALLOCATED = 'budget_allocated';

/** Shard 0 is the ledger item; shard k ≥ 1 has a partition of its own. */
export const shardKey = (scope: string, unit: Unit, k: number): Key =>
  k === 0 ? keys.ledger(scope, unit) : keys.ledgerShard(scope, unit, k);

export const shardCountOf = (item: Item): number => Number(item.shards ?? 1);

// ---- encode -----------------------------------------------------------------------------------

const countersAttributes = (c: Counters) => ({
  allocated: c.allocated,
  spent: c.spent,
  reserved: c.reserved,
  debt: c.debt,
  remaining: c.remaining,
});

/**
 * A new budget's ledger item: its counters (shard 0's part of them when sharded, with the count
 * and the gate), its overdraft limit and settings. On the item every reservation reads anyway:
 * caps, period and thresholds cost no read of their own.
 */
export function ledgerItem(tenant: string, budget: Budget, createdAt: string): Item {
  const { scope, unit } = budget.ref;
  const shards = budget.layout.kind === 'sharded' ? budget.layout.shards : undefined;
  const first = shards?.[0] ?? budget.counters;
  return {
    ...keys.ledger(scope, unit),
    type: 'ledger',
    v: LEDGER_VERSION,
    tenant,
    scope,
    unit,
    ...countersAttributes(first),
    overdraft_limit: budget.overdraftLimit,
    created_at: createdAt,
    ...(shards && {
      shards: shards.length,
      gated: shards[0]?.gated ?? false,
      [BUDGET_ALLOCATED]: budget.counters.allocated,
    }),
    ...(budget.caps && budgetCapsAttributes(budget.caps)),
    ...(budget.period && ledgerPeriodAttributes(budget.period)),
    ...(budget.thresholds && { thresholds: thresholdsAttribute(budget.thresholds) }),
    ...(budget.maxReservationAmount !== undefined && { max_hold: budget.maxReservationAmount }),
  };
}

/**
 * Shard k ≥ 1 of a sharded budget; a frozen budget's new shards are frozen too. A rolling
 * budget's shards each carry its current period, which every hold and settlement placed on
 * them is conditioned on (store/budgets/placement.ts) and a rollover moves on all of them.
 */
export const shardItem = (
  ref: BudgetRef,
  k: number,
  shard: Shard,
  status: BudgetStatus = 'ACTIVE',
  period?: Period | undefined,
): Item => ({
  ...shardKey(ref.scope, ref.unit, k),
  type: 'ledger-shard',
  v: LEDGER_VERSION,
  scope: ref.scope,
  unit: ref.unit,
  shard: k,
  ...countersAttributes(shard),
  gated: shard.gated,
  ...(status !== 'ACTIVE' && { status }),
  ...(period && { period_start: period.start, period_end: period.end }),
});

/** The ledger index entries of a budget: one per segment of its path, so a filter is one Query. */
export function ledgerIndexItems(tenant: string, ref: BudgetRef, segments: readonly Segment[]) {
  const texts = segments.map(segmentText);
  const level: SegmentKind = segments[segments.length - 1]?.kind ?? 'tenant';
  return texts.map(
    (segment): Item => ({
      ...keys.ledgerIndex(tenant, segment, ref.scope, ref.unit),
      type: 'ledger-index',
      v: LEDGER_VERSION,
      scope: ref.scope,
      unit: ref.unit,
      level,
      segments: new Set(texts),
    }),
  );
}

/**
 * A budget's caps, on its ledger item (shard 0 of a sharded budget): `caps` as JSON text (one
 * attribute, not a map of lists, to keep the hot item small) and `caps_bps` for a soft landing.
 */
export const budgetCapsAttributes = (b: BudgetCaps): Item => ({
  caps: JSON.stringify(b.caps),
  ...(b.belowRemainingBps !== undefined && { caps_bps: b.belowRemainingBps }),
});

/**
 * A budget's event thresholds (domain/budget-events.ts), on its ledger item only when not the
 * default: JSON text, like the caps, so a change can be conditioned on the value read.
 */
export const thresholdsAttribute = (percents: readonly number[]): string =>
  JSON.stringify(normalThresholds(percents));

/** The attributes that make a ledger item roll over (domain/period.ts). */
export const ledgerPeriodAttributes = (p: LedgerPeriod): Item => ({
  period_kind: p.spec.kind,
  ...(p.spec.anchorDay !== undefined && { period_anchor: p.spec.anchorDay }),
  period_amount: p.amount,
  period_start: p.start,
  period_end: p.end,
});

// ---- decode -----------------------------------------------------------------------------------
// No older format: every item of the family written so far reads as the current one (absent
// status: ACTIVE; absent shards: 1; absent gated: false; absent caps, period, thresholds or
// max_hold: none).

/** The counters of a ledger, shard or closed-period item. */
export const countersOf = (item: Item): Counters => ({
  allocated: Number(item.allocated),
  spent: Number(item.spent),
  reserved: Number(item.reserved),
  debt: Number(item.debt),
  remaining: Number(item.remaining),
});

export const shardOf = (item: Item): Shard => ({ ...countersOf(item), gated: item.gated === true });

const statusOf = (item: Item): BudgetStatus =>
  item.status === 'FROZEN' || item.status === 'CLOSED' ? item.status : 'ACTIVE';

/**
 * The budget a ledger item (or a closed period's) holds: the whole budget when unsharded.
 * `layout`, for a sharded budget: its shards, whose sums are its counters.
 */
export function budgetOfItem(item: Item, layout: BudgetLayout = SINGLE): Budget {
  return {
    ref: { scope: String(item.scope), unit: item.unit as Unit },
    counters: countersOf(item),
    status: statusOf(item),
    overdraftLimit: Number(item.overdraft_limit),
    caps: budgetCapsOf(item),
    period: ledgerPeriodOf(item),
    thresholds: thresholdsOf(item),
    maxReservationAmount: item.max_hold === undefined ? undefined : Number(item.max_hold),
    layout,
  };
}

export function budgetCapsOf(item: Item): BudgetCaps | undefined {
  if (typeof item.caps !== 'string') return undefined;
  return {
    caps: JSON.parse(item.caps) as Caps,
    ...(item.caps_bps !== undefined && { belowRemainingBps: Number(item.caps_bps) }),
  };
}

export function thresholdsOf(item: Item): number[] | undefined {
  if (typeof item.thresholds !== 'string') return undefined;
  return (JSON.parse(item.thresholds) as unknown[]).map(Number);
}

/** A rolling budget's period, as its ledger item (or a closed period's item) carries it. */
export function ledgerPeriodOf(item: Item): LedgerPeriod | undefined {
  if (typeof item.period_kind !== 'string') return undefined;
  return {
    start: Number(item.period_start),
    end: Number(item.period_end),
    spec: {
      kind: item.period_kind as PeriodKind,
      ...(item.period_anchor !== undefined && { anchorDay: Number(item.period_anchor) }),
    },
    amount: Number(item.period_amount),
    ...(item.type === 'ledger-period' && { closed: true as const }),
  };
}
