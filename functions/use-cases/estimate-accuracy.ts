import {
  type AccuracyTotals,
  addTotals,
  type Contribution,
  contributionOf,
  NO_TOTALS,
  planKinds,
  suggestion,
} from '../domain/accuracy.js';
import type { BudgetRef } from '../domain/budget.js';
import { budgetKey } from '../domain/budget.js';
import type { BudgetWriter } from '../domain/caller.js';
import { RetryLaterError } from '../domain/errors.js';
import {
  type AccuracyAddition,
  addAccuracy,
  applyKindPlan,
  type BudgetAccuracy,
  readAccuracy,
  readTrackedKinds,
} from '../store/accuracy.js';
import { decodeStreamRecord, type StreamRecord } from '../store/stream.js';
import { recordMetric } from '../telemetry/invocation.js';
import { readRecords } from './budget-reader.js';
import { noBudget } from './budget-rules.js';
import { writableScope } from './context.js';

// Estimate accuracy, off the hot path (docs/decisions.md § Estimate accuracy): the table's
// stream shows each reservation leaving ACTIVE; a batch of them is summed per budget and kind
// and added with one transaction per few budgets. Reserve, commit and release write nothing for
// it, and the stream costs them nothing.

/** Rounds a batch takes when other batches change a budget's tracked kinds under it. */
const MAX_ROUNDS = 4;

/**
 * Adds what the reservations settled in `records` tell of their estimates. `clock`: when a kind
 * counts as idle (eviction). Throws when it could not add them: the batch is delivered again
 * (its transactions carry tokens, so what was added is not added twice within 10 minutes).
 */
export async function aggregateAccuracy(
  records: readonly StreamRecord[],
  clock: () => number,
): Promise<{ readonly settled: number }> {
  const contributions = records.flatMap((record) => {
    const change = decodeStreamRecord(record, clock);
    if (change.kind !== 'reservation' || change.before?.status !== 'ACTIVE') return [];
    return contributionOf(change.after) ?? [];
  });
  if (contributions.length === 0) return { settled: 0 };
  const batchId = `${records[0]?.eventID ?? ''}..${records.at(-1)?.eventID ?? ''}`;
  await addContributions(contributions, batchId, clock());
  for (const c of contributions) {
    if (c.ratio !== undefined) recordMetric('EstimateRatio', c.ratio, { Unit: c.unit });
  }
  return { settled: contributions.length };
}

async function addContributions(
  contributions: readonly Contribution[],
  batchId: string,
  now: number,
): Promise<void> {
  const byBudget = new Map<string, Map<string, AccuracyTotals>>();
  for (const c of contributions) {
    for (const budget of c.budgets) {
      const kinds = byBudget.get(budget) ?? new Map<string, AccuracyTotals>();
      kinds.set(c.kind, addTotals(kinds.get(c.kind) ?? NO_TOTALS, c.totals));
      byBudget.set(budget, kinds);
    }
  }
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const additions = await planAdditions(byBudget, now);
    if (additions && (await addAccuracy(additions, batchId)) === 'written') return;
  }
  throw new RetryLaterError('CONTENTION', 1_000);
}

/**
 * Per budget, which kinds count on their own (admitting or evicting kinds first, as planKinds
 * says) and what goes to other; undefined when another batch changed a budget's kinds meanwhile.
 */
async function planAdditions(
  byBudget: ReadonlyMap<string, ReadonlyMap<string, AccuracyTotals>>,
  now: number,
): Promise<AccuracyAddition[] | undefined> {
  const tracked = await readTrackedKinds([...byBudget.keys()]);
  const additions: AccuracyAddition[] = [];
  for (const [budget, kinds] of byBudget) {
    const before = tracked.get(budget) ?? { kinds: new Map(), version: 0 };
    const seen = new Map([...kinds].map(([k, t]) => [k, t.settled + t.released + t.expired]));
    const plan = planKinds(before, seen, now);
    if (plan.admitted.length > 0 || plan.evicted.length > 0) {
      const evicted = plan.evicted.length > 0 ? (await readAccuracy(budget)).kinds : new Map();
      if ((await applyKindPlan(budget, before, plan, evicted, now)) === 'stale') return undefined;
    }
    const own = new Map([...kinds].filter(([k]) => plan.own.has(k)));
    const rest = [...kinds].filter(([k]) => !plan.own.has(k)).map(([, t]) => t);
    additions.push({
      budget,
      own,
      ...(rest.length > 0 && { other: rest.reduce(addTotals, NO_TOTALS) }),
    });
  }
  return additions;
}

/** One kind's figures as GET /v1/admin/budgets/accuracy answers them. */
export interface KindAccuracy {
  readonly totals: AccuracyTotals;
  readonly suggestion?: ReturnType<typeof suggestion>;
}

export interface EstimateAccuracy {
  readonly ref: BudgetRef;
  readonly kinds: ReadonlyMap<string, KindAccuracy>;
  readonly other: KindAccuracy;
  readonly total: KindAccuracy;
}

/**
 * GET /v1/admin/budgets/accuracy?scope=&unit=: a budget's figures (the operator's, or the key's
 * own tenant's), each with the estimate that would have covered 95 % of its actuals.
 */
export async function lookupAccuracy(
  reader: BudgetWriter,
  query: BudgetRef,
): Promise<EstimateAccuracy> {
  const ref = { scope: writableScope(reader, query.scope).scope, unit: query.unit };
  const [records, read] = await Promise.all([readRecords([ref]), readAccuracy(budgetKey(ref))]);
  if (records.length === 0) throw noBudget(ref.scope, ref.unit);
  return figuresOf(ref, read);
}

function figuresOf(ref: BudgetRef, read: BudgetAccuracy): EstimateAccuracy {
  const figures = (totals: AccuracyTotals): KindAccuracy => ({
    totals,
    suggestion: suggestion(totals),
  });
  const total = [...read.kinds.values()].reduce(addTotals, read.other);
  return {
    ref,
    kinds: new Map([...read.kinds].map(([k, t]) => [k, figures(t)])),
    other: figures(read.other),
    total: figures(total),
  };
}
