import type { Unit } from './amounts.js';

/** A budget is named by its scope and unit: one ledger per (scope, unit). */
export interface BudgetRef {
  readonly scope: string;
  readonly unit: Unit;
}

/**
 * The one key of a budget, `<scope>#<unit>`: maps of budgets, the ledger index's sort key and
 * the ledger's partition key (store/keys.ts), a budget's audit resource id and its ledger id.
 * Stored in keys and records, so its form never changes. Unambiguous: a unit holds no '#'.
 */
export const budgetKey = (ref: BudgetRef): string => `${ref.scope}#${ref.unit}`;
