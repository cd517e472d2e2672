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
//
// A process serves requests concurrently (the local server does), so a read and a write of the
// same shard may overlap, and then whether the item read includes the write is unknown: applying
// the write's delta to it could count the write twice (a release twice: `reserved` below zero in
// the balances answered), and remembering a read served before the write over the entry the
// write moved would lose it. Each is ordered by `mark()`: a read is remembered only when no write
// of its shard finished since the read began, and a write's delta applies only to an entry
// remembered before the write began; an entry that overlaps is forgotten instead.

/** How long a shard read is used in place of reading it again. */
export const SHARD_CACHE_MS = 1_000;

interface Cached {
  readonly item: Item;
  readonly at: number;
  /** The mark() when it was remembered. */
  readonly mark: number;
}

/** Budget key → shard → the item as read (or as this process's writes left it). */
const cache = new Map<string, Map<number, Cached>>();
const MAX_BUDGETS = 1_000;

/**
 * Budget key → the mark() at which this process's last write of each shard finished (`whole`:
 * of the budget rewritten whole, or forgotten); `evicted`, the latest of those pruned, which
 * then stands for every budget not listed.
 */
const written = new Map<string, { whole: number; shards: Map<number, number> }>();
let evicted = 0;

let marks = 0;
/** A point in this process's order of reads and writes: taken when a read or a write begins. */
export const mark = (): number => ++marks;

function writtenAfter(key: string, k: number, since: number): boolean {
  const w = written.get(key);
  return (w === undefined ? evicted : Math.max(w.whole, w.shards.get(k) ?? 0)) > since;
}

function noteWritten(key: string, k: number | 'whole'): void {
  let w = written.get(key);
  if (!w) {
    const oldest = written.size >= MAX_BUDGETS ? written.entries().next().value : undefined;
    if (oldest) {
      evicted = Math.max(evicted, oldest[1].whole, ...oldest[1].shards.values());
      written.delete(oldest[0]);
    }
    w = { whole: 0, shards: new Map() };
    written.set(key, w);
  }
  if (k === 'whole') w.whole = mark();
  else w.shards.set(k, mark());
}

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

/**
 * Shards just read from the table by a read that began at `readAt` (mark()): not remembered
 * when a write of this process on that shard finished since, as the read may predate it.
 */
export function rememberShard(
  ref: BudgetRef,
  k: number,
  item: Item,
  readAt: number,
  atMs = Date.now(),
): void {
  if (k < 1) return;
  const key = budgetKey(ref);
  if (writtenAfter(key, k, readAt)) return;
  let shards = cache.get(key);
  if (!shards) {
    if (cache.size >= MAX_BUDGETS) cache.delete(cache.keys().next().value ?? '');
    shards = new Map();
    cache.set(key, shards);
  }
  shards.set(k, { item, at: atMs, mark: mark() });
}

/**
 * A change this process wrote on one shard, in a write that began at `writeAt` (mark()): the
 * cached shard moves with it, unless it was remembered since (it may already show the change).
 */
export function applyToCachedShard(
  ref: BudgetRef,
  k: number,
  delta: LedgerDelta,
  writeAt: number,
): void {
  const key = budgetKey(ref);
  noteWritten(key, k);
  const c = cache.get(key)?.get(k);
  if (!c) return;
  if (c.mark > writeAt) {
    cache.get(key)?.delete(k);
    return;
  }
  const item = { ...c.item };
  for (const field of ['allocated', 'spent', 'reserved', 'debt', 'remaining'] as const) {
    item[field] = Number(item[field]) + (delta[field] ?? 0);
  }
  cache.get(key)?.set(k, { ...c, item });
}

/** A budget whose shards moved under a write of this process: read them all next time. */
export function forgetShards(ref: BudgetRef): void {
  noteWritten(budgetKey(ref), 'whole');
  cache.delete(budgetKey(ref));
}
