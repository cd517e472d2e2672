import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import {
  type Budget,
  type BudgetRef,
  type Budgets,
  balanceOf,
  budgetAt,
  budgetKey,
  shardCount,
} from '../domain/budget.js';
import { RetryLaterError } from '../domain/errors.js';
import { respread, routeChange, type Shard, type ShardMove, sumShards } from '../domain/escrow.js';
import { applyDelta, type LedgerChange } from '../domain/ledger.js';
import { auditPut } from './audit.js';
import { documentClient, tableName } from './client.js';
import { budgetOfItem, countersOf, isLedgerItem } from './items.js';
import { hashOf, keys } from './keys.js';
import { type ShardedBudgets, tenantWithDimensions } from './tenants.js';
import {
  getItems,
  type Item,
  type Key,
  ledgerDeltaUpdate,
  openBudget,
  putIfAbsent,
  type TransactItem,
  transact,
} from './transact.js';

// Escrow shards in the table (domain/escrow.ts, docs/scaling.md). Shard 0 of a budget is its
// ledger item `LEDGER#<scope>#<unit>`, which also carries `shards` (the count) and the
// overdraft limit; shard k ≥ 1 is `LEDGER#<scope>#<unit>#<k>`, a partition of its own. An
// unsharded budget is the ledger item alone, exactly as before shards existed.

export const shardKey = (scope: string, unit: Unit, k: number): Key =>
  k === 0 ? keys.ledger(scope, unit) : keys.ledgerShard(scope, unit, k);

/**
 * A budget's shard count only grows (PATCH `shards`), so the process may remember it: a count
 * remembered too low only means the first read misses the newer shards, which
 * `completeShards` then reads.
 */
const shardCounts = new Map<string, number>();
const countKey = (scope: string, unit: Unit) => budgetKey({ scope, unit });

/** The keys to read for these budgets: each ledger item, and the shards already known of. */
export function budgetKeys(entries: readonly { scope: string; unit: Unit }[]): Key[] {
  return entries.flatMap(({ scope, unit }) => {
    const n = shardCounts.get(countKey(scope, unit)) ?? 1;
    return Array.from({ length: n }, (_, k) => shardKey(scope, unit, k));
  });
}

const shardCountOf = (item: Item): number => Number(item.shards ?? 1);

