import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from './client.js';
import { and, attr, type Item, type Key, queryExpressions } from './expressions.js';
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

/**
 * One page of a listing spread over several partitions of a keys-only index (keys.ts: event
 * spreads): each partition's next keys in order, merged; the items read back with one strongly
 * consistent BatchGetItem per round and filtered fresh. The position is the sort key of the
 * last item returned (or examined, when the examination cap stopped the page).
 */
export interface SpreadQuery {
  readonly index: IndexName;
  readonly partitionKey: string;
  readonly partitions: readonly string[];
  readonly sortKey: string;
  readonly lowest: string;
  readonly highest: string;
  readonly newestFirst: boolean;
  readonly after?: string | undefined;
  readonly limit: number;
  /** The items of index entries (their base-table keys), by pk. */
  readonly read: (keys: readonly Key[]) => Promise<ReadonlyMap<string, Item>>;
  readonly matches?: (item: Item) => boolean;
}

/** Index entries examined per page at most, so a selective filter cannot run one call long. */
const MAX_EXAMINED = 1_000;

export async function querySpreadPage(q: SpreadQuery): Promise<ItemPage> {
  const matches = q.matches ?? (() => true);
  const found: Item[] = [];
  let position = q.after;
  let examined = 0;
  for (;;) {
    const { entries, exhausted } = await nextEntries(q, position, q.limit + 1 - found.length);
    if (entries.length === 0) break;
    const items = await q.read(entries.map(({ pk, sk }) => ({ pk, sk })));
    for (const entry of entries) {
      examined++;
      const item = items.get(entry.pk);
      if (item && matches(item)) {
        if (found.length === q.limit) return { items: found, nextPosition: position };
        found.push(item);
      }
      position = entry.position;
    }
    if (exhausted) return { items: found };
    if (examined >= MAX_EXAMINED) return { items: found, nextPosition: position };
  }
  return { items: found };
}

interface Entry extends Key {
  readonly position: string;
}

/** The next `limit` entries past `position` across every partition, merged in order. */
async function nextEntries(
  q: SpreadQuery,
  position: string | undefined,
  limit: number,
): Promise<{ entries: Entry[]; exhausted: boolean }> {
  let lowest = q.lowest;
  let highest = q.highest;
  if (position !== undefined) {
    if (q.newestFirst) highest = position < highest ? position : highest;
    else lowest = position > lowest ? position : lowest;
  }
  if (lowest > highest) return { entries: [], exhausted: true };
  const pages = await Promise.all(
    q.partitions.map((partition) =>
      documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: q.index,
          ...queryExpressions(
            and(attr(q.partitionKey).eq(partition), attr(q.sortKey).between(lowest, highest)),
          ),
          ScanIndexForward: !q.newestFirst,
          Limit: limit + 1,
        }),
      ),
    ),
  );
  const order = q.newestFirst ? -1 : 1;
  const merged = pages
    .flatMap((page) => page.Items ?? [])
    .map((i) => ({ pk: String(i.pk), sk: String(i.sk), position: String(i[q.sortKey]) }))
    .filter((e) => e.position !== position)
    .sort((a, b) => (a.position < b.position ? -order : a.position > b.position ? order : 0));
  const entries = merged.slice(0, limit);
  const exhausted =
    merged.length <= limit && pages.every((page) => page.LastEvaluatedKey === undefined);
  return { entries, exhausted };
}
