import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import {
  type Budget,
  type BudgetRecord,
  type BudgetStatus,
  type Budgets,
  budgetKey,
  NO_BUDGETS,
  shardCount,
} from '../domain/budget.js';
import type { BudgetCaps } from '../domain/caps.js';
import { invalidCursor } from '../domain/cursor.js';
import type { LedgerChange, LedgerField } from '../domain/ledger.js';
import { closedPeriodCounters } from '../domain/period.js';
import type { Segment, SegmentKind } from '../domain/scopes.js';
import { segmentText } from '../domain/scopes.js';
import { auditPut } from './audit.js';
import { documentClient, tableName } from './client.js';
import { type IdempotencyScope, idempotencyPut, type StoredOutcome } from './idempotency.js';
import {
  budgetCapsAttributes,
  budgetOfItem,
  ledgerPeriodAttributes,
  ledgerPeriodOf,
  thresholdsAttribute,
} from './items.js';
import { isLedgerIndexPosition, keys, ledgerIndexPartition } from './keys.js';
import { queryPage } from './pages.js';
import { budgetKeys, budgetsOf, newShardItems, placeChanges, shardCountIs } from './shards.js';
import { type ShardedBudgets, tenantWithDimensions } from './tenants.js';
import {
  getItems,
  ledgerDeltaUpdate,
  openBudget,
  putIfAbsent,
  type TransactItem,
  transact,
} from './transact.js';
import { type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

const FIELD: Record<LedgerField, string> = {
  allocated: 'allocated',
  spent: 'spent',
  reserved: 'reserved',
  debt: 'debt',
  overdraftLimit: 'overdraft_limit',
  remaining: 'remaining',
};

/** The conditional Update that applies one LedgerChange inside a transaction. */
export function ledgerUpdate(change: LedgerChange): TransactItem {
  const { guard } = change;
  const update = ledgerDeltaUpdate(change.delta);
  const { names, values } = update;
  const conditions = ['attribute_exists(#pk)'];
  switch (guard.kind) {
    case 'exists':
      break;
    case 'admit':
      // SPEC core behaviour 2 and blocking rules 1-2: is_over_limit implies debt > 0.
      names['#remaining'] = 'remaining';
      names['#debt'] = 'debt';
      values[':g_amount'] = guard.amount;
      values[':g_zero'] = 0;
      conditions.push('#remaining >= :g_amount', '#debt = :g_zero', openBudget(names, values));
      break;
    case 'covers':
      names['#remaining'] = 'remaining';
      values[':g_amount'] = guard.amount;
      conditions.push('#remaining >= :g_amount');
      break;
    case 'maxAllocated':
      names['#allocated'] = 'allocated';
      values[':g_max'] = guard.atMost;
      conditions.push('#allocated <= :g_max');
      break;
    case 'snapshot':
      for (const [field, value] of Object.entries(guard.values)) {
        const attribute = FIELD[field as LedgerField];
        names[`#${attribute}`] = attribute;
        values[`:s_${attribute}`] = value;
        conditions.push(`#${attribute} = :s_${attribute}`);
      }
      break;
  }
  if (guard.kind === 'snapshot' || guard.kind === 'maxAllocated') {
    // Decided on the budget as one item: not once it has shards (PATCH `shards` since the
    // read), where the change must go by the exact path that keeps the gate (domain/escrow.ts).
    conditions.push(shardCountIs(names, values, 1));
  }
  const { period } = change;
  if (period && !period.closed) {
    // Decided in this period: it must not land in the next one, should the budget roll over.
    names['#pstart'] = 'period_start';
    values[':pstart'] = period.start;
    conditions.push('#pstart = :pstart');
  }
  return {
    Update: {
      TableName: tableName(),
      Key: period?.closed
        ? keys.ledgerPeriod(change.scope, change.unit, period.start)
        : keys.ledger(change.scope, change.unit),
      UpdateExpression: update.expression,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** The keys to read for the ledgers of these scopes (with the shards known of). */
export const ledgerKeys = (scopes: readonly string[], unit: Unit) =>
  budgetKeys(scopes.map((scope) => ({ scope, unit })));

/** The budgets of the given scopes in one unit, by budgetKey; absent scopes have none. */
export const getBudgets = async (
  scopes: readonly string[],
  unit: Unit,
  atomic = false,
): Promise<{ readonly budgets: Budgets; readonly atomic: boolean }> =>
  budgetsOf(await getItems(ledgerKeys(scopes, unit)), atomic);

export interface NewLedger {
  readonly tenant: string;
  readonly segments: readonly Segment[];
  /** Sharded: its layout holds the shards it starts with (shard 0 is the ledger item). */
  readonly budget: Budget;
  readonly createdAt: string;
  readonly audit: AuditEntry;
  /** A sharded budget: the tenant's sharded budgets as read, which it joins. */
  readonly shardedBudgets?: ShardedBudgets | undefined;
}

/**
 * The ledger and one index entry per path segment, conditioned on the tenant existing (the
 * admin key may name any tenant), with its audit record: segments + 3 items, all or nothing.
 */
export function newLedgerTransaction(n: NewLedger): TransactItem[] {
  const { budget } = n;
  const { scope, unit } = budget.ref;
  const texts = n.segments.map(segmentText);
  const level: SegmentKind = n.segments[n.segments.length - 1]?.kind ?? 'tenant';
  const shards = budget.layout.kind === 'sharded' ? budget.layout.shards : undefined;
  // Sharded: shard 0 is the ledger item, with the count, the gate and its part of the budget.
  const first = shards?.[0] ?? budget.counters;
  return [
    putIfAbsent({
      ...keys.ledger(scope, unit),
      type: 'ledger',
      tenant: n.tenant,
      scope,
      unit,
      allocated: first.allocated,
      spent: first.spent,
      reserved: first.reserved,
      debt: first.debt,
      overdraft_limit: budget.overdraftLimit,
      remaining: first.remaining,
      created_at: n.createdAt,
      ...(shards && { shards: shards.length, gated: shards[0]?.gated ?? false }),
      // On the item every reservation reads anyway: caps cost no read of their own.
      ...(budget.caps && budgetCapsAttributes(budget.caps)),
      ...(budget.period && ledgerPeriodAttributes(budget.period)),
      ...(budget.thresholds && { thresholds: thresholdsAttribute(budget.thresholds) }),
    }),
    ...texts.map((segment) =>
      putIfAbsent({
        ...keys.ledgerIndex(n.tenant, segment, scope, unit),
        type: 'ledger-index',
        scope,
        unit,
        level,
        segments: new Set(texts),
      }),
    ),
    tenantWithDimensions(
      n.tenant,
      n.segments.filter((x) => x.kind === 'dimensions').map((x) => x.value.split('=')[0] ?? ''),
      shards && n.shardedBudgets
        ? { read: n.shardedBudgets, scope, unit, shards: shards.length }
        : undefined,
    ),
    auditPut(n.audit),
    ...(shards ? newShardItems(budget.ref, shards).map(putIfAbsent) : []),
  ];
}

/** `stale`: another sharded budget of the tenant was created since its map was read. */
export async function insertLedger(
  n: NewLedger,
): Promise<'inserted' | 'duplicate' | 'noTenant' | 'stale'> {
  const outcome = await transact(newLedgerTransaction(n));
  if (outcome.kind === 'committed') return 'inserted';
  const tenant = outcome.reasons[n.segments.length + 1];
  if (tenant?.code !== 'ConditionalCheckFailed') return 'duplicate';
  return tenant.item?.type === 'tenant' ? 'stale' : 'noTenant';
}

export interface LedgerIndexQuery {
  readonly tenant: string;
  /** The segment whose index partition is read. */
  readonly segment: string;
  /** Further segments every result must contain. */
  readonly alsoContains: readonly string[];
  /** Only ledgers whose last segment is of this kind (include_children=false). */
  readonly level?: SegmentKind | undefined;
  /** Only ledgers whose scope starts with this (the operator's budget listing). */
  readonly scopePrefix?: string | undefined;
  readonly unit?: Unit | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
}

export interface LedgerIndexPage {
  readonly entries: readonly {
    readonly position: string;
    readonly scope: string;
    readonly unit: Unit;
  }[];
  readonly hasMore: boolean;
}

/** Up to limit+1 matching index entries after `after`, in path order (strongly consistent). */
export async function queryLedgerIndex(q: LedgerIndexQuery): Promise<LedgerIndexPage> {
  if (q.after !== undefined && !isLedgerIndexPosition(q.after)) throw invalidCursor();
  const names: Record<string, string> = { '#pk': 'pk' };
  const values: Record<string, unknown> = { ':pk': ledgerIndexPartition(q.tenant, q.segment) };
  const filters: string[] = [];
  q.alsoContains.forEach((segment, i) => {
    names['#segments'] = 'segments';
    values[`:seg${i}`] = segment;
    filters.push(`contains(#segments, :seg${i})`);
  });
  if (q.level) {
    names['#level'] = 'level';
    values[':level'] = q.level;
    filters.push('#level = :level');
  }
  if (q.scopePrefix) {
    names['#scope'] = 'scope';
    values[':prefix'] = q.scopePrefix;
    filters.push('begins_with(#scope, :prefix)');
  }
  if (q.unit) {
    names['#unit'] = 'unit';
    values[':unit'] = q.unit;
    filters.push('#unit = :unit');
  }
  const entries: { position: string; scope: string; unit: Unit }[] = [];
  let startKey: Record<string, unknown> | undefined = q.after
    ? { pk: values[':pk'], sk: q.after }
    : undefined;
  do {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: '#pk = :pk',
        ...(filters.length > 0 && { FilterExpression: filters.join(' AND ') }),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ExclusiveStartKey: startKey,
        ConsistentRead: true,
        Limit: Math.min(1_000, q.limit + 1),
      }),
    );
    for (const item of page.Items ?? []) {
      entries.push({
        position: String(item.sk),
        scope: String(item.scope),
        unit: item.unit as Unit,
      });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey && entries.length <= q.limit);
  return { entries: entries.slice(0, q.limit), hasMore: entries.length > q.limit || false };
}

/**
 * One funding change (on a sharded budget: every shard, laid out afresh), its idempotency
 * record and its audit record, in one transaction.
 */
export function fundingTransaction(
  change: LedgerChange,
  idempotency: { scope: IdempotencyScope; outcome: StoredOutcome },
  audit: AuditEntry,
  budgets: Budgets = NO_BUDGETS,
): GuardedTransaction {
  const placed = placeChanges([change], budgets, 0, ledgerUpdate);
  return {
    items: [
      ...placed.items,
      idempotencyPut(idempotency.scope, idempotency.outcome, audit.atMs),
      auditPut(audit),
    ],
    layout: { recordAt: placed.items.length, proofs: placed.proofs },
  };
}

export function applyFunding(
  change: LedgerChange,
  idempotency: { scope: IdempotencyScope; outcome: StoredOutcome },
  audit: AuditEntry,
  budgets: Budgets = NO_BUDGETS,
): Promise<WriteOutcome> {
  return transactWrite(fundingTransaction(change, idempotency, audit, budgets), 'settle');
}

/** The units in which `scope` has a ledger (used only to explain a refusal). */
export async function unitsOfScope(tenant: string, scope: string): Promise<Unit[]> {
  const lastSegment = scope.slice(scope.lastIndexOf('/') + 1);
  const page = await documentClient.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
      ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
      ExpressionAttributeValues: {
        ':pk': ledgerIndexPartition(tenant, lastSegment),
        ':prefix': `${scope}#`,
      },
      ConsistentRead: true,
    }),
  );
  return (page.Items ?? []).filter((i) => i.scope === scope).map((i) => i.unit as Unit);
}

