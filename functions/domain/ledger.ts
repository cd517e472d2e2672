import type { Unit } from './amounts.js';
import {
  type Budgets,
  balanceOf,
  budgetAt,
  budgetKey,
  emptyLedger,
  type Ledger,
} from './budget.js';
import { DomainError } from './errors.js';
import type { ChangePeriod } from './period.js';
import { firstRefusal, type RefusalCode, type ScopeRefusal } from './refusals.js';

/** Kept here too: older imports name the statuses from the ledger (the console's tests). */
export { BUDGET_STATUSES, type BudgetStatus } from './budget.js';

export type OveragePolicy = 'REJECT' | 'ALLOW_IF_AVAILABLE' | 'ALLOW_WITH_OVERDRAFT';

/** Signed changes to a ledger's counters; applied atomically by the store. */
export interface LedgerDelta {
  readonly allocated?: number;
  readonly spent?: number;
  readonly reserved?: number;
  readonly debt?: number;
  readonly remaining?: number;
}

/**
 * What must still hold when the store applies a delta, so that a decision taken on a read is
 * re-checked atomically: `admit` (SPEC core behaviour 2 + blocking rules), `covers` (the
 * remaining pays for an overage), `snapshot` (the exact values the math used), or `returns`
 * (a refund: what it takes off spent and debt is still there).
 */
export type LedgerGuard =
  | { readonly kind: 'exists' }
  | { readonly kind: 'admit'; readonly amount: number }
  | { readonly kind: 'covers'; readonly amount: number }
  | { readonly kind: 'snapshot'; readonly values: Partial<Record<LedgerField, number>> }
  | { readonly kind: 'maxAllocated'; readonly atMost: number }
  /** A refund takes back what charges put there: the ledger still has at least this spent and debt. */
  | { readonly kind: 'returns'; readonly spent: number; readonly debt: number };

export type LedgerField =
  | 'allocated'
  | 'spent'
  | 'reserved'
  | 'debt'
  | 'overdraftLimit'
  | 'remaining';

export interface LedgerChange {
  readonly scope: string;
  readonly unit: Unit;
  readonly delta: LedgerDelta;
  readonly guard: LedgerGuard;
  /**
   * For a budget split into escrow shards (domain/escrow.ts): the shard a reservation holds
   * on, where its settlement must land. Absent: any shard that covers the change.
   */
  readonly shard?: number | undefined;
  /**
   * For a rolling budget (domain/period.ts): the period the change was decided in. A current
   * period's change is conditioned on the ledger still being in it; a closed period's lands on
   * that period's own ledger.
   */
  readonly period?: ChangePeriod | undefined;
}

/**
 * The changes, each stamped with the period of the budget it lands on as read (rolling budgets
 * only): a change to a current period is conditioned on the budget still being in it.
 */
export const inPeriodsOf = (changes: readonly LedgerChange[], budgets: Budgets): LedgerChange[] =>
  changes.map((c) => {
    const p = budgetAt(budgets, c.scope, c.unit)?.period;
    return p ? { ...c, period: { start: p.start, closed: p.closed === true } } : c;
  });

export function applyDelta(l: Ledger, d: LedgerDelta): Ledger {
  return {
    ...l,
    allocated: l.allocated + (d.allocated ?? 0),
    spent: l.spent + (d.spent ?? 0),
    reserved: l.reserved + (d.reserved ?? 0),
    debt: l.debt + (d.debt ?? 0),
    remaining: l.remaining + (d.remaining ?? 0),
  };
}

export const holdsInvariant = (l: Ledger): boolean =>
  l.remaining === l.allocated - l.spent - l.reserved - l.debt;

/** The balances of those scopes that have a budget, in scope order (what `balances` lists). */
export const presentLedgers = (scopes: readonly string[], unit: Unit, budgets: Budgets): Ledger[] =>
  scopes.flatMap((s) => {
    const b = budgetAt(budgets, s, unit);
    return b ? [balanceOf(b)] : [];
  });

