import type { BudgetRef } from '../../domain/budget.js';
import { budgetKey } from '../../domain/budget.js';
import type { LedgerDelta } from '../../domain/ledger.js';
import type { Item } from '../expressions.js';

// The shards k ≥ 1 of sharded budgets as this process last read them, for at most
// SHARD_CACHE_MS: a write's batch read takes shard 0 (count, gate, status, settings, debt) fresh
// every time and the other shards from here while they are young, so a reserve or a commit on a
// budget of 16 shards reads 1 item of it, not 16 (docs/scaling.md § Reads of a sharded budget).
// Safe because nothing is decided on them alone: a hold lands only where its own conditional
// write finds the shard still covering it, a refusal is proven on a read of every shard at one
// instant, and a rewrite of every shard is conditioned on each as read. What they do shape is the
// balances a write answers with, at most SHARD_CACHE_MS stale. A write of this process applies
// its delta here; a shard whose condition failed, or a budget rewritten whole, is forgotten.

/** How long a shard read is used in place of reading it again. */
export const SHARD_CACHE_MS = 1_000;

interface Cached {
  readonly item: Item;
  readonly at: number;
}

/** Budget key → shard → the item as read (or as this process's writes left it). */
const cache = new Map<string, Map<number, Cached>>();
const MAX_BUDGETS = 1_000;

/** Shard k of a budget, when read less than SHARD_CACHE_MS ago. */
export function cachedShard(ref: BudgetRef, k: number, atMs = Date.now()): Item | undefined {
  const c = cache.get(budgetKey(ref))?.get(k);
  return c && atMs - c.at < SHARD_CACHE_MS ? c.item : undefined;
}

/** Whether every shard 1..n−1 of a budget is young enough to be taken from here. */
export function cachedWhole(ref: BudgetRef, n: number, atMs = Date.now()): boolean {
  for (let k = 1; k < n; k++) if (!cachedShard(ref, k, atMs)) return false;
  return true;
}

/** Shards just read from the table. */
export function rememberShard(ref: BudgetRef, k: number, item: Item, atMs = Date.now()): void {
  if (k < 1) return;
  const key = budgetKey(ref);
  let shards = cache.get(key);
  if (!shards) {
    if (cache.size >= MAX_BUDGETS) cache.delete(cache.keys().next().value ?? '');
    shards = new Map();
    cache.set(key, shards);
  }
  shards.set(k, { item, at: atMs });
}

/** A change this process wrote on one shard: the cached shard moves with it. */
export function applyToCachedShard(ref: BudgetRef, k: number, delta: LedgerDelta): void {
  const c = cache.get(budgetKey(ref))?.get(k);
  if (!c) return;
  const item = { ...c.item };
  for (const field of ['allocated', 'spent', 'reserved', 'debt', 'remaining'] as const) {
    item[field] = Number(item[field]) + (delta[field] ?? 0);
  }
  cache.get(budgetKey(ref))?.set(k, { item, at: c.at });
}

/** A budget whose shards moved under a write of this process: read them all next time. */
export function forgetShards(ref: BudgetRef): void {
  cache.delete(budgetKey(ref));
}
