import type { Amount } from './amounts.js';
import { type Budgets, balanceOf, budgetAt, emptyLedger } from './budget.js';
import { DomainError } from './errors.js';
import { chargeAll, type LedgerChange, type OveragePolicy } from './ledger.js';
import { budgetRefusal, firstRefusal, refusalError, type ScopeRefusal } from './refusals.js';
import {
  type Action,
  affectedScopes,
  heldAmount,
  onHolds,
  type Reservation,
} from './reservation.js';
import type { Subject } from './scopes.js';

/**
 * SPEC § commit math (docs/ledger-math.md): the changes a commit of `actual` makes, each on its
 * hold (`onHolds`), or a refusal. `budgets`: those the holds settle on, as read.
 */
export function commitChanges(r: Reservation, actual: Amount, budgets: Budgets): LedgerChange[] {
  const held = heldAmount(r);
  if (actual.unit !== held.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `actual is in ${actual.unit}, the reservation in ${held.unit}`,
      {
        requested_unit: actual.unit,
        expected_unit: held.unit,
      },
    );
  }
  const scoped = affectedScopes(r).map((s) => {
    const b = budgetAt(budgets, s, held.unit);
    return b ? balanceOf(b) : emptyLedger(s, held.unit);
  });
  const charge = chargeAll(scoped, held.amount, actual.amount, r.overagePolicy);
  if ('refusal' in charge) throw refusalError(charge.refusal);
  return onHolds(r, charge.changes, budgets);
}

/** A usage event (POST /v1/events): spend that needed no reservation, charged to every scope. */
export interface UsageEvent {
  readonly eventId: string;
  readonly tenant: string;
  readonly createdAtMs: number;
  readonly subject: Subject;
  readonly action: Action;
  readonly actual: Amount;
  readonly scopes: readonly string[];
  readonly overagePolicy: OveragePolicy;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly clientTimeMs?: number | undefined;
}

/**
 * For an event nothing is held, so REJECT and ALLOW_IF_AVAILABLE both mean "only if remaining
 * covers it"; ALLOW_WITH_OVERDRAFT may run into debt up to the limit.
 */
export const eventPolicy = (policy: OveragePolicy): OveragePolicy =>
  policy === 'REJECT' ? 'ALLOW_IF_AVAILABLE' : policy;

/**
 * A direct debit of `actual` on every scope. A missing budget is zero allocation
 * (BUDGET_EXCEEDED, SPEC core behaviour 6), ranked with the other refusals.
 */
export function eventChanges(
  scopes: readonly string[],
  actual: Amount,
  policy: OveragePolicy,
  budgets: Budgets,
): { readonly changes: LedgerChange[] } | { readonly refusal: ScopeRefusal } {
  const present = scopes.flatMap((s) => budgetAt(budgets, s, actual.unit) ?? []);
  const charge = chargeAll(present.map(balanceOf), 0, actual.amount, eventPolicy(policy));
  const refusal = firstRefusal([
    ...scopes
      .filter((s) => !budgetAt(budgets, s, actual.unit))
      .map((scope) => budgetRefusal({ scope, unit: actual.unit }, undefined, actual.amount)),
    // A frozen or closed budget takes no new charge (its status is the refusal).
    ...present
      .filter((b) => b.status !== 'ACTIVE')
      .map((b) => budgetRefusal(b.ref, b, actual.amount)),
    'refusal' in charge ? charge.refusal : undefined,
  ]);
  return refusal ? { refusal } : charge;
}