/** The balances as the changes leave them, from the budgets read just before. */
export const ledgersAfter = (budgets: Budgets, changes: readonly LedgerChange[]): Ledger[] =>
  changes.map((c) => {
    const b = budgetAt(budgets, c.scope, c.unit);
    return applyDelta(b ? balanceOf(b) : emptyLedger(c.scope, c.unit), c.delta);
  });

export const holdChange = (scope: string, unit: Unit, amount: number): LedgerChange => ({
  scope,
  unit,
  delta: { reserved: amount, remaining: -amount },
  guard: { kind: 'admit', amount },
});

export const releaseChange = (scope: string, unit: Unit, amount: number): LedgerChange => ({
  scope,
  unit,
  delta: { reserved: -amount, remaining: amount },
  guard: { kind: 'exists' },
});

/**
 * Several unguarded changes as one per ledger, deltas summed: a batch of expiries updates each
 * ledger once (a transaction may not touch one item twice).
 */
export function mergeChanges(changes: readonly LedgerChange[]): LedgerChange[] {
  const byLedger = new Map<string, LedgerChange>();
  for (const c of changes) {
    const key = `${budgetKey(c)}\u0000${c.shard ?? 0}\u0000${c.period?.start ?? ''}\u0000${c.period?.closed ?? ''}`;
    const seen = byLedger.get(key);
    if (!seen) {
      byLedger.set(key, { ...c, delta: { ...c.delta } });
      continue;
    }
    const sum = (field: keyof LedgerDelta) => (seen.delta[field] ?? 0) + (c.delta[field] ?? 0);
    byLedger.set(key, {
      ...seen,
      delta: {
        allocated: sum('allocated'),
        spent: sum('spent'),
        reserved: sum('reserved'),
        debt: sum('debt'),
        remaining: sum('remaining'),
      },
    });
  }
  return [...byLedger.values()];
}

// ---- Charges (commit, event) ----------------------------------------------------------------

export type ChargeOutcome =
  | { readonly kind: 'ok'; readonly change: LedgerChange }
  | { readonly kind: 'refused'; readonly refusal: ScopeRefusal };

/**
 * Charges `actual` against a ledger that holds `held` for it (0 for an event). The overage
 * (actual − held) follows the policy: REJECT refuses it; ALLOW_IF_AVAILABLE takes it from
 * remaining or refuses; ALLOW_WITH_OVERDRAFT takes what remaining covers as spent and the rest
 * as debt, refused when debt would pass overdraft_limit (docs/ledger-math.md).
 */
export function chargeLedger(
  l: Ledger,
  held: number,
  actual: number,
  policy: OveragePolicy,
): ChargeOutcome {
  const overage = actual - held;
  const release = { reserved: -held };
  if (overage <= 0) {
    return {
      kind: 'ok',
      change: {
        scope: l.scope,
        unit: l.unit,
        delta: { ...release, spent: actual, remaining: held - actual },
        guard: { kind: 'exists' },
      },
    };
  }
  const refuse = (code: RefusalCode): ChargeOutcome => ({
    kind: 'refused',
    refusal: {
      code,
      scope: l.scope,
      unit: l.unit,
      remaining: l.remaining,
      requested: overage,
      debt: l.debt,
      overdraftLimit: l.overdraftLimit,
    },
  });
  if (l.remaining >= overage && policy !== 'REJECT') {
    return {
      kind: 'ok',
      change: {
        scope: l.scope,
        unit: l.unit,
        delta: { ...release, spent: actual, remaining: -overage },
        guard: { kind: 'covers', amount: overage },
      },
    };
  }
  if (policy !== 'ALLOW_WITH_OVERDRAFT') return refuse('BUDGET_EXCEEDED');
  const funded = Math.max(0, l.remaining);
  const deficit = overage - funded;
  if (l.debt + deficit > l.overdraftLimit) return refuse('OVERDRAFT_LIMIT_EXCEEDED');
  return {
    kind: 'ok',
    change: {
      scope: l.scope,
      unit: l.unit,
      delta: { ...release, spent: held + funded, debt: deficit, remaining: -overage },
      // The split depends on the exact remaining and debt: re-check them, not just a bound.
      guard: {
        kind: 'snapshot',
        values: { remaining: l.remaining, debt: l.debt, overdraftLimit: l.overdraftLimit },
      },
    },
  };
}

