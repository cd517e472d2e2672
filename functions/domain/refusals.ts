import type { Amount, Unit } from './amounts.js';
import {
  type Budget,
  type BudgetRef,
  type BudgetStatus,
  type Budgets,
  balanceOf,
  budgetAt,
  emptyLedger,
  isOverLimit,
  type Ledger,
} from './budget.js';
import { DomainError } from './errors.js';

// Admission of new work (reserve, dry run, decide, event): why a budget refuses it.

export const REFUSAL_CODES = [
  'BUDGET_CLOSED',
  'BUDGET_FROZEN',
  'OVERDRAFT_LIMIT_EXCEEDED',
  'DEBT_OUTSTANDING',
  'BUDGET_EXCEEDED',
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** A refusal of budget (not of the request): a reservation's DENY, a reservation.denied event. */
export const isRefusal = (e: unknown): e is DomainError =>
  e instanceof DomainError && (REFUSAL_CODES as readonly string[]).includes(e.code);

export interface ScopeRefusal {
  readonly code: RefusalCode;
  readonly scope: string;
  readonly unit: Unit;
  readonly remaining: number;
  readonly requested: number;
  readonly debt: number;
  readonly overdraftLimit: number;
  /**
   * BUDGET_EXCEEDED because the estimate is above the budget's max_reservation_amount (this
   * cap), whatever its remaining: no retry with the same estimate will pass.
   */
  readonly maxReservationAmount?: number | undefined;
}

export const MAX_RESERVATION_AMOUNT_EXCEEDED = 'MAX_RESERVATION_AMOUNT_EXCEEDED';

/**
 * A DENY that no budget's state explains: the tenant's close (the reference's closed-tenant
 * rule), or no budget at any derived scope (the tenant's SKIP option for unbudgeted scopes; a
 * live reserve or event answers 404 NOT_FOUND instead).
 */
export type TenantDenyReason = 'TENANT_CLOSED' | 'BUDGET_NOT_FOUND';

/**
 * Why a decide or a dry run answers DENY (the reference's open DecisionReasonCode): the code a
 * live reservation's 409 carries, ours for the cap of one reservation, or the tenant's.
 */
export type ReasonCode = RefusalCode | typeof MAX_RESERVATION_AMOUNT_EXCEEDED | TenantDenyReason;

export const reasonCodeOf = (r: ScopeRefusal): ReasonCode =>
  r.maxReservationAmount === undefined ? r.code : MAX_RESERVATION_AMOUNT_EXCEEDED;

const PRECEDENCE: readonly RefusalCode[] = [
  'BUDGET_CLOSED',
  'BUDGET_FROZEN',
  'OVERDRAFT_LIMIT_EXCEEDED',
  'DEBT_OUTSTANDING',
  'BUDGET_EXCEEDED',
];

/** Why one scope cannot hold `amount`; a missing ledger is zero allocation (core behaviour 6). */
export function scopeRefusal(
  scope: string,
  unit: Unit,
  ledger: Ledger | undefined,
  amount: number,
  status: BudgetStatus = 'ACTIVE',
): ScopeRefusal | undefined {
  const l = ledger ?? emptyLedger(scope, unit);
  const base = {
    scope,
    unit,
    remaining: l.remaining,
    requested: amount,
    debt: l.debt,
    overdraftLimit: l.overdraftLimit,
  };
  if (ledger && status === 'CLOSED') return { code: 'BUDGET_CLOSED', ...base };
  if (ledger && status === 'FROZEN') return { code: 'BUDGET_FROZEN', ...base };
  if (ledger && isOverLimit(l)) return { code: 'OVERDRAFT_LIMIT_EXCEEDED', ...base };
  if (l.debt > 0) return { code: 'DEBT_OUTSTANDING', ...base };
  if (!ledger || l.remaining < amount) return { code: 'BUDGET_EXCEEDED', ...base };
  return undefined;
}

/** `scopeRefusal` of a budget as read (undefined: the scope has none in that unit). */
export const budgetRefusal = (
  ref: BudgetRef,
  budget: Pick<Budget, 'ref' | 'counters' | 'overdraftLimit' | 'status'> | undefined,
  amount: number,
): ScopeRefusal | undefined =>
  scopeRefusal(ref.scope, ref.unit, budget && balanceOf(budget), amount, budget?.status);

/**
 * The refusal to report when several scopes fail: over limit, then debt, then budget (a cap of
 * one reservation before a short remaining: it is the one a retry cannot get past).
 */
export function firstRefusal(
  refusals: readonly (ScopeRefusal | undefined)[],
): ScopeRefusal | undefined {
  const present = refusals.filter((r): r is ScopeRefusal => r !== undefined);
  const rank = (r: ScopeRefusal) =>
    2 * PRECEDENCE.indexOf(r.code) + (r.maxReservationAmount === undefined ? 1 : 0);
  return present.sort((a, b) => rank(a) - rank(b))[0];
}

export function refusalError(r: ScopeRefusal): DomainError {
  if (r.maxReservationAmount !== undefined) {
    return new DomainError(
      'BUDGET_EXCEEDED',
      `an estimate of ${r.requested} ${r.unit} is more than one reservation may hold on scope ${r.scope} (max_reservation_amount ${r.maxReservationAmount})`,
      {
        reason: MAX_RESERVATION_AMOUNT_EXCEEDED,
        scope: r.scope,
        unit: r.unit,
        requested: r.requested,
        max_reservation_amount: r.maxReservationAmount,
        remaining: r.remaining,
      },
    );
  }
  const messages: Record<RefusalCode, string> = {
    BUDGET_CLOSED: `the budget of scope ${r.scope} in ${r.unit} is closed`,
    BUDGET_FROZEN: `the budget of scope ${r.scope} in ${r.unit} is frozen`,
    OVERDRAFT_LIMIT_EXCEEDED: `scope ${r.scope} is over its overdraft limit`,
    DEBT_OUTSTANDING: `scope ${r.scope} has outstanding debt of ${r.debt}`,
    BUDGET_EXCEEDED: `scope ${r.scope} has ${r.remaining} ${r.unit} remaining, ${r.requested} requested`,
  };
  return new DomainError(r.code, messages[r.code], {
    scope: r.scope,
    unit: r.unit,
    remaining: r.remaining,
    requested: r.requested,
    debt: r.debt,
    overdraft_limit: r.overdraftLimit,
  });
}

/**
 * Admission exactly as a live reservation decides it: the refusal to answer, if any. A hold
 * (never an event's charge) is also refused where its estimate is above a budget's
 * max_reservation_amount, unless that budget refuses it for a stronger reason.
 */
export function admissionRefusal(
  scopes: readonly string[],
  estimate: Amount,
  budgets: Budgets,
): ScopeRefusal | undefined {
  return firstRefusal(
    scopes.map((scope) => {
      const budget = budgetAt(budgets, scope, estimate.unit);
      const refusal = budgetRefusal({ scope, unit: estimate.unit }, budget, estimate.amount);
      const cap = budget?.maxReservationAmount;
      if (!budget || cap === undefined || estimate.amount <= cap) return refusal;
      if (refusal && refusal.code !== 'BUDGET_EXCEEDED') return refusal;
      const l = balanceOf(budget);
      return {
        code: 'BUDGET_EXCEEDED',
        scope,
        unit: estimate.unit,
        remaining: l.remaining,
        requested: estimate.amount,
        debt: l.debt,
        overdraftLimit: l.overdraftLimit,
        maxReservationAmount: cap,
      };
    }),
  );
}
