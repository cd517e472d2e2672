import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import { pastDeadline } from '../../deadline.js';
import type { Unit } from '../../domain/amounts.js';
import {
  type Budget,
  type BudgetRecord,
  type BudgetRef,
  type Budgets,
  budgetKey,
} from '../../domain/budget.js';
import { RetryLaterError } from '../../domain/errors.js';
import { sumShards } from '../../domain/escrow.js';
import { chargedSoFar, heldAmount, type Reservation } from '../../domain/reservation.js';
import { documentClient, tableName } from '../client.js';
import {
  BUDGET_ALLOCATED,
  budgetOfItem,
  isLedgerItem,
  isShardItem,
  shardCountOf,
  shardKey,
  shardOf,
} from '../entities/ledger.js';
import type { Item, Key } from '../expressions.js';
import { keys } from '../keys.js';
import { getItems } from '../transact.js';
import { cachedShard, mark, rememberShard } from './shard-cache.js';

// Budgets as stored (use-cases/budget-reader.ts is their one reader above the store). A sharded
// budget is its ledger item (shard 0: the count, the gate, the settings) and shards 1..n−1; a
// read completes the shards it lacks and, for a refusal or a view, reads them again at one
// instant (`ReadMode`).

/**
 * How the shards of sharded budgets are read: `batch`, each at its own moment (BatchGetItem: a
 * decision that allows is re-checked by its write's conditions, one that refuses is read again
 * `atomic`); `atomic`, at one instant (TransactGetItems, which DynamoDB cancels while a write
 * holds one of the items: retried a few times, then busy — a refusal's proof); `view`, at one
 * instant when the table lets it within those retries, else as a batch read (what balances,
 * lookups and listings show, docs/scaling.md § Reads of a sharded budget).
 */
export type ReadMode = 'batch' | 'atomic' | 'view';

/**
 * A budget's shard count only grows (PATCH `shards`), so the process may remember it: a count
 * remembered too low only means the first read misses the newer shards, which
 * `completeShards` then reads.
 */
const shardCounts = new Map<string, number>();

/**
 * The keys to read for these budgets: each ledger item, and for a `batch` read the shards
 * already known of that this process has not read in the last SHARD_CACHE_MS (a read at one
 * instant reads the shards again anyway).
 */
export function budgetKeys(refs: readonly BudgetRef[], mode: ReadMode = 'batch'): Key[] {
  const at = Date.now();
  return refs.flatMap((ref) => {
    const n = mode === 'batch' ? (shardCounts.get(budgetKey(ref)) ?? 1) : 1;
    return Array.from({ length: n }, (_, k) => k)
      .filter((k) => k === 0 || !cachedShard(ref, k, at))
      .map((k) => shardKey(ref.scope, ref.unit, k));
  });
}

/** The keys to read for the budgets of these scopes in one unit. */
export const ledgerKeys = (
  scopes: readonly string[],
  unit: Unit,
  mode: ReadMode = 'batch',
): Key[] =>
  budgetKeys(
    scopes.map((scope) => ({ scope, unit })),
    mode,
  );

/**
 * Completes a first read (`items`, by pk) with the shards it lacks, for budgets it shows to be
 * sharded: from this process's recent reads (store/budgets/shard-cache.ts), else read — one
 * more BatchGetItem the first time a process meets a sharded budget. Shards read are remembered.
 */
export async function completeShards(items: Map<string, Item>, readAt: number): Promise<void> {
  const missing: Key[] = [];
  const at = Date.now();
  for (const item of [...items.values()]) {
    if (!isLedgerItem(item)) continue;
    const n = shardCountOf(item);
    if (n <= 1) continue;
    const ref = { scope: String(item.scope), unit: item.unit as Unit };
    shardCounts.set(budgetKey(ref), n);
    for (let k = 1; k < n; k++) {
      const key = shardKey(ref.scope, ref.unit, k);
      const read = items.get(key.pk);
      const cached = read ? undefined : cachedShard(ref, k, at);
      if (read) rememberShard(ref, k, read, readAt, at);
      else if (cached) items.set(key.pk, cached);
      else missing.push(key);
    }
  }
  if (missing.length === 0) return;
  const missingAt = mark();
  addRead(items, await getItems(missing), missingAt);
}

/**
 * A reservation's holds on shards k ≥ 1 that the shard cache shows without room for them, read
 * afresh into `items`: a cached `reserved` below what the reservation still holds there, or a
 * cached `spent` below what its charges and commit spent there and no refund took back (read
 * before they landed, or written by another process). A commit, release, expiry or charge gives
 * the hold back there, a refund takes spent back there, and the balances it answers with would
 * otherwise show a negative `reserved` (or a refund decide on spent the shard does not show). A
 * cached shard that has room for them stays, its staleness bounded as every cached shard's is.
 */
