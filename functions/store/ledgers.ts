import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import { budgetKey } from '../domain/budget.js';
import type { BudgetCaps } from '../domain/caps.js';
import { invalidCursor } from '../domain/cursor.js';
import { emptyShards, respread } from '../domain/escrow.js';
import type { BudgetStatus, Ledger, LedgerChange, LedgerField } from '../domain/ledger.js';
import { closedPeriodLedger, type LedgerPeriod, rolledOver } from '../domain/period.js';
import type { Segment, SegmentKind } from '../domain/scopes.js';
import { segmentText } from '../domain/scopes.js';
import { auditPut } from './audit.js';
import { documentClient, tableName } from './client.js';
import { type IdempotencyScope, idempotencyPut, type StoredOutcome } from './idempotency.js';
import {
  budgetCapsAttributes,
  budgetCapsOf,
  ledgerOf,
  ledgerPeriodAttributes,
  ledgerPeriodOf,
  thresholdsAttribute,
  thresholdsOf,
} from './items.js';
import { isLedgerIndexPosition, keys, ledgerIndexPartition } from './keys.js';
import { queryPage } from './pages.js';
import {
  budgetKeys,
  budgetsFrom,
  budgetsOf,
  completeShards,
  type Layouts,
  NO_LAYOUTS,
  newShardItems,
  placeChanges,
  shardCountIs,
} from './shards.js';
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

/** Ledgers by scope (sharded budgets merged), the layouts of the sharded ones, their caps. */
export interface LedgerRead {
  readonly ledgers: ReadonlyMap<string, Ledger>;
  readonly layouts: Layouts;
  /** The caps of those budgets that carry any (domain/caps.ts), by scope. */
  readonly caps: ReadonlyMap<string, BudgetCaps>;
  /** The current periods of those budgets that roll over (domain/period.ts), by scope. */
  readonly periods: ReadonlyMap<string, LedgerPeriod>;
  /** Whether the ledgers are one instant's (see SnapshotRequest.atomic). */
  readonly atomic: boolean;
}

/** The ledgers of the given scopes in one unit, by scope; absent scopes have no ledger. */
export async function getLedgers(
  scopes: readonly string[],
  unit: Unit,
  atomic = false,
): Promise<LedgerRead> {
  return budgetsOf(await getItems(ledgerKeys(scopes, unit)), atomic);
}

export interface NewLedger {
  readonly tenant: string;
  readonly segments: readonly Segment[];
  readonly ledger: Ledger;
  readonly createdAt: string;
  readonly audit: AuditEntry;
  /** Escrow shards to split the budget into (1: unsharded). */
  readonly shards?: number | undefined;
  readonly caps?: BudgetCaps | undefined;
  /** A rolling budget's first period (domain/period.ts). */
  readonly period?: LedgerPeriod | undefined;
  /** Budget event thresholds in percent (domain/budget-events.ts); absent: the default. */
  readonly thresholds?: readonly number[] | undefined;
  /** A sharded budget: the tenant's sharded budgets as read, which it joins. */
  readonly shardedBudgets?: ShardedBudgets | undefined;
}

/**
 * The ledger and one index entry per path segment, conditioned on the tenant existing (the
 * admin key may name any tenant), with its audit record: segments + 3 items, all or nothing.
 */
