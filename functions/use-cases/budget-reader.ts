import type { Unit } from '../domain/amounts.js';
import {
  type Budget,
  type BudgetRecord,
  type BudgetRef,
  type Budgets,
  budgetAt,
  budgetsByKey,
  NO_BUDGETS,
} from '../domain/budget.js';
import type { Caller } from '../domain/caller.js';
import { isDue, rolledOver } from '../domain/period.js';
import { eventRefundable, type Refundable, reservationRefundable } from '../domain/refunds.js';
import {
  affectedScopes,
  type Place,
  type Reservation,
  settleDeadline,
} from '../domain/reservation.js';
import { hintedBudgets } from '../domain/reservation-id.js';
import { tenantOfPath } from '../domain/scopes.js';
import { getClosedPeriodBudgets, rollOverLedger } from '../store/budgets/periods.js';
import { getBudgetRecords, getBudgets } from '../store/budgets/read.js';
import type { IdempotencyScope } from '../store/entities/idempotency.js';
import { readReservation } from '../store/reservation-queries.js';
import { readSnapshot, type Snapshot, type SnapshotRequest } from '../store/snapshot.js';

// The one reader of budgets (docs/architecture.md). Budgets come from the store as stored,
// sharded ones completed, and at one instant when a refusal must be proven (`atomic`). A rolling
// budget past the end of its period (docs/decisions.md § Rolling budgets: no cron, no sweep) is
// brought into its current period here and nowhere else: written by `rollOverDue`, the repair
// step of every write, or shown as its next operation will find it by the reads that write
// nothing (`viewBudgets`). So every decision is taken on current-period budgets.

export type { Snapshot };

/**
 * Where a write's loop gets its budgets (use-cases/guarded-write.ts): `read` them, with the record
 * that would replay the operation, in one strongly consistent read (`atomic`: sharded ones at one
 * instant, a refusal's proof); `repair` what was read, rolling every due period over (true: read
 * again), so the loop decides on current-period budgets.
 */
export interface BudgetSource {
  read(atomic?: boolean): Promise<Snapshot>;
  repair(snapshot: Snapshot): Promise<boolean>;
}

/** The budgets of `request` (and its record), for a write at `now`. */
export const budgetSource = (request: SnapshotRequest, now: number): BudgetSource => ({
  read: (atomic = false) => readSnapshot({ ...request, atomic }),
  repair: ({ budgets }) => rollOverDue(budgets, now),
});

/** One strongly consistent read of budgets that are not decided on (an escrow layout). */
export const readBudgets = (request: SnapshotRequest): Promise<Snapshot> => readSnapshot(request);

/** Whether a rolling budget among those read has ended its period (`repair` would roll it). */
export const anyPeriodDue = (budgets: Budgets, now: number): boolean =>
  [...budgets.values()].some(
    (b) => b.period !== undefined && b.status !== 'CLOSED' && isDue(b.period, now),
  );

/**
 * Moves every rolling budget among those read whose period has ended into the period of `now`
 * (exactly once, whoever gets there first); true when any had ended, so the caller reads again.
 */
async function rollOverDue(budgets: Budgets, now: number): Promise<boolean> {
  let due = false;
  for (const b of budgets.values()) {
    if (!b.period || b.status === 'CLOSED' || !isDue(b.period, now)) continue;
    due = true;
    await rollOverLedger(tenantOfPath(b.ref.scope), b, rolledOver(b, now));
  }
  return due;
}

/**
 * For a commit, release or extend: one strongly consistent read of the reservation, the
 * idempotency record (unless the outcome is kept on the reservation: commit, release) and the
 * budgets its id names (domain/reservation-id.ts). Only when it is the caller's, ACTIVE and not
 * past its deadline (otherwise it is refused or expired, and needs no budgets) are they its
 * holds' budgets; when the id named others (or none), those are read then — the current ones,
 * and for a hold of a period its budget has since left, that closed period's budget.
 */
export const settlingSource = (
  caller: Caller,
  reservationId: string,
  idempotency: IdempotencyScope,
  now: number,
  /** Scopes beyond the reservation's whose budgets the write decides on (a delegation's own). */
  moreScopes?: (r: Reservation) => readonly string[],
  /** The outcome is kept on the reservation (commit, release): no idempotency record to read. */
  onReservation = false,
): SettlingSource => ({
  read: async (atomic = false) => {
    const hinted = hintedBudgets(reservationId, caller.tenant);
    const first = await readSnapshot({
      reservationId,
      idempotency,
      outcomeOnReservation: onReservation,
      budgets: hinted,
      atomic,
    });
    const r = first.reservation;
    // Refused or expired (or a replay): no budgets, not even those a hint named.
    if (first.replay || !r || r.tenant !== caller.tenant || r.status !== 'ACTIVE') {
      return { ...first, budgets: NO_BUDGETS, atomic: true };
    }
    const scopes = [...affectedScopes(r), ...(moreScopes?.(r) ?? [])];
    // Scope texts hold no comma: the lists are equal when their texts are.
    const named = hinted?.unit === r.reserved.unit && String(hinted.scopes) === String(scopes);
    const [read, parent] = await Promise.all([
      // The hint named other budgets: read its own, its holds' shards checked as the first read's.
      named ? first : getBudgets(scopes, r.reserved.unit, atomic ? 'atomic' : 'batch', r),
      r.delegation && readReservation(r.delegation.parentId),
    ]);
    const budgets =
      now >= settleDeadline(r)
        ? read.budgets
        : await withClosedPeriods(r.holds, r.reserved.unit, read.budgets);
    return { ...first, atomic: read.atomic, budgets, parent };
  },
  repair: ({ budgets }) => rollOverDue(budgets, now),
});

