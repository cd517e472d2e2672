import type { Unit } from './amounts.js';
import { type Budget, type Counters, isOverLimit } from './budget.js';
import { derivedId } from './fingerprint.js';
import type { Period } from './period.js';
import type { RefusalCode } from './refusals.js';
import type { Action, Reservation } from './reservation.js';
import type { Subject } from './scopes.js';

/**
 * Budget events (docs/decisions.md § Events and webhooks): what a change of the table means to someone
 * watching a budget, derived from an item as it was and as it became. Pure: the stream consumer
 * (jobs/budget-events.ts) decodes the images, these functions decide, the edge renders.
 *
 * Type names are the reference's EventType values (cycles-governance-admin v0.1.25).
 */
export const BUDGET_EVENT_TYPES = [
  'budget.threshold_crossed',
  'budget.exhausted',
  'budget.debt_incurred',
  'budget.over_limit_entered',
  'budget.over_limit_exited',
  'reservation.expired',
  'reservation.denied',
  'reservation.commit_overage',
] as const;
export type BudgetEventType = (typeof BUDGET_EVENT_TYPES)[number];

/** Percent of the allocation used (spent + reserved) at which a budget reports itself. */
export const DEFAULT_THRESHOLDS: readonly number[] = [50, 80, 100];
export const MAX_THRESHOLDS = 10;

/** Sorted, without duplicates: the one form thresholds are stored and compared in. */
export const normalThresholds = (percents: readonly number[]): number[] =>
  [...new Set(percents)].sort((a, b) => a - b);

export const isDefaultThresholds = (percents: readonly number[]): boolean =>
  normalThresholds(percents).join() === DEFAULT_THRESHOLDS.join();

/**
 * What an event reports of a budget: a whole budget (domain/budget.ts), or as much of one as one
 * image of the table shows (a ledger item's counters, thresholds and period).
 */
export type BudgetState = Pick<Budget, 'ref' | 'counters' | 'overdraftLimit' | 'thresholds'> & {
  /** A rolling budget's current period. */
  readonly period?: Period | undefined;
};

/** A reservation refused with 409, as the refusing request recorded it. */
export interface Refusal {
  readonly refusalId: string;
  readonly tenant: string;
  readonly atMs: number;
  readonly code: RefusalCode;
  readonly scope: string;
  readonly unit: Unit;
  readonly requested: number;
  readonly remaining: number;
  readonly subject: Subject;
  readonly action: Action;
  readonly keyId?: string | undefined;
  readonly requestId?: string | undefined;
  readonly traceId?: string | undefined;
  /** Refusals of the same kind this process did not record since it recorded the last one. */
  readonly suppressed: number;
}

interface EventBase {
  /** Stable: the same change, delivered again, has the same id (consumers deduplicate on it). */
  readonly id: string;
  readonly tenant: string;
  /** When it happened, epoch ms. */
  readonly at: number;
}

export type BudgetEvent =
  | (EventBase & {
      readonly type: 'budget.threshold_crossed';
      readonly budget: BudgetState;
      /** Percent, 1–100. */
      readonly threshold: number;
    })
  | (EventBase & { readonly type: 'budget.exhausted'; readonly budget: BudgetState })
  | (EventBase & {
      readonly type: 'budget.debt_incurred';
      readonly budget: BudgetState;
      readonly incurred: number;
    })
  | (EventBase & { readonly type: 'budget.over_limit_entered'; readonly budget: BudgetState })
  | (EventBase & { readonly type: 'budget.over_limit_exited'; readonly budget: BudgetState })
  | (EventBase & { readonly type: 'reservation.expired'; readonly reservation: Reservation })
  | (EventBase & {
      readonly type: 'reservation.commit_overage';
      readonly reservation: Reservation;
      /** What the commit charged: more than the estimate held. */
      readonly actual: number;
    })
  | (EventBase & { readonly type: 'reservation.denied'; readonly refusal: Refusal });