export async function readHeldShards(items: Map<string, Item>, r: Reservation): Promise<void> {
  const at = Date.now();
  const unit = r.reserved.unit;
  const held = r.status === 'ACTIVE' ? heldAmount(r).amount : 0;
  const charged = r.status === 'COMMITTED' ? (r.committed?.amount ?? 0) : chargedSoFar(r);
  const refunded = r.refunded?.amount ?? 0;
  const stale = r.holds
    .filter((h) => {
      if (h.shard < 1 || items.has(shardKey(h.scope, unit, h.shard).pk)) return false;
      const cached = cachedShard({ scope: h.scope, unit }, h.shard, at);
      if (cached === undefined) return false;
      // Of what it charged, the debt it ran up is on shard 0, and a refund returns that first.
      const debt = h.debtIncurred ?? 0;
      const spentHere = charged - debt - Math.max(0, refunded - debt);
      return Number(cached.reserved) < held || Number(cached.spent) < spentHere;
    })
    .map((h) => shardKey(h.scope, unit, h.shard));
  if (stale.length === 0) return;
  const staleAt = mark();
  addRead(items, await getItems(stale), staleAt);
}

/**
 * Items just read by a read begun at `readAt` (mark()), added to `items`; the shards among them
 * remembered (shard-cache.ts).
 */
function addRead(items: Map<string, Item>, read: ReadonlyMap<string, Item>, readAt: number): void {
  for (const [pk, item] of read) {
    items.set(pk, item);
    if (!isShardItem(item)) continue;
    const ref = { scope: String(item.scope), unit: item.unit as Unit };
    rememberShard(ref, Number(item.shard), item, readAt);
  }
}

/**
 * The budgets among `items` (read by pk), by budgetKey. Settings (caps, period, thresholds,
 * status) live on the ledger item (shard 0), which every read of a budget includes. A sharded
 * budget's spent, reserved and debt are its shards' sums; its allocation is the one shard 0
 * keeps (`budget_allocated`, else the shards' sum), and its remaining what SPEC's invariant
 * makes of them: read at one instant, exactly the shards' sums; read shard by shard, the
 * allocation is still exact and every field of the budget comes from the same shard reads.
 */
export function budgetsFrom(items: ReadonlyMap<string, Item>): Map<string, Budget> {
  const budgets = new Map<string, Budget>();
  for (const item of items.values()) {
    if (!isLedgerItem(item)) continue;
    const single = budgetOfItem(item);
    const { scope, unit } = single.ref;
    const n = shardCountOf(item);
    if (n <= 1) {
      budgets.set(budgetKey(single.ref), single);
      continue;
    }
    const shardItems = Array.from({ length: n }, (_, k) =>
      k === 0 ? item : items.get(shardKey(scope, unit, k).pk),
    );
    // A shard is never deleted (a budget's count only grows): absent means it was not read.
    if (shardItems.some((s) => s === undefined)) throw new Error(`shards of ${scope} unread`);
    const shards = shardItems.map((s) => shardOf(s as Item));
    const summed = sumShards(shards);
    const kept = item[BUDGET_ALLOCATED];
    const allocated = kept === undefined ? summed.allocated : Number(kept);
    budgets.set(budgetKey(single.ref), {
      ...single,
      counters: {
        allocated,
        spent: summed.spent,
        reserved: summed.reserved,
        debt: summed.debt,
        remaining: allocated - summed.spent - summed.reserved - summed.debt,
      },
      layout: { kind: 'sharded', shards, gated: item.gated === true },
    });
  }
  return budgets;
}

const shardedOf = (budgets: Budgets) =>
  [...budgets.values()].filter((b) => b.layout.kind === 'sharded');

/** The sharded budgets among the ledger items read, each with the count its shard 0 gives. */
function shardedItems(items: ReadonlyMap<string, Item>): Map<string, Key[]> {
  const sharded = new Map<string, Key[]>();
  for (const item of items.values()) {
    if (!isLedgerItem(item) || shardCountOf(item) <= 1) continue;
    const ref = { scope: String(item.scope), unit: item.unit as Unit };
    const n = shardCountOf(item);
    shardCounts.set(budgetKey(ref), n);
    sharded.set(
      budgetKey(ref),
      Array.from({ length: n }, (_, k) => shardKey(ref.scope, ref.unit, k)),
    );
  }
  return sharded;
}

/** Rounds of reading a budget's shards again when it got more of them between two reads. */
const GROWN_ROUNDS = 3;

/**
 * The budgets among items read by pk (a ledger item each, and for a batch read the shards
 * known of), their shards read as `mode` asks; `atomic` says whether they are one instant's.
 * At one instant: every shard of each sharded budget (shard 0 included, which counts them) by
 * TransactGetItems, again when shard 0 then counts more than were read (PATCH `shards`).
 */
