import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../../domain/amounts.js';
import {
  type Budget,
  type BudgetRecord,
  type BudgetRef,
  type Budgets,
  budgetKey,
  shardCount,
} from '../../domain/budget.js';
import { RetryLaterError } from '../../domain/errors.js';
import { sumShards } from '../../domain/escrow.js';
import { documentClient, tableName } from '../client.js';
import { budgetOfItem, isLedgerItem, shardCountOf, shardKey, shardOf } from '../entities/ledger.js';
import type { Item, Key } from '../expressions.js';
import { keys } from '../keys.js';
import { getItems } from '../transact.js';

// Budgets as stored (use-cases/budget-reader.ts is their one reader above the store). A sharded
// budget is its ledger item (shard 0: the count, the gate, the settings) and shards 1..n−1; a
// read completes the shards it lacks and, for a refusal, reads them again at one instant.

/**
 * A budget's shard count only grows (PATCH `shards`), so the process may remember it: a count
 * remembered too low only means the first read misses the newer shards, which
 * `completeShards` then reads.
 */
const shardCounts = new Map<string, number>();

/** The keys to read for these budgets: each ledger item, and the shards already known of. */
export function budgetKeys(refs: readonly BudgetRef[]): Key[] {
  return refs.flatMap((ref) => {
    const n = shardCounts.get(budgetKey(ref)) ?? 1;
    return Array.from({ length: n }, (_, k) => shardKey(ref.scope, ref.unit, k));
  });
}

/** The keys to read for the budgets of these scopes in one unit. */
export const ledgerKeys = (scopes: readonly string[], unit: Unit): Key[] =>
  budgetKeys(scopes.map((scope) => ({ scope, unit })));

/**
 * Reads the shards a first read (`items`, by pk) lacks, for budgets it shows to be sharded, and
 * adds them to `items`. One more BatchGetItem the first time a process meets a sharded budget.
 */
export async function completeShards(items: Map<string, Item>): Promise<void> {
  const missing: Key[] = [];
  for (const item of [...items.values()]) {
    if (!isLedgerItem(item)) continue;
    const n = shardCountOf(item);
    if (n <= 1) continue;
    const ref = { scope: String(item.scope), unit: item.unit as Unit };
    shardCounts.set(budgetKey(ref), n);
    for (let k = 1; k < n; k++) {
      const key = shardKey(ref.scope, ref.unit, k);
      if (!items.has(key.pk)) missing.push(key);
    }
  }
  if (missing.length === 0) return;
  for (const [pk, item] of await getItems(missing)) items.set(pk, item);
}

/**
 * The budgets among `items` (read by pk), by budgetKey: a sharded budget's counters are its
 * shards' sums. Settings (caps, period, thresholds, status) live on the ledger item (shard 0),
 * which every read of a budget includes.
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
    budgets.set(budgetKey(single.ref), {
      ...single,
      counters: sumShards(shards),
      layout: { kind: 'sharded', shards, gated: item.gated === true },
    });
  }
  return budgets;
}

const shardedOf = (budgets: Budgets) =>
  [...budgets.values()].filter((b) => b.layout.kind === 'sharded');

/**
 * The budgets among items read by pk (their missing shards read too). `atomic`: sharded budgets
 * read again at one instant, as a refusal must be; without it the answer says whether the read
 * was one instant anyway.
 */
export async function budgetsOf(
  items: Map<string, Item>,
  atomic: boolean,
): Promise<{ budgets: Map<string, Budget>; atomic: boolean }> {
  await completeShards(items);
  let budgets = budgetsFrom(items);
  if (shardedOf(budgets).length === 0) return { budgets, atomic: true };
  if (!atomic) return { budgets, atomic: false };
  for (;;) {
    await readShardsAtomically(items, budgets);
    // A budget given more shards between the first read and this one: read them all again.
    if (!grownSince(items, budgets)) return { budgets: budgetsFrom(items), atomic: true };
    await completeShards(items);
    budgets = budgetsFrom(items);
  }
}

/** Whether shard 0 of a budget, as now in `items`, counts more shards than were read. */
function grownSince(items: ReadonlyMap<string, Item>, budgets: Budgets): boolean {
  return shardedOf(budgets).some((b) => {
    const main = items.get(shardKey(b.ref.scope, b.ref.unit, 0).pk);
    return main !== undefined && shardCountOf(main) > shardCount(b);
  });
}

const ATOMIC_READ_RETRIES = 4;

/**
 * The shards of these budgets at one instant (TransactGetItems is serializable with
 * transactions; a BatchGetItem across shards is not): what a refusal must be proven on.
 * Items by pk, merged into `items`.
 */
async function readShardsAtomically(items: Map<string, Item>, budgets: Budgets): Promise<void> {
  const wanted = shardedOf(budgets).flatMap((b) =>
    Array.from({ length: shardCount(b) }, (_, k) => shardKey(b.ref.scope, b.ref.unit, k)),
  );
  for (let i = 0; i < wanted.length; i += 100) {
    const batch = wanted.slice(i, i + 100);
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await documentClient.send(
          new TransactGetCommand({
            TransactItems: batch.map((Key) => ({ Get: { TableName: tableName(), Key } })),
          }),
        );
        for (const r of out.Responses ?? []) if (r.Item) items.set(String(r.Item.pk), r.Item);
        break;
      } catch (error) {
        // A write transaction holds one of the shards: nothing was read, look again shortly.
        if (!(error instanceof TransactionCanceledException)) throw error;
        if (attempt >= ATOMIC_READ_RETRIES) throw new RetryLaterError('CONTENTION', 100);
        await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
      }
    }
  }
}

/** The budgets of the given scopes in one unit, by budgetKey; absent scopes have none. */
export const getBudgets = async (
  scopes: readonly string[],
  unit: Unit,
  atomic = false,
): Promise<{ readonly budgets: Budgets; readonly atomic: boolean }> =>
  budgetsOf(await getItems(ledgerKeys(scopes, unit)), atomic);

/**
 * The budgets of these (scope, unit) pairs that exist, with their records, in the order given.
 * `atomic`: the shards of a sharded budget read at one instant (TransactGetItems), never half of
 * a transaction.
 */
export async function getBudgetRecords(
  refs: readonly BudgetRef[],
  atomic = false,
): Promise<BudgetRecord[]> {
  const items = await getItems(budgetKeys(refs));
  const { budgets } = await budgetsOf(items, atomic);
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