/** What the allocation is used by: spent and held (SPEC's utilization). */
const usedOf = (c: Counters): bigint => BigInt(c.spent) + BigInt(c.reserved);

/**
 * Whether (spent + reserved) / allocated ≥ percent / 100, compared exactly as integers (the
 * products pass 2^53 for large amounts). A budget with nothing allocated has reached every
 * threshold once anything is used on it, and none before.
 */
export function reached(c: Counters, percent: number): boolean {
  const used = usedOf(c);
  if (c.allocated <= 0) return used > 0n;
  return used * 100n >= BigInt(percent) * BigInt(c.allocated);
}

/** (spent + reserved) / allocated as a ratio; undefined when nothing is allocated. */
export const utilizationOf = (c: Counters): number | undefined =>
  c.allocated > 0 ? (c.spent + c.reserved) / c.allocated : undefined;

/**
 * Whether a write took budget from a ledger or one shard of it: its remaining went down, or its
 * usage (spent + held) up. After such a write a budget may have crossed a threshold.
 */
export const takesBudget = (before: Counters, after: Counters): boolean =>
  after.remaining < before.remaining || usedOf(after) > usedOf(before);

/**
 * The id of a usage crossing names what was crossed, not the write that crossed it: the budget,
 * its period, its allocation and the threshold. Usage that dips and rises again, or several
 * writes seen to cross it (the shards of one budget), give the same id, so a consumer that
 * deduplicates sees each threshold once per period and allocation; funding (a new allocation)
 * or a new period arms it again.
 */
function crossingId(type: BudgetEventType, tenant: string, b: BudgetState, what = ''): string {
  const { scope, unit } = b.ref;
  const { allocated } = b.counters;
  return derivedId(
    'evt',
    type,
    tenant,
    scope,
    unit,
    String(b.period?.start ?? 0),
    String(allocated),
    what,
  );
}

/** An event that happens at most once per write: its id is the write's (the stream record's). */
const occurrenceId = (type: BudgetEventType, recordId: string): string =>
  derivedId('evt', type, recordId);

/** One write to a budget's ledger, as the stream reports it. */
export interface LedgerTransition {
  /** The stream record's id: redelivered, it is the same. */
  readonly recordId: string;
  readonly tenant: string;
  readonly at: number;
  /** Absent: the write created the item. */
  readonly before?: BudgetState | undefined;
  readonly after: BudgetState;
}

/**
 * What usage is compared against: the image before, unless the write created the budget or
 * started a new period (a rollover resets spent and held): then a budget with nothing used, so
 * nothing is ever reported crossed downward, and the new period crosses its thresholds anew.
 */
function usageBaseline({ before, after }: LedgerTransition): BudgetState {
  if (before && before.period?.start === after.period?.start) return before;
  const c = after.counters;
  return { ...after, counters: { ...c, spent: 0, reserved: 0, remaining: c.allocated - c.debt } };
}

/**
 * Usage events of one write: each threshold crossed upward (below before, at or above after),
 * and exhaustion (remaining from above 0 to 0 or below).
 */
export function usageEvents(t: LedgerTransition): BudgetEvent[] {
  const base = usageBaseline(t);
  const { after, tenant, at } = t;
  const events: BudgetEvent[] = [];
  for (const threshold of after.thresholds ?? DEFAULT_THRESHOLDS) {
    if (reached(after.counters, threshold) && !reached(base.counters, threshold)) {
      const id = crossingId('budget.threshold_crossed', tenant, after, String(threshold));
      events.push({ type: 'budget.threshold_crossed', id, tenant, at, budget: after, threshold });
    }
  }
  if (base.counters.remaining > 0 && after.counters.remaining <= 0) {
    const id = crossingId('budget.exhausted', tenant, after);
    events.push({ type: 'budget.exhausted', id, tenant, at, budget: after });
  }
  return events;
}

