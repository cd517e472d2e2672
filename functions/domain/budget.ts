import type { Unit } from './amounts.js';
import type { BudgetCaps } from './caps.js';
import type { Shard } from './escrow.js';
import type { LedgerPeriod } from './period.js';

/** A budget is named by its scope and unit: one budget per (scope, unit). */
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

/** The reference's sort keys of the budget listing. */
export const BUDGET_SORT_KEYS = [
  'tenant_id',
  'scope',
  'unit',
  'status',
  'commit_overage_policy',
  'utilization',
  'debt',
] as const;
export type BudgetSortKey = (typeof BUDGET_SORT_KEYS)[number];

/** What the keys of a scope's budgets (in every unit) start with. */
export const budgetKeyPrefix = (scope: string): string => `${scope}#`;

/**
 * ACTIVE, FROZEN (the operator's pause: no new holds or events, open reservations still settle;
 * reversible) or CLOSED (the tenant closed: permanent).
 */
export const BUDGET_STATUSES = ['ACTIVE', 'FROZEN', 'CLOSED'] as const;
export type BudgetStatus = (typeof BUDGET_STATUSES)[number];

/** Invariant: remaining = allocated − spent − reserved − debt. */
export interface Counters {
  readonly allocated: number;
  readonly spent: number;
  readonly reserved: number;
  readonly debt: number;
  readonly remaining: number;
}

/**
 * A budget's balance: its counters and overdraft limit, named by scope and unit. What SPEC's
 * `balances` list, and what the ledger math works on (domain/ledger.ts).
 */
export interface Ledger extends BudgetRef, Counters {
  readonly overdraftLimit: number;
}

export const emptyLedger = (scope: string, unit: Unit): Ledger => ({
  scope,
  unit,
  allocated: 0,
  spent: 0,
  reserved: 0,
  debt: 0,
  overdraftLimit: 0,
  remaining: 0,
});

/** SPEC's is_over_limit: debt above the overdraft limit (no new work until it is repaid). */
export const isOverLimit = (l: Pick<Ledger, 'debt' | 'overdraftLimit'>): boolean =>
  l.debt > l.overdraftLimit;

/**
 * How a budget lies in the table: one item, or escrow shards (domain/escrow.ts) whose counters
 * sum to the budget's, with shard 0's gate.
 */
export type BudgetLayout =
  | { readonly kind: 'single' }
  | { readonly kind: 'sharded'; readonly shards: readonly Shard[]; readonly gated: boolean };

export const SINGLE: BudgetLayout = { kind: 'single' };

/**
 * A budget as one read shows it, whatever its layout: the counters of the whole (a sharded
 * budget's shards summed), its status and settings. What the reader hands the use cases
 * (use-cases/budget-reader.ts) is always in its current period; a closed period's budget (where
 * late settlements land) has `period.closed`.
 */
export interface Budget {
  readonly ref: BudgetRef;
  readonly counters: Counters;
  readonly status: BudgetStatus;
  readonly overdraftLimit: number;
  /** Soft constraints answered with ALLOW_WITH_CAPS (domain/caps.ts). */
  readonly caps?: BudgetCaps | undefined;
  /** A rolling budget's period (domain/period.ts). */
  readonly period?: LedgerPeriod | undefined;
  /** Budget event thresholds in percent (domain/budget-events.ts); absent: the default. */
  readonly thresholds?: readonly number[] | undefined;
  /**
   * The most one reservation may hold on it (domain/refusals.ts): a larger estimate is refused
   * whatever the remaining. Absent: no cap. Charges and commits are not capped (their overage
   * policy governs them).
   */
  readonly maxReservationAmount?: number | undefined;
  readonly layout: BudgetLayout;
}

/** Budgets by `budgetKey`. */
export type Budgets = ReadonlyMap<string, Budget>;

export const NO_BUDGETS: Budgets = new Map();

export const budgetAt = (budgets: Budgets, scope: string, unit: Unit): Budget | undefined =>
  budgets.get(budgetKey({ scope, unit }));

export const budgetsByKey = (list: Iterable<Budget>): Map<string, Budget> =>
  new Map([...list].map((b) => [budgetKey(b.ref), b]));

/** The budget's balance as SPEC lists it: scope, unit, counters and overdraft limit. */
export const balanceOf = (b: Pick<Budget, 'ref' | 'counters' | 'overdraftLimit'>): Ledger => ({
  scope: b.ref.scope,
  unit: b.ref.unit,
  allocated: b.counters.allocated,
  spent: b.counters.spent,
  reserved: b.counters.reserved,
  debt: b.counters.debt,
  overdraftLimit: b.overdraftLimit,
  remaining: b.counters.remaining,
});

/** The budget with the counters and overdraft limit of `balance` (its math done on a Ledger). */
export const withBalance = (b: Budget, balance: Ledger): Budget => ({
  ...b,
  counters: countersOf(balance),
  overdraftLimit: balance.overdraftLimit,
});

export const countersOf = (c: Counters): Counters => ({
  allocated: c.allocated,
  spent: c.spent,
  reserved: c.reserved,
  debt: c.debt,
  remaining: c.remaining,
});

export const shardCount = (b: Budget): number =>
  b.layout.kind === 'sharded' ? b.layout.shards.length : 1;

/** A budget's record as the operator sees it: the budget, its tenant and its dates. */
export interface BudgetRecord {
  readonly tenant: string;
  readonly budget: Budget;
  readonly createdAt: string;
  readonly updatedAt?: string | undefined;
}
