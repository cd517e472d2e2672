import {
  type Budget,
  type Budgets,
  budgetsByKey,
  countersOf,
  type Ledger,
  SINGLE,
} from '../../functions/domain/budget.js';

/** A budget with this balance: unsharded and ACTIVE unless `extra` says otherwise. */
export const budgetOf = (l: Ledger, extra: Partial<Budget> = {}): Budget => ({
  ref: { scope: l.scope, unit: l.unit },
  counters: countersOf(l),
  status: 'ACTIVE',
  overdraftLimit: l.overdraftLimit,
  layout: SINGLE,
  ...extra,
});

/** Budgets of these balances (or budgets), by budgetKey, as a read hands them over. */
export const budgetsOf = (...list: readonly (Ledger | Budget)[]): Budgets =>
  budgetsByKey(list.map((b) => ('ref' in b ? b : budgetOf(b))));