export async function budgetsOf(
  items: Map<string, Item>,
  mode: ReadMode,
  readAt: number,
): Promise<{ budgets: Map<string, Budget>; atomic: boolean }> {
  if (mode === 'batch') {
    await completeShards(items, readAt);
    const budgets = budgetsFrom(items);
    return { budgets, atomic: shardedOf(budgets).length === 0 };
  }
  for (let round = 0, wanted = shardedItems(items); wanted.size > 0; round++) {
    const atomicAt = mark();
    const read = await readShardsAtomically([...wanted.values()].flat(), mode);
    if (read === undefined) break;
    addRead(items, read, atomicAt);
    const counted = shardedItems(items);
    const grown = [...counted].some(
      ([key, shards]) => shards.length > (wanted.get(key)?.length ?? 1),
    );
    if (!grown) return { budgets: budgetsFrom(items), atomic: true };
    if (round >= GROWN_ROUNDS) {
      if (mode === 'atomic') throw new RetryLaterError('CONTENTION', 100);
      break;
    }
    wanted = counted;
  }
  // Not one instant: the view falls back to reading the shards one by one.
  await completeShards(items, readAt);
  const budgets = budgetsFrom(items);
  return { budgets, atomic: shardedOf(budgets).length === 0 };
}

/**
 * A read at one instant waits for the writes that hold its items to finish: up to 8 retries,
 * full-jitter backoff capped at 100 ms (about 0.4 s in all), and never past the deadline.
 */
const ATOMIC_READ_RETRIES = 8;
const ATOMIC_READ_BACKOFF_CAP_MS = 100;

/**
 * These items at one instant (TransactGetItems is serializable with transactions; a
 * BatchGetItem across shards is not), by pk. DynamoDB cancels the read while a write holds one
 * of them, so it is tried again a few times (and not past the request's deadline): then
 * `atomic` is busy (429), a `view` gets undefined (it reads the shards one by one instead).
 */
async function readShardsAtomically(
  wanted: readonly Key[],
  mode: 'atomic' | 'view',
): Promise<Map<string, Item> | undefined> {
  const read = new Map<string, Item>();
  for (let i = 0; i < wanted.length; i += 100) {
    const batch = wanted.slice(i, i + 100);
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await documentClient.send(
          new TransactGetCommand({
            TransactItems: batch.map((Key) => ({ Get: { TableName: tableName(), Key } })),
          }),
        );
        for (const r of out.Responses ?? []) if (r.Item) read.set(String(r.Item.pk), r.Item);
        break;
      } catch (error) {
        // A write transaction holds one of the shards: nothing was read, look again shortly.
        if (!(error instanceof TransactionCanceledException)) throw error;
        if (attempt >= ATOMIC_READ_RETRIES || pastDeadline()) {
          if (mode === 'atomic') throw new RetryLaterError('CONTENTION', 100);
          return undefined;
        }
        const backoff = Math.min(ATOMIC_READ_BACKOFF_CAP_MS, 10 * 2 ** attempt);
        await new Promise((r) => setTimeout(r, Math.random() * backoff));
      }
    }
  }
  return read;
}

/**
 * The budgets of the given scopes in one unit, by budgetKey; absent scopes have none. `held`: the
 * reservation a settlement or refund decides for, whose holds' shards are read afresh where the
 * shard cache shows them without room for it (`readHeldShards`), as its snapshot's are.
 */
export async function getBudgets(
  scopes: readonly string[],
  unit: Unit,
  mode: ReadMode = 'batch',
  held?: Reservation,
): Promise<{ readonly budgets: Budgets; readonly atomic: boolean }> {
  const readAt = mark();
  const items = await getItems(ledgerKeys(scopes, unit, mode));
  if (held && mode === 'batch') await readHeldShards(items, held);
  return budgetsOf(items, mode, readAt);
}

/**
 * The budgets of these (scope, unit) pairs that exist, with their records, in the order given,
 * their shards read as `mode` says.
 */
export async function getBudgetRecords(
  refs: readonly BudgetRef[],
  mode: ReadMode,
): Promise<BudgetRecord[]> {
  const readAt = mark();
  const items = await getItems(budgetKeys(refs, mode));
  const { budgets } = await budgetsOf(items, mode, readAt);
  return refs.flatMap((ref) => {
    const main = items.get(keys.ledger(ref.scope, ref.unit).pk);
    const budget = budgets.get(budgetKey(ref));
    if (!isLedgerItem(main) || !budget) return [];
    return [
      {
        tenant: String(main.tenant),
        budget,
        createdAt: String(main.created_at),
        updatedAt: main.updated_at === undefined ? undefined : String(main.updated_at),
      },
    ];
  });
}
