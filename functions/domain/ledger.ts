import type { Amount, Unit } from './amounts.js';
import { budgetKey } from './budget.js';
import { DomainError } from './errors.js';
import type { ChangePeriod } from './period.js';

/**
 * ACTIVE (absent on the item), FROZEN (the operator's pause: no new holds or events, open
 * reservations still settle; reversible) or CLOSED (the tenant closed: permanent).
 */
export const BUDGET_STATUSES = ['ACTIVE', 'FROZEN', 'CLOSED'] as const;
export type BudgetStatus = (typeof BUDGET_STATUSES)[number];

/** One budget ledger per (scope, unit). Invariant: remaining = allocated − spent − reserved − debt. */
export interface Ledger {
  readonly scope: string;
  readonly unit: Unit;
  readonly allocated: number;
  readonly spent: number;
  readonly reserved: number;
  readonly debt: number;
  readonly overdraftLimit: number;
  readonly remaining: number;
  /** Present only when not ACTIVE, so results of ACTIVE budgets keep their compact stored form. */
  readonly status?: Exclude<BudgetStatus, 'ACTIVE'> | undefined;
}

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
 * remaining pays for an overage), or `snapshot` (the exact values the math used).
 */
export type LedgerGuard =
  | { readonly kind: 'exists' }
  | { readonly kind: 'admit'; readonly amount: number }
  | { readonly kind: 'covers'; readonly amount: number }
  | { readonly kind: 'snapshot'; readonly values: Partial<Record<LedgerField, number>> }
  | { readonly kind: 'maxAllocated'; readonly atMost: number };

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

/** The changes, each told the period of its ledger as read (rolling budgets only). */
export const inPeriods = (
  changes: readonly LedgerChange[],
  periods: ReadonlyMap<string, { readonly start: number; readonly closed?: boolean | undefined }>,
): LedgerChange[] =>
  changes.map((c) => {
    const p = periods.get(c.scope);
    return p ? { ...c, period: { start: p.start, closed: p.closed === true } } : c;
  });

export const isOverLimit = (l: Ledger): boolean => l.debt > l.overdraftLimit;

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

export function emptyLedger(scope: string, unit: Unit): Ledger {
  return {
    scope,
    unit,
    allocated: 0,
    spent: 0,
    reserved: 0,
    debt: 0,
    overdraftLimit: 0,
    remaining: 0,
  };
}

// ---- Admission (reserve, dry run, decide) ---------------------------------------------------

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
}

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
  if (ledger?.status === 'CLOSED') return { code: 'BUDGET_CLOSED', ...base };
  if (ledger?.status === 'FROZEN') return { code: 'BUDGET_FROZEN', ...base };
  if (ledger && isOverLimit(l)) return { code: 'OVERDRAFT_LIMIT_EXCEEDED', ...base };
  if (l.debt > 0) return { code: 'DEBT_OUTSTANDING', ...base };
  if (!ledger || l.remaining < amount) return { code: 'BUDGET_EXCEEDED', ...base };
  return undefined;
}

/** The refusal to report when several scopes fail: over limit, then debt, then budget. */
export function firstRefusal(
  refusals: readonly (ScopeRefusal | undefined)[],
): ScopeRefusal | undefined {
  const present = refusals.filter((r): r is ScopeRefusal => r !== undefined);
  return present.sort((a, b) => PRECEDENCE.indexOf(a.code) - PRECEDENCE.indexOf(b.code))[0];
}

export function refusalError(r: ScopeRefusal): DomainError {
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

/** Admission exactly as a live reservation decides it: the refusal to answer, if any. */
export function admissionRefusal(
  scopes: readonly string[],
  estimate: Amount,
  ledgers: ReadonlyMap<string, Ledger>,
): ScopeRefusal | undefined {
  return firstRefusal(
    scopes.map((s) => scopeRefusal(s, estimate.unit, ledgers.get(s), estimate.amount)),
  );
}

/** The ledgers of those scopes that have one, in scope order (what `balances` lists). */
export const presentLedgers = (
  scopes: readonly string[],
  ledgers: ReadonlyMap<string, Ledger>,
): Ledger[] =>
  scopes.flatMap((s) => {
    const l = ledgers.get(s);
    return l ? [l] : [];
  });

/** The ledgers as the changes leave them, from the ledgers read just before. */
export const ledgersAfter = (
  ledgers: ReadonlyMap<string, Ledger>,
  changes: readonly LedgerChange[],
): Ledger[] =>
  changes.map((c) => applyDelta(ledgers.get(c.scope) ?? emptyLedger(c.scope, c.unit), c.delta));

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
