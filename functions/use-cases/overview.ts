import { UNITS } from '../domain/amounts.js';
import {
  BUDGET_STATUSES,
  type Budget,
  type BudgetRecord,
  balanceOf,
  isOverLimit,
} from '../domain/budget.js';
import type { Refusal } from '../domain/budget-events.js';
import type { Reservation } from '../domain/reservation.js';
import { TENANT_STATUSES } from '../domain/tenant.js';
import { watchedBudgets } from '../store/budgets/watch.js';
import { readCounters, recentExpiries, recentRefusals } from '../store/overview.js';
import { viewBudgets } from './budget-reader.js';

// GET /v1/admin/overview (issue 27 point 1): the reference's AdminOverviewResponse from
// maintained counters and bounded reads, never a Scan — the same few reads with ten tenants or
// ten thousand (measured: `npm run bench -- --phases overview`).

/** The window of the recent counts and lists: the last hour. */
export const EVENT_WINDOW_SECONDS = 3_600;
/** Budgets in debt read at most: beyond, the debt counts are those of the first this many. */
export const MAX_WATCHED = 10_000;
/** Recent refusals and expiries read at most, per spread partition. */
const RECENT_READ = 250;

export interface Overview {
  readonly asOf: number;
  readonly tenants: Readonly<Record<string, number>>;
  readonly budgets: Readonly<Record<string, number>>;
  readonly byUnit: Readonly<Record<string, number>>;
  readonly withDebt: number;
  readonly overLimit: number;
  /** Top 10 by debt. */
  readonly debtScopes: readonly Budget[];
  /** Top 10 over their overdraft limit, by debt. */
  readonly overLimitScopes: readonly Budget[];
  /** Refusals in the window, newest first, and their count by reason (suppressed included). */
  readonly denials: readonly Refusal[];
  readonly denialsByReason: Readonly<Record<string, number>>;
  readonly expiries: readonly Reservation[];
}

const byDebt = (a: Budget, b: Budget) => b.counters.debt - a.counters.debt;

/** The operator's overview at `now`. */
export async function overview(now: number): Promise<Overview> {
  const since = now - EVENT_WINDOW_SECONDS * 1_000;
  const [counters, watched, refusals, expired] = await Promise.all([
    readCounters(),
    watchedBudgets(MAX_WATCHED).then((refs) => viewBudgets(refs, now)),
    recentRefusals(since, RECENT_READ),
    recentExpiries(since, RECENT_READ),
  ]);
  const inDebt = watched.map((r: BudgetRecord) => r.budget).filter((b) => b.counters.debt > 0);
  const over = inDebt.filter((b) => isOverLimit(balanceOf(b)));
  const denialsByReason: Record<string, number> = {};
  for (const r of refusals)
    denialsByReason[r.code] = (denialsByReason[r.code] ?? 0) + 1 + r.suppressed;
  const counted = (prefix: string, names: readonly string[]) =>
    Object.fromEntries(names.map((n) => [n, Math.max(0, counters[`${prefix}_${n}`] ?? 0)]));
  return {
    asOf: now,
    tenants: counted('tenants', TENANT_STATUSES),
    budgets: counted('budgets', BUDGET_STATUSES),
    byUnit: Object.fromEntries(Object.entries(counted('unit', UNITS)).filter(([, n]) => n > 0)),
    withDebt: inDebt.length,
    overLimit: over.length,
    debtScopes: [...inDebt].sort(byDebt).slice(0, 10),
    overLimitScopes: [...over].sort(byDebt).slice(0, 10),
    denials: refusals.slice(0, 10),
    denialsByReason,
    expiries: expired.slice(0, 10),
  };
}