const shardOf = (item: Item): Shard => ({ ...countersOf(item), gated: item.gated === true });

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
    const unit = item.unit as Unit;
    shardCounts.set(countKey(String(item.scope), unit), n);
    for (let k = 1; k < n; k++) {
      const key = shardKey(String(item.scope), unit, k);
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
  [...budgets.values()].flatMap((b) => (b.layout.kind === 'sharded' ? [b] : []));

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

/** The items of a change placed on a budget, and which of them prove the ledger's state. */
export interface PlacedChanges {
  readonly items: TransactItem[];
  /** Per item: the index of the change whose failed condition proves a refusal, if any. */
  readonly proofs: (number | undefined)[];
  /** Per change: the shard it landed on (0 for an unsharded budget). */
  readonly shards: number[];
}

/**
 * Each change as the items that apply it. An unsharded budget: its ledger item, with the
 * change's own guard (a failed condition there proves the refusal). A sharded one, routed by
 * `routeChange`: one shard under its own condition (fast), or every shard rewritten by
 * `respread` under the condition that none moved since it was read (exact). A failed shard
 * condition proves nothing about the budget: the operation reads again.
 */
export function placeChanges(
  changes: readonly LedgerChange[],
  budgets: Budgets,
  seed: number,
  ledgerUpdate: (change: LedgerChange) => TransactItem,
): PlacedChanges {
  const placed: PlacedChanges = { items: [], proofs: [], shards: [] };
  changes.forEach((change, i) => {
    const budget = budgetAt(budgets, change.scope, change.unit);
    const layout = budget?.layout.kind === 'sharded' ? budget.layout : undefined;
    if (!budget || !layout) {
      // Unsharded, or a settlement pinned to its shard (the sweeper reads no ledgers).
      if (change.shard && change.guard.kind === 'exists') {
        placed.items.push(shardUpdate(change, change.shard, undefined));
        placed.proofs.push(undefined);
      } else {
        placed.items.push(ledgerUpdate(change));
        placed.proofs.push(i);
      }
      placed.shards.push(change.shard ?? 0);
      return;
    }
    const route = routeChange(change, layout.shards, change.shard, seed);
    if (route.path === 'fast') {
      placed.items.push(shardUpdate(change, route.shard, route.covers));
      placed.proofs.push(undefined);
      placed.shards.push(route.shard);
      return;
    }
    const pin = change.shard ?? seed % layout.shards.length;
    const after = respread(layout.shards, applyDelta(balanceOf(budget), change.delta), {
      shard: pin,
      delta: change.delta,
    });
    after.forEach((shard, k) => {
      placed.items.push(
        shardRewrite(change, k, layout.shards[k] as Shard, shard, layout.shards.length),
      );
      placed.proofs.push(undefined);
    });
    placed.shards.push(pin);
  });
  return placed;
}

/** The fast path: the change's delta on one shard, which must cover `covers` when given. */
function shardUpdate(change: LedgerChange, k: number, covers: number | undefined): TransactItem {
  const update = ledgerDeltaUpdate(change.delta);
  const { names, values } = update;
  let condition = 'attribute_exists(#pk)';
  if (covers !== undefined) {
    names['#remaining'] = 'remaining';
    names['#gated'] = 'gated';
    values[':covers'] = covers;
    values[':false'] = false;
    condition += ' AND #remaining >= :covers AND #gated = :false';
  }
  if (change.guard.kind === 'admit') condition += ` AND ${openBudget(names, values)}`;
  return {
    Update: {
      TableName: tableName(),
      Key: shardKey(change.scope, change.unit, k),
      UpdateExpression: update.expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

const SHARD_FIELDS = ['allocated', 'spent', 'reserved', 'debt', 'remaining', 'gated'] as const;

/**
 * The condition, on shard 0 (naming `#shards`, and `:shards` when n > 1, itself), that a budget still
 * has the n shards it was read with: a write to every shard must not miss one added since.
 */
export function shardCountIs(
  names: Record<string, string>,
  values: Record<string, unknown>,
  n: number,
): string {
  names['#shards'] = 'shards';
  if (n === 1) return 'attribute_not_exists(#shards)';
  values[':shards'] = n;
  return '#shards = :shards';
}

/** The exact path, one shard: its new counters, if it still holds what was read. */
function shardRewrite(
  change: LedgerChange,
  k: number,
  before: Shard,
  after: Shard,
  count: number,
): TransactItem {
  const names: Record<string, string> = { '#pk': 'pk' };
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const conditions = ['attribute_exists(#pk)'];
  if (k === 0) {
    // Laid out over the shards read: not once more shards were added (PATCH `shards`).
    conditions.push(shardCountIs(names, values, count));
  }
  for (const field of SHARD_FIELDS) {
    names[`#${field}`] = field;
    values[`:was_${field}`] = before[field];
    values[`:now_${field}`] = after[field];
    conditions.push(`#${field} = :was_${field}`);
    sets.push(`#${field} = :now_${field}`);
  }
  if (change.guard.kind === 'admit') conditions.push(openBudget(names, values));
  return {
    Update: {
      TableName: tableName(),
      Key: shardKey(change.scope, change.unit, k),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** The shard items of a new budget split n ways (shard 0 is its ledger item). */
export function newShardItems(ref: BudgetRef, shards: readonly Shard[]): Item[] {
  return shards.slice(1).map((s, i) => ({
    ...shardKey(ref.scope, ref.unit, i + 1),
    type: 'ledger-shard',
    scope: ref.scope,
    unit: ref.unit,
    shard: i + 1,
    ...s,
  }));
}

/**
 * The seed a hold's shard is picked from (domain/escrow.ts pickShard): stable for an id, so a
 * request placed again after a stale read tries the same shard first; another one for each
 * retry after a conflict, so that retry goes to a shard that is likely not busy.
 */
export const seedOf = (id: string, attempt = 0): number =>
  hashOf(attempt === 0 ? id : `${id}~${attempt}`);

/** A budget given more shards (PATCH `shards`): the new ones empty, the count raised. */
export interface ShardGrowth {
  readonly tenant: string;
  readonly scope: string;
  readonly unit: Unit;
  readonly from: number;
  readonly to: number;
  /** As read: shard 0's gate (sharded), or the gate its counters call for (unsharded). */
  readonly gated: boolean;
  /** As read: new shards take it, so a frozen budget stays frozen on every shard. */
  readonly status: 'ACTIVE' | 'FROZEN';
  readonly at: string;
  /** The tenant's map of sharded budgets as read, which the budget joins with its new count. */
  readonly sharded: ShardedBudgets;
  readonly audit: AuditEntry;
}

/**
 * The count on shard 0 raised and the new shards put, empty (the budget's sum is unchanged,
 * and invariant E holds: 0 ≥ 0), under the condition that count, gate and status are still as
 * read. Readers that still know the old count see the same budget: the new shards hold nothing.
 */
export function shardGrowthTransaction(g: ShardGrowth): TransactItem[] {
  const names: Record<string, string> = {
    '#pk': 'pk',
    '#gated': 'gated',
    '#status': 'status',
    '#period': 'period_kind',
    '#updated': 'updated_at',
  };
  const values: Record<string, unknown> = { ':to': g.to, ':gated': g.gated, ':at': g.at };
  const conditions = [
    'attribute_exists(#pk)',
    'attribute_not_exists(#period)',
    shardCountIs(names, values, g.from),
  ];
  if (g.from === 1) {
    // Unsharded, the ledger item has no gate yet: the one it gets must be what its counters say.
    Object.assign(names, { '#debt': 'debt', '#remaining': 'remaining' });
    values[':zero'] = 0;
    conditions.push(
      g.gated ? '(#debt > :zero OR #remaining < :zero)' : '#debt = :zero AND #remaining >= :zero',
    );
  } else {
    conditions.push('#gated = :gated');
  }
  values[':status'] = g.status;
  conditions.push(
    g.status === 'ACTIVE'
      ? '(attribute_not_exists(#status) OR #status = :status)'
      : '#status = :status',
  );
  const empty: Shard = {
    allocated: 0,
    spent: 0,
    reserved: 0,
    debt: 0,
    remaining: 0,
    gated: g.gated,
  };
  return [
    {
      Update: {
        TableName: tableName(),
        Key: shardKey(g.scope, g.unit, 0),
        UpdateExpression: 'SET #shards = :to, #gated = :gated, #updated = :at',
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
    ...Array.from({ length: g.to - g.from }, (_, i) =>
      putIfAbsent({
        ...shardKey(g.scope, g.unit, g.from + i),
        type: 'ledger-shard',
        scope: g.scope,
        unit: g.unit,
        shard: g.from + i,
        ...empty,
        ...(g.status === 'FROZEN' && { status: 'FROZEN' }),
      }),
    ),
    tenantWithDimensions(g.tenant, [], {
      read: g.sharded,
      scope: g.scope,
      unit: g.unit,
      shards: g.to,
    }),
    auditPut(g.audit),
  ];
}

/** `stale`: the budget's count, gate or status moved since it was read; nothing was written. */
export async function growShards(g: ShardGrowth): Promise<'grown' | 'stale'> {
  const outcome = await transact(shardGrowthTransaction(g), 'settle');
  return outcome.kind === 'committed' ? 'grown' : 'stale';
}

/**
 * Moves of remaining (with its allocation) out of one shard of a healthy budget into others, in
 * one transaction: the donor must cover them all, and no shard may be gated or in debt (each
 * checks itself alone). The receivers are the cold new shards of a growth, so the transaction
 * meets what a hold on the donor meets. false when a condition failed (nothing was written).
 */
export async function moveFromShard(scope: string, unit: Unit, moves: readonly ShardMove[]) {
  const from = moves[0]?.from;
  if (from === undefined) return true;
  const side = (k: number, d: number, covers: boolean): TransactItem => ({
    Update: {
      TableName: tableName(),
      Key: shardKey(scope, unit, k),
      UpdateExpression: 'SET #allocated = #allocated + :d, #remaining = #remaining + :d',
      ConditionExpression: `attribute_exists(#pk) AND #gated = :false AND #debt = :zero${covers ? ' AND #remaining >= :covers' : ''}`,
      ExpressionAttributeNames: {
        '#pk': 'pk',
        '#allocated': 'allocated',
        '#remaining': 'remaining',
        '#gated': 'gated',
        '#debt': 'debt',
      },
      ExpressionAttributeValues: {
        ':d': d,
        ':false': false,
        ':zero': 0,
        ...(covers && { ':covers': -d }),
      },
    },
  });
  const total = moves.reduce((sum, m) => sum + m.amount, 0);
  const outcome = await transact(
    [side(from, -total, true), ...moves.map((m) => side(m.to, m.amount, false))],
    'admit',
  );
  return outcome.kind === 'committed';
}
