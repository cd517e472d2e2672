import type { Amount } from './amounts.js';
import { DomainError } from './errors.js';
import {
  chargeAll,
  emptyLedger,
  firstRefusal,
  type Ledger,
  type LedgerChange,
  type OveragePolicy,
  refusalError,
  type ScopeRefusal,
  scopeRefusal,
} from './ledger.js';
import { pinToHolds, type Reservation } from './reservation.js';

/** SPEC § commit math (docs/ledger-math.md): the changes a commit of `actual` makes, or a refusal. */
export function commitChanges(
  r: Reservation,
  actual: Amount,
  ledgers: ReadonlyMap<string, Ledger>,
): LedgerChange[] {
  const unit = r.reserved.unit;
  if (actual.unit !== unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `actual is in ${actual.unit}, the reservation in ${unit}`,
      {
        requested_unit: actual.unit,
        expected_unit: unit,
      },
    );
  }
  const scoped = r.affectedScopes.map((s) => ledgers.get(s) ?? emptyLedger(s, unit));
  const charge = chargeAll(scoped, r.reserved.amount, actual.amount, r.overagePolicy);
  if ('refusal' in charge) throw refusalError(charge.refusal);
  return pinToHolds(r, charge.changes);
}

/**
 * For an event nothing is held, so REJECT and ALLOW_IF_AVAILABLE both mean "only if remaining
 * covers it"; ALLOW_WITH_OVERDRAFT may run into debt up to the limit.
 */
export const eventPolicy = (policy: OveragePolicy): OveragePolicy =>
  policy === 'REJECT' ? 'ALLOW_IF_AVAILABLE' : policy;

/**
 * A direct debit of `actual` on every scope. A missing ledger is zero allocation
 * (BUDGET_EXCEEDED, SPEC core behaviour 6), ranked with the other refusals.
 */
export function eventChanges(
  scopes: readonly string[],
  actual: Amount,
  policy: OveragePolicy,
  ledgers: ReadonlyMap<string, Ledger>,
): { readonly changes: LedgerChange[] } | { readonly refusal: ScopeRefusal } {
  const present = scopes.flatMap((s) => ledgers.get(s) ?? []);
  const charge = chargeAll(present, 0, actual.amount, eventPolicy(policy));
  const refusal = firstRefusal([
    ...scopes
      .filter((s) => !ledgers.has(s))
      .map((s) => scopeRefusal(s, actual.unit, undefined, actual.amount)),
    // A frozen or closed budget takes no new charge (its status is the refusal).
    ...present
      .filter((l) => l.status !== undefined)
      .map((l) => scopeRefusal(l.scope, actual.unit, l, actual.amount)),
    'refusal' in charge ? charge.refusal : undefined,
  ]);
  return refusal ? { refusal } : charge;
}
