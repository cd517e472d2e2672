import type { Budget, Counters } from './budget.js';
import { invalidRequest } from './errors.js';

/**
 * Budgets that roll over by themselves (docs/decisions.md § Rolling budgets). A period is a
 * half-open interval [start, end) of UTC milliseconds; consecutive periods touch.
 */
export const PERIOD_KINDS = ['DAILY', 'WEEKLY', 'MONTHLY'] as const;
export type PeriodKind = (typeof PERIOD_KINDS)[number];

export interface PeriodSpec {
  readonly kind: PeriodKind;
  /**
   * WEEKLY: the ISO weekday a period starts on (1 = Monday … 7 = Sunday); MONTHLY: the day of
   * the month (1–28, so every month has it). Absent: 1. DAILY periods start at 00:00 UTC.
   */
  readonly anchorDay?: number | undefined;
}

export interface Period {
  readonly start: number;
  readonly end: number;
}

/**
 * A rolling budget's period as read with its ledger: the current one (`closed` absent), or a
 * closed one whose ledger still settles the holds taken in it.
 */
export interface LedgerPeriod extends Period {
  readonly spec: PeriodSpec;
  /** The allocation each new period starts with. */
  readonly amount: number;
  readonly closed?: true | undefined;
}

/** Where a change to a rolling budget lands: its current period's ledger, or a closed one's. */
export interface ChangePeriod {
  readonly start: number;
  readonly closed: boolean;
}

/** Whether the ledger must start a new period before anything is decided on it. */
export const isDue = (p: LedgerPeriod, now: number): boolean => !p.closed && now >= p.end;

const DAY_MS = 86_400_000;

export function validAnchor(spec: PeriodSpec): boolean {
  const a = spec.anchorDay;
  if (a === undefined) return true;
  if (!Number.isInteger(a)) return false;
  if (spec.kind === 'DAILY') return false;
  return spec.kind === 'WEEKLY' ? a >= 1 && a <= 7 : a >= 1 && a <= 28;
}

/** The period of `spec` that contains the instant `t`. */
export function periodAt(spec: PeriodSpec, t: number): Period {
  if (!validAnchor(spec)) {
    throw invalidRequest(`period_anchor_day is not valid for ${spec.kind}`, {
      field: 'period_anchor_day',
    });
  }
  const anchor = spec.anchorDay ?? 1;
  const midnight = Math.floor(t / DAY_MS) * DAY_MS;
  switch (spec.kind) {
    case 'DAILY':
      return { start: midnight, end: midnight + DAY_MS };
    case 'WEEKLY': {
      // getUTCDay: 0 = Sunday; ISO: 1 = Monday … 7 = Sunday.
      const weekday = ((new Date(midnight).getUTCDay() + 6) % 7) + 1;
      const start = midnight - ((weekday - anchor + 7) % 7) * DAY_MS;
      return { start, end: start + 7 * DAY_MS };
    }
    case 'MONTHLY': {
      const d = new Date(midnight);
      const year = d.getUTCFullYear();
      const month = d.getUTCMonth() - (d.getUTCDate() >= anchor ? 0 : 1);
      // Date.UTC normalizes month −1 and 12 into the neighbouring years.
      return { start: Date.UTC(year, month, anchor), end: Date.UTC(year, month + 1, anchor) };
    }
  }
}

/**
 * The budget in the period of `now`, as rolling over makes it: the period's allocation, nothing
 * spent or held (holds stay with the period they were taken in), the debt carried on (it is
 * still owed). Unchanged while its period lasts, and for a budget that does not roll over.
 * Reads show this before any write rolls over (use-cases/budget-reader.ts).
 */
export function rolledOver(budget: Budget, now: number): Budget {
  const { period } = budget;
  if (!period || !isDue(period, now)) return budget;
  const next = periodAt(period.spec, now);
  return {
    ...budget,
    counters: {
      ...budget.counters,
      allocated: period.amount,
      spent: 0,
      reserved: 0,
      remaining: period.amount - budget.counters.debt,
    },
    period: { ...period, start: next.start, end: next.end },
  };
}

/** A closed period's counters: as they were at the boundary, the debt moved on to the next period. */
export const closedPeriodCounters = (c: Counters): Counters => ({
  ...c,
  debt: 0,
  remaining: c.allocated - c.spent - c.reserved,
});
