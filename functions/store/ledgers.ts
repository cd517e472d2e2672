import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import { invalidCursor } from '../domain/cursor.js';
import type { Ledger, LedgerChange, LedgerField } from '../domain/ledger.js';
import type { Segment, SegmentKind } from '../domain/scopes.js';
import { segmentText } from '../domain/scopes.js';
import { auditPut } from './audit.js';
import { documentClient, tableName } from './client.js';
import { type IdempotencyScope, idempotencyPut, type StoredOutcome } from './idempotency.js';
import { isLedgerItem, ledgerOf, ledgersByScope } from './items.js';
import { isLedgerIndexPosition, keys, ledgerIndexPartition } from './keys.js';
import {
  counterUpdate,
  getItems,
  putIfAbsent,
  type TransactItem,
  tenantExists,
  transact,
} from './transact.js';
import { transactWrite, type WriteOutcome } from './write.js';

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
  const { delta, guard } = change;
  const update = counterUpdate(
    {
      allocated: delta.allocated,
      spent: delta.spent,
      reserved: delta.reserved,
      debt: delta.debt,
      remaining: delta.remaining,
    },
    'remaining',
  );
  const names: Record<string, string> = { ...update.names, '#pk': 'pk' };
  const values: Record<string, unknown> = { ...update.values };
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
      conditions.push('#remaining >= :g_amount', '#debt = :g_zero');
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
  return {
    Update: {
      TableName: tableName(),
      Key: keys.ledger(change.scope, change.unit),
      UpdateExpression: update.expression,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

export const ledgerKeys = (scopes: readonly string[], unit: Unit) =>
  scopes.map((scope) => keys.ledger(scope, unit));

/** The ledgers of the given scopes in one unit, by scope; absent scopes have no ledger. */
export async function getLedgers(
  scopes: readonly string[],
  unit: Unit,
): Promise<Map<string, Ledger>> {
  const items = await getItems(ledgerKeys(scopes, unit));
  return ledgersByScope(items.values());
}

export interface NewLedger {
  readonly tenant: string;
  readonly segments: readonly Segment[];
  readonly ledger: Ledger;
  readonly createdAt: string;
  readonly audit: AuditEntry;
}

/**
 * The ledger and one index entry per path segment, conditioned on the tenant existing (the
 * admin key may name any tenant), with its audit record: segments + 3 items, all or nothing.
 */
export function newLedgerTransaction(n: NewLedger): TransactItem[] {
  const { ledger } = n;
  const texts = n.segments.map(segmentText);
  const level: SegmentKind = n.segments[n.segments.length - 1]?.kind ?? 'tenant';
  return [
    putIfAbsent({
      ...keys.ledger(ledger.scope, ledger.unit),
      type: 'ledger',
      tenant: n.tenant,
      scope: ledger.scope,
      unit: ledger.unit,
      allocated: ledger.allocated,
      spent: ledger.spent,
      reserved: ledger.reserved,
      debt: ledger.debt,
      overdraft_limit: ledger.overdraftLimit,
      remaining: ledger.remaining,
      created_at: n.createdAt,
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
    tenantExists(n.tenant),
    auditPut(n.audit),
  ];
}

export async function insertLedger(n: NewLedger): Promise<'inserted' | 'duplicate' | 'noTenant'> {
  const outcome = await transact(newLedgerTransaction(n));
  if (outcome.kind === 'committed') return 'inserted';
  const tenantCheck = n.segments.length + 1;
  return outcome.reasons[tenantCheck]?.code === 'ConditionalCheckFailed' ? 'noTenant' : 'duplicate';
}

export interface LedgerIndexQuery {
  readonly tenant: string;
  /** The segment whose index partition is read. */
  readonly segment: string;
  /** Further segments every result must contain. */
  readonly alsoContains: readonly string[];
  /** Only ledgers whose last segment is of this kind (include_children=false). */
  readonly level?: SegmentKind | undefined;
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

/** One funding change, its idempotency record and its audit record, in one transaction. */
export function applyFunding(
  change: LedgerChange,
  idempotency: { scope: IdempotencyScope; outcome: StoredOutcome },
  audit: AuditEntry,
): Promise<WriteOutcome> {
  return transactWrite(
    [
      ledgerUpdate(change),
      idempotencyPut(idempotency.scope, idempotency.outcome, audit.atMs),
      auditPut(audit),
    ],
    { recordAt: 1, ledgersFrom: 0, ledgerCount: 1 },
    'settle',
  );
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
): Promise<Map<string, Ledger>> {
  const items = await getItems(entries.map((e) => keys.ledger(e.scope, e.unit)));
  const result = new Map<string, Ledger>();
  for (const item of items.values()) {
    if (isLedgerItem(item))
      result.set(`${String(item.scope)}#${String(item.unit)}`, ledgerOf(item));
  }
  return result;
}
