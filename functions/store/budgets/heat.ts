import { config } from '../../config/settings.js';
import type { BudgetRef } from '../../domain/budget.js';
import { budgetKey } from '../../domain/budget.js';
import type { TransactItem } from '../expressions.js';
import { keys } from '../keys.js';

// A budget's heat, as this process sees it: the transaction conflicts (and throttles) its items
// met, counted over a sliding window. A budget whose heat reaches AUTO_SHARDS_CONFLICTS within
// AUTO_SHARDS_WINDOW_MS is hot: the next write of this process that sees it grows its escrow
// shards (use-cases/auto-shards.ts). A write turned away busy counts as the whole threshold at
// once: one 429 for contention is reason enough.

interface Heat {
  readonly ref: BudgetRef;
  /** When each conflict was met (ms, real time: heat is about the table, not server time), oldest first. */
  at: number[];
  /** When this process last took it to grow: not again within GROWTH_GAP_MS. */
  grownAt?: number;
}

const heats = new Map<string, Heat>();
/**
 * After a growth, the budget's heat counts from zero again, and it is not handed out again
 * sooner than this: the new shards first take holds (and the evening out lands).
 */
const GROWTH_GAP_MS = 1_000;
/** Budgets remembered at most: the oldest forgotten first (heat is only ever a hint). */
const MAX_BUDGETS = 1_000;

/** The budget of each item of a transaction that a cancellation blamed (conflict, throttle). */
export function budgetsBlamed(
  items: readonly TransactItem[],
  reasons: readonly { readonly code: string }[],
): BudgetRef[] {
  const refs: BudgetRef[] = [];
  reasons.forEach((r, i) => {
    if (r.code !== 'TransactionConflict' && r.code !== 'ThrottlingError') return;
    const item = items[i];
    const key = (item?.Update?.Key ?? item?.ConditionCheck?.Key ?? item?.Put?.Item) as
      | { pk?: unknown }
      | undefined;
    const ref = typeof key?.pk === 'string' ? keys.budgetOfLedgerPk(key.pk) : undefined;
    if (ref) refs.push(ref);
  });
  return refs;
}

/** Notes `weight` conflicts on a budget's items, now. */
export function noteHeat(ref: BudgetRef, weight = 1, atMs = Date.now()): void {
  const key = budgetKey(ref);
  let heat = heats.get(key);
  if (!heat) {
    if (heats.size >= MAX_BUDGETS) heats.delete(heats.keys().next().value ?? '');
    heat = { ref, at: [] };
    heats.set(key, heat);
  }
  const since = atMs - config.AUTO_SHARDS_WINDOW_MS;
  heat.at = heat.at.filter((t) => t > since);
  const room = config.AUTO_SHARDS_CONFLICTS;
  for (let i = 0; i < weight && heat.at.length < room; i++) heat.at.push(atMs);
}

/**
 * The budgets hot now, each handed out once (one request of this process grows it); its heat
 * then counts again from zero.
 */
export function takeHotBudgets(atMs = Date.now()): BudgetRef[] {
  if (config.AUTO_SHARDS_MAX <= 1) return [];
  const hot: BudgetRef[] = [];
  const since = atMs - config.AUTO_SHARDS_WINDOW_MS;
  for (const heat of heats.values()) {
    if (heat.grownAt !== undefined && heat.grownAt > atMs - GROWTH_GAP_MS) continue;
    if (heat.at.filter((t) => t > since).length < config.AUTO_SHARDS_CONFLICTS) continue;
    heat.grownAt = atMs;
    heat.at = [];
    hot.push(heat.ref);
  }
  return hot;
}

/** Whether any budget is hot (cheap: every write asks). */
export const anyHot = (atMs = Date.now()): boolean =>
  config.AUTO_SHARDS_MAX > 1 &&
  [...heats.values()].some(
    (h) =>
      (h.grownAt === undefined || h.grownAt <= atMs - GROWTH_GAP_MS) &&
      h.at.length >= config.AUTO_SHARDS_CONFLICTS,
  );