/**
 * The budgets of these (scope, unit) pairs that exist, with their records, in the order given.
 * `atomic`: the shards of a sharded budget read at one instant (TransactGetItems), never half of
 * a transaction.
 */
export async function getBudgetRecords(
  entries: readonly { scope: string; unit: Unit }[],
  atomic = false,
): Promise<BudgetRecord[]> {
  const items = await getItems(budgetKeys(entries));
  const { budgets } = await budgetsOf(items, atomic);
  return entries.flatMap((ref) => {
    const main = items.get(keys.ledger(ref.scope, ref.unit).pk);
    const budget = budgets.get(budgetKey(ref));
    if (main?.type !== 'ledger' || !budget) return [];
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

/** What an operator may change on a budget (its counters change only by funding). */
export interface BudgetSettings {
  readonly overdraftLimit: number;
  /** Undefined: the budget has no caps. */
  readonly caps?: BudgetCaps | undefined;
  /** Undefined: the default thresholds (nothing stored). */
  readonly thresholds?: readonly number[] | undefined;
}

/**
 * New overdraft limit and caps on the budget's ledger item (shard 0 holds both), if they are
 * still what was read, with the audit record; 'stale' otherwise.
 */
export async function updateBudgetSettings(
  before: Budget,
  after: BudgetSettings,
  at: string,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ref;
  const capsAttributes = after.caps ? budgetCapsAttributes(after.caps) : {};
  const sets = ['#limit = :limit', '#updated = :at'];
  const removes: string[] = [];
  if (after.caps) sets.push('#caps = :caps');
  else removes.push('#caps');
  if (capsAttributes.caps_bps !== undefined) sets.push('#bps = :bps');
  else removes.push('#bps');
  if (after.thresholds) sets.push('#thr = :thr');
  else removes.push('#thr');
  const outcome = await transact([
    {
      Update: {
        TableName: tableName(),
        Key: keys.ledger(scope, unit),
        UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        ConditionExpression:
          '#limit = :was AND ' +
          (before.caps ? '#caps = :wasCaps' : 'attribute_not_exists(#caps)') +
          ' AND ' +
          (before.thresholds ? '#thr = :wasThr' : 'attribute_not_exists(#thr)') +
          ' AND (attribute_not_exists(#status) OR #status <> :closed)',
        ExpressionAttributeNames: {
          '#limit': 'overdraft_limit',
          '#updated': 'updated_at',
          '#caps': 'caps',
          '#bps': 'caps_bps',
          '#thr': 'thresholds',
          '#status': 'status',
        },
        ExpressionAttributeValues: {
          ':limit': after.overdraftLimit,
          ':at': at,
          ':was': before.overdraftLimit,
          ':closed': 'CLOSED',
          ...(after.caps && { ':caps': capsAttributes.caps }),
          ...(capsAttributes.caps_bps !== undefined && { ':bps': capsAttributes.caps_bps }),
          ...(before.caps && { ':wasCaps': budgetCapsAttributes(before.caps).caps }),
          ...(after.thresholds && { ':thr': thresholdsAttribute(after.thresholds) }),
          ...(before.thresholds && { ':wasThr': thresholdsAttribute(before.thresholds) }),
        },
      },
    },
    auditPut(audit),
  ]);
  return outcome.kind === 'committed' ? 'updated' : 'stale';
}

/**
 * A budget's status on every item of it (a hold may land on any shard), from the status read,
 * with the audit record; 'stale' when another change came first.
 */
export async function setBudgetStatus(
  before: Budget,
  to: BudgetStatus,
  at: string,
  audit: AuditEntry | undefined,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ref;
  const from = before.status;
  const itemKeys = Array.from({ length: shardCount(before) }, (_, k) =>
    k === 0 ? keys.ledger(scope, unit) : keys.ledgerShard(scope, unit, k),
  );
  const outcome = await transact([
    ...itemKeys.map((Key, k): TransactItem => {
      const names: Record<string, string> = {
        '#pk': 'pk',
        '#status': 'status',
        '#updated': 'updated_at',
      };
      const values: Record<string, unknown> = { ':to': to, ':from': from, ':at': at };
      const conditions = [
        'attribute_exists(#pk)',
        from === 'ACTIVE'
          ? '(attribute_not_exists(#status) OR #status = :from)'
          : '#status = :from',
      ];
      // Every shard as counted when read: a budget given more shards since reads again.
      if (k === 0) conditions.push(shardCountIs(names, values, shardCount(before)));
      return {
        Update: {
          TableName: tableName(),
          Key,
          UpdateExpression: 'SET #status = :to, #updated = :at',
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      };
    }),
    ...(audit ? [auditPut(audit)] : []),
  ]);
  return outcome.kind === 'committed' ? 'updated' : 'stale';
}

/**
 * A rolling budget enters its next period (domain/period.ts `rolledOver`), exactly once: the
 * ledger as read becomes the closed period's own ledger (with its holds, which settle there; its
 * debt moves on), and the ledger item becomes `after`. Conditioned on the ledger still being what
 * was read: of concurrent requests that see the boundary, one rolls over, the others fail and
 * read again ('stale').
 */
export async function rollOverLedger(
  tenant: string,
  before: Budget,
  after: Budget,
): Promise<'rolled' | 'stale'> {
  const { scope, unit } = before.ref;
  const { period } = before;
  if (!period || !after.period) throw new Error(`${scope} does not roll over`);
  const was = before.counters;
  const closed = closedPeriodCounters(was);
  const outcome = await transact([
    putIfAbsent({
      ...keys.ledgerPeriod(scope, unit, period.start),
      type: 'ledger-period',
      tenant,
      scope,
      unit,
      allocated: closed.allocated,
      spent: closed.spent,
      reserved: closed.reserved,
      debt: closed.debt,
      overdraft_limit: before.overdraftLimit,
      remaining: closed.remaining,
      carried_debt: was.debt,
      ...ledgerPeriodAttributes(period),
    }),
    {
      Update: {
        TableName: tableName(),
        Key: keys.ledger(scope, unit),
        UpdateExpression:
          'SET #allocated = :allocated, #spent = :spent, #reserved = :reserved, #remaining = :remaining, #pstart = :next, #pend = :nextEnd',
        ConditionExpression:
          '#pstart = :start AND #allocated = :was_allocated AND #spent = :was_spent AND #reserved = :was_reserved AND #debt = :was_debt',
        ExpressionAttributeNames: {
          '#allocated': 'allocated',
          '#spent': 'spent',
          '#reserved': 'reserved',
          '#debt': 'debt',
          '#remaining': 'remaining',
          '#pstart': 'period_start',
          '#pend': 'period_end',
        },
        ExpressionAttributeValues: {
          ':allocated': after.counters.allocated,
          ':spent': after.counters.spent,
          ':reserved': after.counters.reserved,
          ':remaining': after.counters.remaining,
          ':next': after.period.start,
          ':nextEnd': after.period.end,
          ':start': period.start,
          ':was_allocated': was.allocated,
          ':was_spent': was.spent,
          ':was_reserved': was.reserved,
          ':was_debt': was.debt,
        },
      },
    },
  ]);
  return outcome.kind === 'committed' ? 'rolled' : 'stale';
}

/** The budgets of closed periods (`period.closed`), by budgetKey: where holds taken in them settle. */
export async function getClosedPeriodBudgets(
  wanted: readonly { readonly scope: string; readonly unit: Unit; readonly start: number }[],
): Promise<Map<string, Budget>> {
  const items = await getItems(wanted.map((w) => keys.ledgerPeriod(w.scope, w.unit, w.start)));
  const budgets = new Map<string, Budget>();
  for (const item of items.values()) {
    if (!ledgerPeriodOf(item)) continue;
    const budget = budgetOfItem(item);
    budgets.set(budgetKey(budget.ref), budget);
  }
  return budgets;
}

/** A rolling budget's closed periods, newest first, with their ledgers. */
export async function queryClosedPeriods(q: {
  readonly scope: string;
  readonly unit: Unit;
  readonly after?: string | undefined;
  readonly limit: number;
}) {
  const { pk } = keys.ledgerPeriod(q.scope, q.unit, 0);
  const page = await queryPage({
    partitionKey: 'pk',
    partition: pk,
    sortKey: 'sk',
    lowest: '',
    highest: '~',
    newestFirst: true,
    after: q.after,
    limit: q.limit,
  });
  return {
    periods: page.items.flatMap((item) => (ledgerPeriodOf(item) ? [budgetOfItem(item)] : [])),
    nextPosition: page.nextPosition,
  };
}
