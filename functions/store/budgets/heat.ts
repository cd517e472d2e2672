import { config } from '../../config/settings.js';
import type { BudgetRef } from '../../domain/budget.js';
import { budgetKey } from '../../domain/budget.js';
import type { TransactItem } from '../expressions.js';
import { keys } from '../keys.js';

// A budget's heat, as this process sees it: of the transactions that touched its items over a
// sliding window (AUTO_SHARDS_WINDOW_MS), how many met a conflict (or a throttle) on one of them.
// A budget is hot when at least AUTO_SHARDS_CONFLICTS did and they are at least
// AUTO_SHARDS_CONFLICT_PERCENT of its transactions: the next write of this process grows its escrow
// shards (use-cases/shard-growth.ts). A rate, not a count: a budget whose shards meet few
// conflicts under any load has enough of them. A write turned away busy counts as the whole
// threshold at once: one 429 for contention is reason enough.

/** Per second of the window: transactions on the budget's items, and those that met a conflict. */
interface Second {
  readonly at: number;
  attempts: number;
  conflicts: number;
}

interface Heat {
  readonly ref: BudgetRef;
  /** The window, oldest second first (real time: heat is about the table, not server time). */
  seconds: Second[];
  /** When this process last took it to grow: not again within GROWTH_GAP_MS. */
  grownAt?: number;
}

const heats = new Map<string, Heat>();
/** Budgets remembered at most: the oldest forgotten first (heat is only ever a hint). */
const MAX_BUDGETS = 1_000;
/**
 * After a growth, the budget's heat counts from zero again, and it is not handed out again
 * sooner than this: the new shards first take holds (and the evening out lands).
 */
const GROWTH_GAP_MS = 1_000;

/** The budgets of a transaction's ledger items (shards included), each once. */
function budgetsOf(items: readonly TransactItem[], only?: (i: number) => boolean): BudgetRef[] {
  const refs = new Map<string, BudgetRef>();
  items.forEach((item, i) => {
    if (only && !only(i)) return;
    const key = (item.Update?.Key ?? item.ConditionCheck?.Key ?? item.Put?.Item) as
      | { pk?: unknown }
      | undefined;
    const ref = typeof key?.pk === 'string' ? keys.budgetOfLedgerPk(key.pk) : undefined;
    if (ref) refs.set(budgetKey(ref), ref);
  });
  return [...refs.values()];
}

/** The budget of each item of a transaction that a cancellation blamed (conflict, throttle). */
export const budgetsBlamed = (
  items: readonly TransactItem[],
  reasons: readonly { readonly code: string }[],
): BudgetRef[] =>
  budgetsOf(items, (i) => {
    const code = reasons[i]?.code;
    return code === 'TransactionConflict' || code === 'ThrottlingError';
  });

function heatOf(ref: BudgetRef, atMs: number): Second {
  const key = budgetKey(ref);
  let heat = heats.get(key);
  if (!heat) {
    if (heats.size >= MAX_BUDGETS) heats.delete(heats.keys().next().value ?? '');
    heat = { ref, seconds: [] };
    heats.set(key, heat);
  }
  const second = Math.floor(atMs / 1000);
  const since = Math.floor((atMs - config.AUTO_SHARDS_WINDOW_MS) / 1000);
  heat.seconds = heat.seconds.filter((s) => s.at > since);
  let current = heat.seconds[heat.seconds.length - 1];
  if (current?.at !== second) {
    current = { at: second, attempts: 0, conflicts: 0 };
    heat.seconds.push(current);
  }
  return current;
}

/** A transaction sent: one attempt on each budget it touches. */
export function noteAttempt(items: readonly TransactItem[], atMs = Date.now()): void {
  if (config.AUTO_SHARDS_MAX <= 1) return;
  for (const ref of budgetsOf(items)) heatOf(ref, atMs).attempts++;
}

/** `weight` conflicts met on a budget's items, now. */
export function noteHeat(ref: BudgetRef, weight = 1, atMs = Date.now()): void {
  if (config.AUTO_SHARDS_MAX <= 1) return;
  const second = heatOf(ref, atMs);
  second.conflicts += weight;
  // A busy answer's weight stands for that many attempts that all conflicted.
  if (weight > 1) second.attempts += weight - 1;
}

/** Over the window: transactions on the budget's items, and those that met a conflict. */
function windowOf(heat: Heat, atMs: number): { attempts: number; conflicts: number } {
  const since = Math.floor((atMs - config.AUTO_SHARDS_WINDOW_MS) / 1000);
  let attempts = 0;
  let conflicts = 0;
  for (const s of heat.seconds) {
    if (s.at <= since) continue;
    attempts += s.attempts;
    conflicts += s.conflicts;
  }
  return { attempts, conflicts };
}

function isHot(heat: Heat, atMs: number): boolean {
  if (heat.grownAt !== undefined && heat.grownAt > atMs - GROWTH_GAP_MS) return false;
  const { attempts, conflicts } = windowOf(heat, atMs);
  return (
    conflicts >= config.AUTO_SHARDS_CONFLICTS &&
    conflicts * 100 >= config.AUTO_SHARDS_CONFLICT_PERCENT * attempts
  );
}

/** A hot budget, and the share (0–1) of its transactions that met a conflict. */
export interface HotBudget {
  readonly ref: BudgetRef;
  readonly share: number;
}

/**
 * The budgets hot now, each handed out once (one request of this process grows it); its heat
 * then counts again from zero.
 */
export function takeHotBudgets(atMs = Date.now()): HotBudget[] {
  if (config.AUTO_SHARDS_MAX <= 1) return [];
  const hot: HotBudget[] = [];
  for (const heat of heats.values()) {
    if (!isHot(heat, atMs)) continue;
    const { attempts, conflicts } = windowOf(heat, atMs);
    heat.grownAt = atMs;
    heat.seconds = [];
    hot.push({ ref: heat.ref, share: Math.min(1, conflicts / Math.max(1, attempts)) });
  }
  return hot;
}

/** Whether any budget is hot (every write asks). */
export const anyHot = (atMs = Date.now()): boolean =>
  config.AUTO_SHARDS_MAX > 1 && [...heats.values()].some((h) => isHot(h, atMs));

/** Retry-After of a write turned away busy on a budget nothing has been learnt of yet. */
const BUSY_RETRY_AFTER_MS = 1_000;

/**
 * How long a write turned away busy on these budgets should be told to wait: 1 s, up to 5 s as
 * the share of their transactions that met a conflict over the window grows (the hottest
 * budget counts), jittered ±50 % so that those turned away together do not come back together.
 * Each retry is one more transaction on the very items that are hot: the hotter they are, the
 * longer the clients stay away while the budget grows. Undefined when this process keeps no
 * heat of them (growth off, or no item of theirs blamed).
 */
export function busyRetryAfterMs(
  refs: readonly BudgetRef[],
  atMs = Date.now(),
  random = Math.random(),
): number | undefined {
  let share: number | undefined;
  for (const ref of refs) {
    const heat = heats.get(budgetKey(ref));
    if (!heat) continue;
    const { attempts, conflicts } = windowOf(heat, atMs);
    share = Math.max(share ?? 0, Math.min(1, conflicts / Math.max(1, attempts)));
  }
  if (share === undefined) return undefined;
  return Math.round(BUSY_RETRY_AFTER_MS * (1 + 4 * share) * (0.5 + random));
}
