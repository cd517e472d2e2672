import type { Amount } from './amounts.js';
import { type Budgets, balanceOf, budgetAt, emptyLedger } from './budget.js';
import { DomainError } from './errors.js';
import { chargeAll, type LedgerChange, type OveragePolicy } from './ledger.js';
import { budgetRefusal, firstRefusal, refusalError, type ScopeRefusal } from './refusals.js';
import {
  type Action,
  affectedScopes,
  chargedSoFar,
  type Hold,
  heldAmount,
  onHolds,
  type Reservation,
} from './reservation.js';
import type { Subject } from './scopes.js';

/**
 * SPEC § commit math (docs/ledger-math.md): the changes a commit of `actual` makes, each on its
 * hold (`onHolds`), or a refusal. `actual` is the whole actual, its earlier charges included:
 * the commit charges what they did not (actual − charged) against what is left of the hold and
 * releases the rest, so charges and commit together move every ledger exactly as one commit of
 * `actual` would. An actual below what was already charged is refused (400): a charge is never
 * undone by a commit, only by a refund. `budgets`: those the holds settle on, as read.
 */
export function commitChanges(r: Reservation, actual: Amount, budgets: Budgets): LedgerChange[] {
  return chargeHolds(r, heldAmount(r).amount, uncharged(r, actual), budgets);
}

/** What a commit of `actual` (the whole actual) has left to charge: actual − charged so far. */
export function uncharged(r: Reservation, actual: Amount): number {
  const held = heldAmount(r);
  requireUnit(actual, held.unit, 'actual');
  const charged = chargedSoFar(r);
  if (actual.amount < charged) {
    throw new DomainError(
      'INVALID_REQUEST',
      `actual is the whole actual, charges included: at least the ${charged} already charged`,
      { field: 'actual.amount', charged: { unit: held.unit, amount: charged } },
    );
  }
  return actual.amount - charged;
}

/**
 * A charge of part of the actual while the reservation stays ACTIVE (POST …/charges): what is
 * left of the hold pays for it first; beyond the hold the reservation's overage policy applies
 * exactly as at commit. The changes, and the hold that is left.
 */
export function chargeChanges(
  r: Reservation,
  amount: Amount,
  budgets: Budgets,
): { readonly changes: LedgerChange[]; readonly held: Amount } {
  const held = heldAmount(r);
  requireUnit(amount, held.unit, 'amount');
  const fromHold = Math.min(held.amount, amount.amount);
  return {
    changes: chargeHolds(r, fromHold, amount.amount, budgets),
    held: { unit: held.unit, amount: held.amount - fromHold },
  };
}

/** `actual` charged on every scope against `fromHold` of the hold (chargeAll), on the holds. */
function chargeHolds(r: Reservation, fromHold: number, actual: number, budgets: Budgets) {
  const { unit } = heldAmount(r);
  const scoped = affectedScopes(r).map((s) => {
    const b = budgetAt(budgets, s, unit);
    return b ? balanceOf(b) : emptyLedger(s, unit);
  });
  const charge = chargeAll(scoped, fromHold, actual, r.overagePolicy);
  if ('refusal' in charge) throw refusalError(charge.refusal);
  return onHolds(r, charge.changes, budgets);
}

export function requireUnit(amount: Amount, unit: Amount['unit'], field: string): void {
  if (amount.unit === unit) return;
  throw new DomainError(
    'UNIT_MISMATCH',
    `${field} is in ${amount.unit}, the reservation in ${unit}`,
    {
      requested_unit: amount.unit,
      expected_unit: unit,
    },
  );
}

/** The debt `changes` run up, by scope: only scopes where they ran any up; undefined if none. */
export function debtIncurredBy(
  changes: readonly LedgerChange[],
): Record<string, number> | undefined {
  const debts = changes.flatMap((c) => ((c.delta.debt ?? 0) > 0 ? [[c.scope, c.delta.debt]] : []));
  return debts.length > 0 ? Object.fromEntries(debts) : undefined;
}

/** The holds with the debt `changes` run up on each added to what it ran up before. */
export const withDebtOf = (holds: readonly Hold[], changes: readonly LedgerChange[]): Hold[] =>
  holds.map((h) => {
    const debt = changes.find((c) => c.scope === h.scope)?.delta.debt ?? 0;
    return debt > 0 ? { ...h, debtIncurred: (h.debtIncurred ?? 0) + debt } : h;
  });

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
  /** The debt its charge ran up, by scope (only scopes where it ran any up). */
  readonly debtIncurred?: Readonly<Record<string, number>> | undefined;
  /** What refunds gave back so far (docs/decisions.md § Refunds). */
  readonly refunded?: Amount | undefined;
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