/** A settling read: a child reservation's parent comes with it (docs/decisions.md § Delegations). */
export interface SettlingSnapshot extends Snapshot {
  readonly parent?: Reservation | undefined;
}
export interface SettlingSource extends BudgetSource {
  read(atomic?: boolean): Promise<SettlingSnapshot>;
}

/** What a refund gives back to, as a snapshot found it (`refundingSource`). */
export const refundableOf = (s: Snapshot): Refundable | undefined =>
  s.reservation
    ? reservationRefundable(s.reservation)
    : s.event && eventRefundable(s.event, s.budgets);

/**
 * For a refund: its idempotency record with the reservation or the event refunded, in one batch;
 * then (when it is `tenant`'s, or for the operator any tenant's) the budgets of the scopes it
 * charged, a closed period's where the charge's period has ended.
 */
export const refundingSource = (
  of: { readonly reservationId: string } | { readonly eventId: string },
  idempotency: IdempotencyScope,
  tenant: string | undefined,
  now: number,
): BudgetSource => ({
  read: async (atomic = false) => {
    const first = await readSnapshot({ ...of, idempotency });
    const target = first.reservation ?? first.event;
    if (first.replay || !target || (tenant !== undefined && target.tenant !== tenant)) return first;
    const unit = first.reservation?.reserved.unit ?? first.event?.actual.unit;
    const scopes = first.reservation ? affectedScopes(first.reservation) : first.event?.scopes;
    if (!unit || !scopes) return first;
    const mode = atomic ? 'atomic' : 'batch';
    const read = await getBudgets(scopes, unit, mode, first.reservation);
    const places = refundableOf({ ...first, budgets: read.budgets })?.places ?? [];
    return {
      ...first,
      atomic: read.atomic,
      budgets: await withClosedPeriods(places, unit, read.budgets),
    };
  },
  repair: ({ budgets }) => rollOverDue(budgets, now),
});

/** The budgets, with the closed period's in place of the current one where a place settles there. */
async function withClosedPeriods(
  places: readonly Place[],
  unit: Unit,
  budgets: Budgets,
): Promise<Budgets> {
  const closed = places.flatMap(({ scope, periodStart }) => {
    const current = budgetAt(budgets, scope, unit)?.period;
    return periodStart && current?.start !== periodStart
      ? [{ scope, unit, start: periodStart }]
      : [];
  });
  if (closed.length === 0) return budgets;
  return new Map([...budgets, ...(await getClosedPeriodBudgets(closed))]);
}

/**
 * For the sweeper, which reads no budgets otherwise: the current budgets of the rolling budgets
 * these reservations hold (rolled over first when due), by budgetKey.
 */
export async function currentBudgetsOf(
  reservations: readonly Reservation[],
  now: number,
): Promise<Budgets> {
  const rolling = new Map<Unit, Set<string>>();
  for (const r of reservations) {
    for (const { scope, periodStart } of r.holds) {
      if (!periodStart) continue;
      rolling.set(r.reserved.unit, (rolling.get(r.reserved.unit) ?? new Set()).add(scope));
    }
  }
  const current = new Map<string, Budget>();
  for (const [unit, scopes] of rolling) {
    for (let attempt = 0; attempt < 3; attempt++) {
      const { budgets } = await getBudgets([...scopes], unit);
      if (attempt < 2 && (await rollOverDue(budgets, now))) continue;
      for (const [key, b] of budgets) current.set(key, b);
      break;
    }
  }
  return current;
}

/**
 * Budgets and their records for reads that write nothing (listings, lookups, balances), as of
 * `now`: a rolling budget past its period is shown as its next operation will find it. A sharded
 * budget is read at one instant, or, when its shards stay busy, shard by shard with every field
 * from those reads (store/budgets/read.ts `view`; docs/scaling.md § Reads of a sharded budget).
 */
export async function viewBudgets(
  refs: readonly BudgetRef[],
  now: number,
): Promise<BudgetRecord[]> {
  const records = await getBudgetRecords(refs, 'view');
  return records.map((r) => ({ ...r, budget: rolledOver(r.budget, now) }));
}

/** As `viewBudgets`, by budgetKey. */
export const viewBudgetsByKey = async (refs: readonly BudgetRef[], now: number) =>
  budgetsByKey((await viewBudgets(refs, now)).map((r) => r.budget));

/** Budgets and their records as stored, for changes conditioned on what they read. */
export const readRecords = (refs: readonly BudgetRef[]): Promise<BudgetRecord[]> =>
  getBudgetRecords(refs, 'view');

/**
 * A budget as the writes left it, at one instant (its shards read by TransactGetItems): what
 * budget events report, so never rolled over (a rollover is a write of its own).
 */
export async function readAsWritten(ref: BudgetRef): Promise<BudgetRecord | undefined> {
  const [record] = await getBudgetRecords([ref], 'atomic');
  return record;
}
