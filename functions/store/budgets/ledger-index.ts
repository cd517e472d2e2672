import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../../domain/amounts.js';
import { budgetKeyPrefix } from '../../domain/budget.js';
import { invalidCursor } from '../../domain/cursor.js';
import type { SegmentKind } from '../../domain/scopes.js';
import { documentClient, tableName } from '../client.js';
import { and, attr, queryExpressions } from '../expressions.js';
import { isLedgerIndexPosition, ledgerIndexPartition } from '../keys.js';

// The ledger index: one entry per segment of each budget's path (store/entities/ledger.ts), so
// a balance filter or a tenant's budget listing is one strongly consistent Query.

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
  const partition = ledgerIndexPartition(q.tenant, q.segment);
  const filters = [
    ...q.alsoContains.map((segment) => attr('segments').contains(segment)),
    q.level && attr('level').eq(q.level),
    q.scopePrefix && attr('scope').beginsWith(q.scopePrefix),
    q.unit && attr('unit').eq(q.unit),
  ].filter((c) => typeof c === 'function');
  const expressions = queryExpressions(
    attr('pk').eq(partition),
    filters.length > 0 ? and(...filters) : undefined,
  );
  const entries: { position: string; scope: string; unit: Unit }[] = [];
  let startKey: Record<string, unknown> | undefined = q.after
    ? { pk: partition, sk: q.after }
    : undefined;
  do {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        ...expressions,
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

/** The units in which `scope` has a budget (used only to explain a refusal). */
export async function unitsOfScope(tenant: string, scope: string): Promise<Unit[]> {
  const lastSegment = scope.slice(scope.lastIndexOf('/') + 1);
  const page = await documentClient.send(
    new QueryCommand({
      TableName: tableName(),
      ...queryExpressions(
        and(
          attr('pk').eq(ledgerIndexPartition(tenant, lastSegment)),
          attr('sk').beginsWith(budgetKeyPrefix(scope)),
        ),
      ),
      ConsistentRead: true,
    }),
  );
  return (page.Items ?? []).filter((i) => i.scope === scope).map((i) => i.unit as Unit);
}