const debtOf = (b: BudgetState) => ({ debt: b.counters.debt, overdraftLimit: b.overdraftLimit });

/**
 * Debt events of one write: debt incurred (debt went up), over-limit entered (debt above the
 * overdraft limit, after not being: more debt, or a limit lowered below it) and exited (back at
 * or below it: a repayment, or a limit raised). A rollover carries the debt on unchanged, so it
 * reports none.
 */
export function debtEvents(t: LedgerTransition): BudgetEvent[] {
  const { after, tenant, at, recordId } = t;
  const before = t.before ?? usageBaseline(t);
  const events: BudgetEvent[] = [];
  const incurred = after.counters.debt - before.counters.debt;
  if (incurred > 0) {
    const type = 'budget.debt_incurred';
    events.push({ type, id: occurrenceId(type, recordId), tenant, at, budget: after, incurred });
  }
  if (isOverLimit(debtOf(after)) && !isOverLimit(debtOf(before))) {
    const type = 'budget.over_limit_entered';
    events.push({ type, id: occurrenceId(type, recordId), tenant, at, budget: after });
  }
  if (!isOverLimit(debtOf(after)) && isOverLimit(debtOf(before))) {
    const type = 'budget.over_limit_exited';
    events.push({ type, id: occurrenceId(type, recordId), tenant, at, budget: after });
  }
  return events;
}

/** Every event of one write to an unsharded budget's ledger item. */
export const ledgerEvents = (t: LedgerTransition): BudgetEvent[] => [
  ...usageEvents(t),
  ...debtEvents(t),
];

/**
 * A sharded budget's usage events, from its merged state read after a write to one of its
 * shards (a shard's images alone say nothing about the budget): every threshold the budget has
 * reached and its exhaustion, with crossing ids, so that repeats are recognisable. The caller
 * keeps out those it already reported.
 */
export function reachedEvents(tenant: string, at: number, budget: BudgetState): BudgetEvent[] {
  const events: BudgetEvent[] = [];
  for (const threshold of budget.thresholds ?? DEFAULT_THRESHOLDS) {
    if (!reached(budget.counters, threshold)) continue;
    const id = crossingId('budget.threshold_crossed', tenant, budget, String(threshold));
    events.push({ type: 'budget.threshold_crossed', id, tenant, at, budget, threshold });
  }
  if (budget.counters.remaining <= 0) {
    const id = crossingId('budget.exhausted', tenant, budget);
    events.push({ type: 'budget.exhausted', id, tenant, at, budget });
  }
  return events;
}

/**
 * A reservation's end: left ACTIVE for EXPIRED (its hold returned unsettled), or COMMITTED for
 * more than its estimate (`reservation.commit_overage`). Once per reservation.
 */
export function reservationEvents(
  before: Reservation | undefined,
  after: Reservation,
  at: number,
): BudgetEvent[] {
  if (before?.status !== 'ACTIVE') return [];
  const committed = after.committed?.amount;
  if (
    after.status === 'COMMITTED' &&
    committed !== undefined &&
    committed > after.reserved.amount
  ) {
    const type = 'reservation.commit_overage';
    return [
      {
        type,
        id: derivedId('evt', type, after.reservationId),
        tenant: after.tenant,
        at: after.finalizedAtMs ?? at,
        reservation: after,
        actual: committed,
      },
    ];
  }
  if (after.status !== 'EXPIRED') return [];
  const type = 'reservation.expired';
  return [
    {
      type,
      id: derivedId('evt', type, after.reservationId),
      tenant: after.tenant,
      at: after.finalizedAtMs ?? at,
      reservation: after,
    },
  ];
}

export const refusalEvent = (refusal: Refusal): BudgetEvent => ({
  type: 'reservation.denied',
  id: derivedId('evt', 'reservation.denied', refusal.refusalId),
  tenant: refusal.tenant,
  at: refusal.atMs,
  refusal,
});