export function newLedgerTransaction(n: NewLedger): TransactItem[] {
  const { ledger } = n;
  const texts = n.segments.map(segmentText);
  const level: SegmentKind = n.segments[n.segments.length - 1]?.kind ?? 'tenant';
  const count = n.shards ?? 1;
  // Sharded: shard 0 is the ledger item, with the count, the gate and its part of the budget.
  const shards = count > 1 ? respread(emptyShards(count), ledger) : undefined;
  const first = shards?.[0] ?? ledger;
  return [
    putIfAbsent({
      ...keys.ledger(ledger.scope, ledger.unit),
      type: 'ledger',
      tenant: n.tenant,
      scope: ledger.scope,
      unit: ledger.unit,
      allocated: first.allocated,
      spent: first.spent,
      reserved: first.reserved,
      debt: first.debt,
      overdraft_limit: ledger.overdraftLimit,
      remaining: first.remaining,
      created_at: n.createdAt,
      ...(shards && { shards: count, gated: shards[0]?.gated ?? false }),
      // On the item every reservation reads anyway: caps cost no read of their own.
      ...(n.caps && budgetCapsAttributes(n.caps)),
      ...(n.period && ledgerPeriodAttributes(n.period)),
      ...(n.thresholds && { thresholds: thresholdsAttribute(n.thresholds) }),
    }),
    ...texts.map((segment) =>
      putIfAbsent({
        ...keys.ledgerIndex(n.tenant, segment, ledger.scope, ledger.unit),
        type: 'ledger-index',
        scope: ledger.scope,
        unit: ledger.unit,
        level,
        segments: new Set(texts),
      }),
    ),
    tenantWithDimensions(
      n.tenant,
      n.segments.filter((x) => x.kind === 'dimensions').map((x) => x.value.split('=')[0] ?? ''),
      shards && n.shardedBudgets
        ? { read: n.shardedBudgets, scope: ledger.scope, unit: ledger.unit, shards: count }
        : undefined,
    ),
    auditPut(n.audit),
    ...(shards ? newShardItems(ledger, shards).map(putIfAbsent) : []),
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
  layouts: Layouts = NO_LAYOUTS,
): GuardedTransaction {
  const placed = placeChanges([change], layouts, 0, ledgerUpdate);
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
  layouts: Layouts = NO_LAYOUTS,
): Promise<WriteOutcome> {
  return transactWrite(fundingTransaction(change, idempotency, audit, layouts), 'settle');
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

/** Ledgers of any scopes and units by `scope#unit`, in one strongly consistent BatchGetItem. */
export async function getLedgerSet(
  entries: readonly { scope: string; unit: Unit }[],
  now: number,
): Promise<Map<string, Ledger>> {
  const items = await getItems(budgetKeys(entries));
  await completeShards(items);
  const result = new Map<string, Ledger>();
  // By unit: one scope may have ledgers in several units.
  for (const unit of new Set(entries.map((e) => e.unit))) {
    const ofUnit = new Map([...items].filter(([, item]) => item.unit === unit));
    const { ledgers, periods } = budgetsFrom(ofUnit);
    for (const ledger of ledgers.values()) {
      const period = periods.get(ledger.scope);
      // A rolling budget past its period reads as its next operation will find it.
      const current = period ? rolledOver(ledger, period, now).ledger : ledger;
      result.set(budgetKey(ledger), current);
    }
  }
  return result;
}

/** A budget as the operator sees it: the ledger (shards merged), its dates and its caps. */
export interface BudgetRecord {
  readonly tenant: string;
  readonly ledger: Ledger;
  readonly createdAt: string;
  readonly updatedAt?: string | undefined;
  readonly caps?: BudgetCaps | undefined;
  /** Escrow shards (1: unsharded): a status change writes every one. */
  readonly shards: number;
  /** Shard 0's gate (domain/escrow.ts): a growth gives its new shards the same. */
  readonly gated: boolean;
  /** A rolling budget's period, as stored (its ledger may be due to roll over). */
  readonly period?: LedgerPeriod | undefined;
  /** Budget event thresholds in percent; absent: the default (domain/budget-events.ts). */
  readonly thresholds?: readonly number[] | undefined;
}

/**
 * The budgets of these (scope, unit) pairs that exist, in the order given. `atomic`: the shards
 * of a sharded budget read at one instant (TransactGetItems), never half of a transaction.
 */
export async function getBudgetRecords(
  entries: readonly { scope: string; unit: Unit }[],
  atomic = false,
): Promise<BudgetRecord[]> {
  const items = await getItems(budgetKeys(entries));
  // budgetsOf completes the shards and, atomic, reads them again at one instant into `items`.
  if (atomic) await budgetsOf(items, true);
  else await completeShards(items);
  return entries.flatMap(({ scope, unit }) => {
    const main = items.get(keys.ledger(scope, unit).pk);
    if (main?.type !== 'ledger') return [];
    const ofBudget = new Map(
      [...items].filter(([, item]) => item.scope === scope && item.unit === unit),
    );
    const ledger = budgetsFrom(ofBudget).ledgers.get(scope);
    if (!ledger) return [];
    return [
      {
        tenant: String(main.tenant),
        ledger,
        createdAt: String(main.created_at),
        updatedAt: main.updated_at === undefined ? undefined : String(main.updated_at),
        caps: budgetCapsOf(main),
        shards: Number(main.shards ?? 1),
        gated: main.gated === true,
        period: ledgerPeriodOf(main),
        thresholds: thresholdsOf(main),
      },
    ];
  });
}

/** What an operator may change on a budget (its counters change only by funding). */
export interface BudgetSettings {
  readonly overdraftLimit: number;
  /** Undefined: the budget has no caps. */
  readonly caps: BudgetCaps | undefined;
  /** Undefined: the default thresholds (nothing stored). */
  readonly thresholds?: readonly number[] | undefined;
}

/**
 * New overdraft limit and caps on the budget's ledger item (shard 0 holds both), if they are
 * still what was read, with the audit record; 'stale' otherwise.
 */
export async function updateBudgetSettings(
  before: BudgetRecord,
  after: BudgetSettings,
  at: string,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ledger;
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
          ':was': before.ledger.overdraftLimit,
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
  before: BudgetRecord,
  to: BudgetStatus,
  at: string,
  audit: AuditEntry | undefined,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ledger;
  const from = before.ledger.status ?? 'ACTIVE';
  const itemKeys = Array.from({ length: before.shards }, (_, k) =>
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
      if (k === 0) conditions.push(shardCountIs(names, values, before.shards));
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
  before: { readonly ledger: Ledger; readonly period: LedgerPeriod },
  after: { readonly ledger: Ledger; readonly period: LedgerPeriod },
): Promise<'rolled' | 'stale'> {
  const { scope, unit } = before.ledger;
  const closed = closedPeriodLedger(before.ledger);
  const outcome = await transact([
    putIfAbsent({
      ...keys.ledgerPeriod(scope, unit, before.period.start),
      type: 'ledger-period',
      tenant,
      scope,
      unit,
      allocated: closed.allocated,
      spent: closed.spent,
      reserved: closed.reserved,
      debt: closed.debt,
      overdraft_limit: closed.overdraftLimit,
      remaining: closed.remaining,
      carried_debt: before.ledger.debt,
      ...ledgerPeriodAttributes(before.period),
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
          ':allocated': after.ledger.allocated,
          ':spent': after.ledger.spent,
          ':reserved': after.ledger.reserved,
          ':remaining': after.ledger.remaining,
          ':next': after.period.start,
          ':nextEnd': after.period.end,
          ':start': before.period.start,
          ':was_allocated': before.ledger.allocated,
          ':was_spent': before.ledger.spent,
          ':was_reserved': before.ledger.reserved,
          ':was_debt': before.ledger.debt,
        },
      },
    },
  ]);
  return outcome.kind === 'committed' ? 'rolled' : 'stale';
}

/** The ledgers of closed periods, by scope: where holds taken in them settle. */
export async function getClosedPeriodLedgers(
  wanted: readonly { readonly scope: string; readonly unit: Unit; readonly start: number }[],
): Promise<{ ledgers: Map<string, Ledger>; periods: Map<string, LedgerPeriod> }> {
  const items = await getItems(wanted.map((w) => keys.ledgerPeriod(w.scope, w.unit, w.start)));
  const ledgers = new Map<string, Ledger>();
  const periods = new Map<string, LedgerPeriod>();
  for (const item of items.values()) {
    const period = ledgerPeriodOf(item);
    if (!period) continue;
    const ledger = ledgerOf(item);
    ledgers.set(ledger.scope, ledger);
    periods.set(ledger.scope, period);
  }
  return { ledgers, periods };
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
    periods: page.items.flatMap((item) => {
      const period = ledgerPeriodOf(item);
      return period ? [{ ledger: ledgerOf(item), period }] : [];
    }),
    nextPosition: page.nextPosition,
  };
}
