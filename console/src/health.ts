import type { Budget } from '../../client/index.js';

/**
 * How a budget is doing, as the overview and the budget cards flag it. "Near" is the 80 %
 * threshold of allocated spent + reserved, the default that budget events (issue 15) will
 * announce; a budget in its soft landing (remaining below its caps threshold) is near too.
 */
export const NEAR_SHARE = 0.8;

export type HealthState = 'over' | 'near' | 'ok';

export interface BudgetHealth {
  /** Spent + reserved over allocated; 0 for an empty allocation with nothing used. */
  readonly used: number;
  readonly state: HealthState;
  /** Why, in words: "82 % used", "in debt", "over its overdraft limit", "frozen". */
  readonly reasons: readonly string[];
}

export function budgetHealth(b: Budget): BudgetHealth {
  const allocated = b.allocated.amount;
  const usedAmount = b.spent.amount + b.reserved.amount;
  const used =
    allocated > 0 ? usedAmount / allocated : usedAmount > 0 ? Number.POSITIVE_INFINITY : 0;
  const softLanding =
    b.caps_when_remaining_below_bps !== undefined &&
    allocated > 0 &&
    b.remaining.amount * 10_000 < b.caps_when_remaining_below_bps * allocated;
  const reasons: string[] = [];
  if (Number.isFinite(used)) {
    if (used >= NEAR_SHARE) reasons.push(`${Math.floor(used * 100)} % used`);
  } else {
    reasons.push('used with no allocation');
  }
  if (b.debt.amount > 0) reasons.push('in debt');
  if (b.is_over_limit) reasons.push('over its overdraft limit');
  if (softLanding) reasons.push('caps apply (soft landing)');
  if (b.status !== 'ACTIVE') reasons.push(b.status.toLowerCase());
  const over = used >= 1 || b.debt.amount > 0 || b.is_over_limit;
  const near = used >= NEAR_SHARE || softLanding;
  return { used, state: over ? 'over' : near ? 'near' : 'ok', reasons };
}

export interface BarSegments {
  /** Shares of the bar, in percent, summing to 100 (or all 0 for an empty budget). */
  readonly spent: number;
  readonly reserved: number;
  readonly debt: number;
  readonly remaining: number;
}

/**
 * The utilization bar: spent, reserved, debt and what remains, side by side. The bar is the
 * allocation, or more when an overdraft took the budget below zero remaining.
 */
export function barSegments(b: Budget): BarSegments {
  const remaining = Math.max(0, b.remaining.amount);
  const scale = b.spent.amount + b.reserved.amount + b.debt.amount + remaining;
  if (scale <= 0) return { spent: 0, reserved: 0, debt: 0, remaining: 0 };
  const pct = (n: number) => (100 * n) / scale;
  return {
    spent: pct(b.spent.amount),
    reserved: pct(b.reserved.amount),
    debt: pct(b.debt.amount),
    remaining: pct(remaining),
  };
}
