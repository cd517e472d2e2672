import type { Unit } from './amounts.js';
import { budgetKey } from './budget.js';
import { affectedScopes, chargedSoFar, type Reservation } from './reservation.js';

/**
 * Estimate accuracy (docs/decisions.md § Estimate accuracy): per budget and action kind, how
 * the estimates of settled reservations compared with what they spent, and how much budget
 * their holds kept from everyone else without spending it. Aggregated off the hot path from the
 * table's stream (use-cases/estimate-accuracy.ts), never on reserve, commit or release.
 */

/**
 * Upper bounds of the histogram of actual ÷ estimate, in percent, each inclusive: a ratio r
 * counts in the first bucket whose bound is ≥ r; the last bucket holds the ratios above 500 %.
 */
export const RATIO_BOUNDS_PERCENT = [10, 25, 50, 75, 90, 100, 110, 125, 150, 200, 300, 500];
export const BUCKETS = RATIO_BOUNDS_PERCENT.length + 1;

/** Kinds with figures of their own per budget; the rest add up in `other`. */
export const TRACKED_KINDS = 16;
/** A tracked kind that settled nothing for this long gives its place to a new kind. */
export const KIND_IDLE_EVICTION_MS = 7 * 86_400_000;

/** The coverage the suggested estimate aims at. */
export const SUGGESTION_COVERAGE_PERCENT = 95;

/** What the settled reservations of one kind on one budget add up to (sums exact: bigint). */
export interface AccuracyTotals {
  /** Settled with an actual: committed, or released or expired after charges. */
  readonly settled: number;
  /** Σ estimate and Σ actual of those. */
  readonly estimate: bigint;
  readonly actual: bigint;
  /** Of those, how many fell in each bucket of actual ÷ estimate (RATIO_BOUNDS_PERCENT). */
  readonly histogram: readonly number[];
  /**
   * Σ over every settled reservation of (estimate − actual)⁺ × the time it was held, in unit-ms:
   * budget held from everyone else and never spent.
   */
  readonly idleUnitMs: bigint;
  /** Released or expired without spending anything (nothing to compare). */
  readonly released: number;
  readonly expired: number;
  /** When the last of them settled (epoch ms). */
  readonly lastAtMs: number;
}

export const NO_TOTALS: AccuracyTotals = {
  settled: 0,
  estimate: 0n,
  actual: 0n,
  histogram: Array.from({ length: BUCKETS }, () => 0),
  idleUnitMs: 0n,
  released: 0,
  expired: 0,
  lastAtMs: 0,
};

/** The bucket of actual ÷ estimate, compared exactly (no division): 0 for 0 ÷ 0. */
export function bucketOf(actual: number, estimate: number): number {
  const a = BigInt(actual) * 100n;
  const e = BigInt(estimate);
  const i = RATIO_BOUNDS_PERCENT.findIndex((bound) => a <= BigInt(bound) * e);
  return i === -1 ? BUCKETS - 1 : i;
}

/** One reservation's settlement, as it counts for every budget it held on. */
export interface Contribution {
  readonly kind: string;
  readonly unit: Unit;
  /** The budgets it held on: one per affected scope (each scope has a budget, SPEC rule 6). */
  readonly budgets: readonly string[];
  readonly totals: AccuracyTotals;
  /** actual ÷ estimate, when it has an actual and an estimate (the EMF metric's value). */
  readonly ratio?: number | undefined;
}

/**
 * What a reservation that just left ACTIVE adds: its actual is its commit's (the whole actual),
 * or what its charges spent before a release or an expiry; one that spent nothing adds only to
 * `released` or `expired` and to the idle figure.
 */