/** Charges every scope or none; when several refuse, over-limit wins over budget. */
export function chargeAll(
  ledgers: readonly Ledger[],
  held: number,
  actual: number,
  policy: OveragePolicy,
): { readonly changes: LedgerChange[] } | { readonly refusal: ScopeRefusal } {
  const outcomes = ledgers.map((l) => chargeLedger(l, held, actual, policy));
  const refusal = firstRefusal(outcomes.map((o) => (o.kind === 'refused' ? o.refusal : undefined)));
  if (refusal) return { refusal };
  return { changes: outcomes.flatMap((o) => (o.kind === 'ok' ? [o.change] : [])) };
}

// ---- Funding (admin) ------------------------------------------------------------------------

export const FUND_OPERATIONS = ['CREDIT', 'DEBIT', 'RESET', 'RESET_SPENT', 'REPAY_DEBT'] as const;
export type FundOperation = (typeof FUND_OPERATIONS)[number];

/**
 * SPEC § Fund operations. Each is expressed as an additive delta guarded by the one value it
 * was computed from, so concurrent reservations never conflict with funding:
 * RESET adds (amount − allocated) to allocated and remaining, which is exactly
 * remaining = amount − reserved − spent − debt. REPAY_DEBT repays min(debt, amount); the excess
 * is credited to the allocation (as the reference server does). DEBIT takes `amount` off the
 * allocation, never below what is spent, held and owed (remaining stays ≥ 0). RESET_SPENT sets
 * spent to `amount` (0 for a new period by hand), never above what it is; allocation kept.
 */
export function fundChange(
  l: Ledger,
  operation: FundOperation,
  amount: number,
  maxAmount: number,
): LedgerChange {
  const at = { scope: l.scope, unit: l.unit };
  let change: LedgerChange;
  switch (operation) {
    case 'CREDIT':
      change = {
        ...at,
        delta: { allocated: amount, remaining: amount },
        guard: { kind: 'maxAllocated', atMost: maxAmount - amount },
      };
      break;
    case 'RESET': {
      const diff = amount - l.allocated;
      change = {
        ...at,
        delta: { allocated: diff, remaining: diff },
        guard: { kind: 'snapshot', values: { allocated: l.allocated } },
      };
      break;
    }
    case 'DEBIT':
      if (l.remaining < amount) {
        throw new DomainError(
          'BUDGET_EXCEEDED',
          `scope ${l.scope} has ${l.remaining} ${l.unit} remaining: a DEBIT of ${amount} would take the allocation below what is spent, held and owed`,
          { scope: l.scope, unit: l.unit, remaining: l.remaining, requested: amount },
        );
      }
      change = {
        ...at,
        delta: { allocated: -amount, remaining: -amount },
        guard: { kind: 'covers', amount },
      };
      break;
    case 'RESET_SPENT':
      if (amount > l.spent) {
        throw new DomainError(
          'INVALID_REQUEST',
          `RESET_SPENT sets spent to amount, at most the ${l.spent} spent`,
          { field: 'amount' },
        );
      }
      change = {
        ...at,
        delta: { spent: amount - l.spent, remaining: l.spent - amount },
        guard: { kind: 'snapshot', values: { spent: l.spent } },
      };
      break;
    case 'REPAY_DEBT': {
      const repaid = Math.min(l.debt, amount);
      const excess = amount - repaid;
      change = {
        ...at,
        delta: { debt: -repaid, allocated: excess, remaining: amount },
        guard: { kind: 'snapshot', values: { debt: l.debt, allocated: l.allocated } },
      };
      break;
    }
  }
  if (l.allocated + (change.delta.allocated ?? 0) > maxAmount) {
    throw new DomainError(
      'INVALID_REQUEST',
      `allocated would exceed the largest amount ${maxAmount}`,
      { field: 'amount' },
    );
  }
  return change;
}
