import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from './client.js';
import { and, attr, type Item, queryExpressions } from './expressions.js';
import type { IndexName } from './table.js';

/**
 * One page of one partition, walked by sort key between two bounds (inclusive), resuming after
 * the sort key a cursor carried. Filters run on the items, so a page may take several Queries;
 * it stops at `limit` matches. The position is the last returned item's sort key: it resumes
 * from there whatever was added meanwhile.
 */
export interface PageQuery {
  /** The base table (strongly consistent) when absent. */
  readonly index?: IndexName | undefined;
  readonly partitionKey: string;
  readonly partition: string;
  readonly sortKey: string;
  readonly lowest: string;
  readonly highest: string;
  readonly newestFirst: boolean;
  /** A sort key returned earlier: the page starts after it. */
  readonly after?: string | undefined;
  readonly limit: number;
  readonly matches?: (item: Item) => boolean;
}

export interface ItemPage {
  readonly items: readonly Item[];
  /** Set when there may be more: the sort key of the last item. */
  readonly nextPosition?: string | undefined;
}

/** At most this many Queries per page, so a filter that matches little cannot run long. */
const MAX_QUERIES_PER_PAGE = 10;

export async function queryPage(q: PageQuery): Promise<ItemPage> {
  const matches = q.matches ?? (() => true);
  let lowest = q.lowest;
  let highest = q.highest;
  if (q.after !== undefined) {
    if (q.newestFirst) highest = q.after < highest ? q.after : highest;
    else lowest = q.after > lowest ? q.after : lowest;
  }
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  let examined: string | undefined;
  for (let round = 0; round < MAX_QUERIES_PER_PAGE; round++) {
    if (lowest > highest) return { items };
    const out = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: q.index,
        ...queryExpressions(
          and(
            attr(q.partitionKey).eq(q.partition),
            // A key attribute is never the empty string: '' as lowest means no lower bound.
            lowest === '' ? attr(q.sortKey).lte(highest) : attr(q.sortKey).between(lowest, highest),
          ),
        ),
        ScanIndexForward: !q.newestFirst,
        ConsistentRead: q.index === undefined,
        Limit: q.limit + 1,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of out.Items ?? []) {
      const position = String(item[q.sortKey]);
      if (position === q.after || !matches(item)) {
        examined = position;
        continue;
      }
      if (items.length === q.limit) return { items, nextPosition: examined };
      items.push(item);
      examined = position;
    }
    start = out.LastEvaluatedKey;
    if (!start) return { items };
  }
  // Out of Queries for this page: resume after the last item looked at, matched or not.
  return examined === undefined ? { items } : { items, nextPosition: examined };
}

/** One page of a base-table partition in sort-key order (a reservation's charges, children). */
export const partitionInOrder = (q: {
  readonly partition: string;
  readonly after?: string | undefined;
  readonly limit: number;
}): Promise<ItemPage> =>
  queryPage({
    partitionKey: 'pk',
    partition: q.partition,
    sortKey: 'sk',
    lowest: '',
    highest: '~',
    newestFirst: false,
    after: q.after,
    limit: q.limit,
  });