export function contributionOf(r: Reservation): Contribution | undefined {
  if (r.status === 'ACTIVE') return undefined;
  const estimate = r.reserved.amount;
  const charged = chargedSoFar(r);
  const actual = r.status === 'COMMITTED' ? (r.committed?.amount ?? 0) : charged;
  const spentAny = r.status === 'COMMITTED' || charged > 0;
  const finalized = r.finalizedAtMs ?? r.expiresAtMs;
  const heldMs = Math.max(0, finalized - r.createdAtMs);
  const histogram = [...NO_TOTALS.histogram];
  if (spentAny) histogram[bucketOf(actual, estimate)] = 1;
  return {
    kind: r.action.kind,
    unit: r.reserved.unit,
    budgets: affectedScopes(r).map((scope) => budgetKey({ scope, unit: r.reserved.unit })),
    totals: {
      settled: spentAny ? 1 : 0,
      estimate: spentAny ? BigInt(estimate) : 0n,
      actual: spentAny ? BigInt(actual) : 0n,
      histogram,
      idleUnitMs: BigInt(Math.max(0, estimate - actual)) * BigInt(heldMs),
      released: !spentAny && r.status === 'RELEASED' ? 1 : 0,
      expired: !spentAny && r.status === 'EXPIRED' ? 1 : 0,
      lastAtMs: finalized,
    },
    ...(spentAny && estimate > 0 && { ratio: actual / estimate }),
  };
}

export function addTotals(a: AccuracyTotals, b: AccuracyTotals): AccuracyTotals {
  return {
    settled: a.settled + b.settled,
    estimate: a.estimate + b.estimate,
    actual: a.actual + b.actual,
    histogram: a.histogram.map((n, i) => n + (b.histogram[i] ?? 0)),
    idleUnitMs: a.idleUnitMs + b.idleUnitMs,
    released: a.released + b.released,
    expired: a.expired + b.expired,
    lastAtMs: Math.max(a.lastAtMs, b.lastAtMs),
  };
}

/**
 * The estimate that would have covered SUGGESTION_COVERAGE_PERCENT of the actuals: the smallest
 * bucket bound under which that share of the ratios fell, times the mean estimate (rounded up).
 * Undefined with nothing settled, a mean estimate of 0, or when that share lies above the last
 * bound (estimates too small by more than 5×: the ratio itself says so).
 */
export function suggestion(
  t: AccuracyTotals,
): { readonly ratioPercent: number; readonly estimate: bigint } | undefined {
  if (t.settled === 0 || t.estimate === 0n) return undefined;
  let covered = 0;
  for (const [i, bound] of RATIO_BOUNDS_PERCENT.entries()) {
    covered += t.histogram[i] ?? 0;
    if (covered * 100 >= SUGGESTION_COVERAGE_PERCENT * t.settled) {
      const scaled = BigInt(bound) * t.estimate;
      const divisor = 100n * BigInt(t.settled);
      return { ratioPercent: bound, estimate: (scaled + divisor - 1n) / divisor };
    }
  }
  return undefined;
}

/** The kinds of one budget that have figures of their own, each with when it last settled. */
export interface TrackedKinds {
  readonly kinds: ReadonlyMap<string, number>;
  /** Changes with every admission or eviction: they are conditioned on it. */
  readonly version: number;
}

export interface KindPlan {
  /** Kinds of the batch that count on their own (already tracked, or admitted now). */
  readonly own: ReadonlySet<string>;
  /** New kinds taking a place. */
  readonly admitted: readonly string[];
  /** Tracked kinds giving theirs up (idle ≥ KIND_IDLE_EVICTION_MS): their totals go to other. */
  readonly evicted: readonly string[];
}

/**
 * Which of a batch's kinds (`seen`: kind → settlements in the batch) count on their own: the
 * tracked ones; new ones while fewer than TRACKED_KINDS are tracked, the busiest first; beyond
 * that a new kind takes the place of the kind idle longest, once that one has settled nothing
 * for KIND_IDLE_EVICTION_MS. Every other kind counts in `other`.
 */
export function planKinds(
  tracked: TrackedKinds,
  seen: ReadonlyMap<string, number>,
  now: number,
): KindPlan {
  const own = new Set([...seen.keys()].filter((k) => tracked.kinds.has(k)));
  const fresh = [...seen]
    .filter(([k]) => !tracked.kinds.has(k))
    .sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0))
    .map(([k]) => k);
  const idle = [...tracked.kinds]
    .filter(([k, last]) => !seen.has(k) && now - last >= KIND_IDLE_EVICTION_MS)
    .sort(([, a], [, b]) => a - b)
    .map(([k]) => k);
  const admitted: string[] = [];
  const evicted: string[] = [];
  let room = TRACKED_KINDS - tracked.kinds.size;
  for (const kind of fresh) {
    if (room <= 0) {
      const out = idle.shift();
      if (out === undefined) break;
      evicted.push(out);
      room++;
    }
    admitted.push(kind);
    own.add(kind);
    room--;
  }
  return { own, admitted, evicted };
}
