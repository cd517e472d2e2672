import type { AuditEntry } from '../domain/audit.js';
import type { Budget } from '../domain/budget.js';
import type { Reservation } from '../domain/reservation.js';
import type { ShardTouches } from './budgets/placement.js';
import { applyToCachedShard, forgetShards, mark } from './budgets/shard-cache.js';
import { auditItem } from './entities/audit.js';
import { budgetOfItem, isLedgerItem, shardCountOf } from './entities/ledger.js';
import type { StoredOutcome } from './entities/outcome.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import { putIfAbsent, type TransactItem } from './expressions.js';
import { recordedOutcomeOf } from './records.js';
import { type CancellationReason, transact, type WritePriority } from './transact.js';

/**
 * What every guarded write comes back with: written; a duplicate (the idempotency record
 * already existed: its outcome replays); or stale (a condition failed because the state moved
 * since it was read), with the ledgers whose conditions failed as they were then.
 */
export type WriteOutcome =
  | { readonly kind: 'written' }
  | {
      readonly kind: 'duplicate';
      readonly stored: StoredOutcome | undefined;
      /** The record, when it is a reservation (a reserve's): as the failed condition found it. */
      readonly reservation?: Reservation | undefined;
    }
  | { readonly kind: 'stale'; readonly refused: readonly RefusedBudget[] };

/**
 * `index` is the position in the write's ledger changes; `budget` (unsharded) as the failed
 * condition found it, undefined: there is none.
 */
export interface RefusedBudget {
  readonly index: number;
  readonly budget: Budget | undefined;
}

/**
 * Where a transaction's items are: its idempotency record, and per item the index of the
 * ledger change whose failed condition proves that ledger's state (an unsharded ledger item;
 * a shard proves nothing about its budget).
 */
export interface TransactionLayout {
  readonly recordAt?: number | undefined;
  readonly proofs: readonly (number | undefined)[];
  /** Sharded budgets touched: this process's shard cache follows the outcome. */
  readonly touches?: ShardTouches | undefined;
}

/** A transaction and how to read its cancellation. */
export interface GuardedTransaction {
  readonly items: TransactItem[];
  readonly layout: TransactionLayout;
}

/**
 * One TransactWriteItems, its cancellation read the one way every write reads it. Given a
 * builder, a retry after a conflict sends `build(attempt)` (a hold placed on another shard; none
 * when the builder answers undefined: the write reads again), and a cancellation is read by the
 * layout of the attempt that was cancelled last.
 */
export async function transactWrite(
  transaction: GuardedTransaction | ((attempt: number) => GuardedTransaction | undefined),
  priority: WritePriority = 'admit',
): Promise<WriteOutcome> {
  const build = typeof transaction === 'function' ? transaction : () => transaction;
  const first = build(0);
  if (!first) throw new Error('transactWrite: nothing to send');
  let sent = first;
  const retarget = (attempt: number) => {
    const next = build(attempt);
    if (next) sent = next;
    return next?.items;
  };
  const writeAt = mark();
  const outcome = await transact(sent.items, priority, retarget).catch((error: unknown) => {
    // Whether it landed is unknown: its shards are read afresh next time.
    followInCache(sent.layout.touches, false, writeAt);
    throw error;
  });
  followInCache(sent.layout.touches, outcome.kind === 'committed', writeAt);
  return outcome.kind === 'committed'
    ? { kind: 'written' }
    : classifyCancellation(outcome.reasons, sent.layout);
}

/**
 * The shard cache (store/budgets/shard-cache.ts) after a write: a change written moves its
 * cached shard along; a budget rewritten whole, or one whose write did not go through (a shard
 * moved under it), is read afresh next time.
 */
function followInCache(touches: ShardTouches | undefined, written: boolean, writeAt: number): void {
  if (!touches) return;
  for (const ref of touches.whole) forgetShards(ref);
  for (const { ref, shard, delta } of touches.fast) {
    if (written) applyToCachedShard(ref, shard, delta, writeAt);
    else forgetShards(ref);
  }
}

/** CancellationReasons are index-aligned with the items sent. */
export function classifyCancellation(
  reasons: readonly CancellationReason[],
  layout: TransactionLayout,
): WriteOutcome {
  const failed = (i: number | undefined) =>
    i !== undefined && reasons[i]?.code === 'ConditionalCheckFailed';
  if (failed(layout.recordAt)) {
    const item = reasons[layout.recordAt ?? -1]?.item;
    const reservation = isReservationItem(item) ? reservationOf(item) : undefined;
    return { kind: 'duplicate', stored: recordedOutcomeOf(item), reservation };
  }
  const refused: RefusedBudget[] = [];
  layout.proofs.forEach((index, at) => {
    if (index === undefined || !failed(at)) return;
    const item = reasons[at]?.item;
    // Read unsharded, found sharded (PATCH `shards` since): shard 0 alone proves nothing.
    if (isLedgerItem(item) && shardCountOf(item) > 1) return;
    refused.push({ index, budget: isLedgerItem(item) ? budgetOfItem(item) : undefined });
  });
  return { kind: 'stale', refused };
}

/** The audit record of a change, put in the change's own transaction. */
export const auditPut = (e: AuditEntry): TransactItem => putIfAbsent(auditItem(e));

/**
 * A change of the control plane and its audit record in one transaction: 'stale' when one of its
 * conditions failed (another change came first), and nothing was written.
 */
export async function writeAudited(
  items: readonly TransactItem[],
  audit: AuditEntry | undefined,
): Promise<'written' | 'stale'> {
  const outcome = await transact([...items, ...(audit ? [auditPut(audit)] : [])]);
  return outcome.kind === 'committed' ? 'written' : 'stale';
}
