import { MAX_AMOUNT, type Unit } from './amounts.js';
import { type Budgets, balanceOf, budgetAt, type Ledger } from './budget.js';
import { DomainError, invalidRequest } from './errors.js';
import type { LedgerChange } from './ledger.js';
import { periodAt } from './period.js';
import { chargedSoFar, onHolds, type Place, type Reservation } from './reservation.js';
import type { UsageEvent } from './settlement.js';

/**
 * Refunds (docs/decisions.md § Refunds, docs/ledger-math.md): a provider refunded a call, or an
 * operator reverses a charge. A refund gives back at most what was charged and not yet refunded,
 * on every scope that was charged, where the charge landed (its shard, the period it was taken
 * in). It raises remaining by exactly the amount on each scope, as if that part had never been
 * charged: first the debt the charges ran up there (while still owed), then spent; what neither
 * can take back (debt the operator has repaid since, spent reset since) returns to the allocation.
 */

/** What a refund gives back to: the charges of a reservation, or an event's. */
export interface Refundable {
  readonly kind: 'reservation' | 'event';
  readonly id: string;
  readonly tenant: string;
  readonly unit: Unit;
  /** Charged so far: a reservation's charges (its whole actual once committed), an event's actual. */
  readonly charged: number;
  readonly refunded: number;
  /** Where the charges landed, one per scope, with the debt they ran up there. */
  readonly places: readonly (Place & { readonly debtIncurred?: number | undefined })[];
}

/** A reservation's charges: those made while it was ACTIVE, or once committed its whole actual. */
export const reservationRefundable = (r: Reservation): Refundable => ({
  kind: 'reservation',
  id: r.reservationId,
  tenant: r.tenant,
  unit: r.reserved.unit,
  charged: r.status === 'COMMITTED' ? (r.committed?.amount ?? 0) : chargedSoFar(r),
  refunded: r.refunded?.amount ?? 0,
  places: r.holds,
});

/**
 * An event's charge: on its scopes, in the period of its creation for a rolling budget (the
 * charge was conditioned on the budget being in that period), on whichever shard has the spent.
 */
export const eventRefundable = (e: UsageEvent, budgets: Budgets): Refundable => ({
  kind: 'event',
  id: e.eventId,
  tenant: e.tenant,
  unit: e.actual.unit,
  charged: e.actual.amount,
  refunded: e.refunded?.amount ?? 0,
  places: e.scopes.map((scope) => {
    const period = budgetAt(budgets, scope, e.actual.unit)?.period;
    return {
      scope,
      ...(period && { periodStart: periodAt(period.spec, e.createdAtMs).start }),
      debtIncurred: e.debtIncurred?.[scope],
    };
  }),
});

/** What can still be refunded. */
export const refundableLeft = (c: Refundable): number => Math.max(0, c.charged - c.refunded);

/**
 * The changes a refund of `amount` makes, one per place, each where its charge landed
 * (`onHolds`), or 400 when it is more than is left to refund. `budgets`: the budgets the places
 * are on as read (a closed period's where a place's period has ended).
 *
 * Per scope, with D the debt the charges ran up there and R the refunds before this one, the
 * refund's debt share is min(R + amount, D) − min(R, D) (debt is refunded first, across refunds);
 * of it, what the ledger still owes comes off debt and the rest (repaid by the operator since) is
 * credited to the allocation; the remainder comes off spent, and what spent no longer holds (reset
 * since) is credited too. remaining rises by `amount` on every scope.
 */
export function refundChanges(c: Refundable, amount: number, budgets: Budgets): LedgerChange[] {
  const left = refundableLeft(c);
  if (amount > left) {
    throw invalidRequest(
      `amount is more than is left to refund: ${left} of the ${c.charged} charged`,
      {
        field: 'amount',
        refundable: { unit: c.unit, amount: left },
      },
    );
  }
  const changes = c.places.map((place): LedgerChange => {
    const budget = budgetAt(budgets, place.scope, c.unit);
    if (!budget) {
      throw new DomainError('NOT_FOUND', `no budget for ${place.scope} in ${c.unit} to refund to`);
    }
    return refundChange(balanceOf(budget), place.debtIncurred ?? 0, c.refunded, amount);
  });
  return onHolds({ holds: c.places }, changes, budgets);
}

/** One scope's part of a refund (see `refundChanges`). */
export function refundChange(
  l: Ledger,
  debtIncurred: number,
  refundedBefore: number,
  amount: number,
): LedgerChange {
  const debtShare =
    Math.min(refundedBefore + amount, debtIncurred) - Math.min(refundedBefore, debtIncurred);
  const debt = Math.min(debtShare, l.debt);
  const spent = Math.min(amount - debtShare, l.spent);
  const credit = amount - debt - spent;
  const at = { scope: l.scope, unit: l.unit };
  if (credit === 0) {
    return {
      ...at,
      delta: { spent: -spent, debt: -debt, remaining: amount },
      guard: { kind: 'returns', spent, debt },
    };
  }
  if (l.allocated + credit > MAX_AMOUNT) {
    throw invalidRequest(`the allocation of ${l.scope} would exceed the largest amount`, {
      field: 'amount',
    });
  }
  // Rare (debt repaid or spent reset since the charge): decided on the exact values read.
  return {
    ...at,
    delta: { spent: -spent, debt: -debt, allocated: credit, remaining: amount },
    guard: {
      kind: 'snapshot',
      values: { spent: l.spent, debt: l.debt, allocated: l.allocated },
    },
  };
}
