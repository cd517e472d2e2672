import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { invalidCursor } from '../domain/cursor.js';
import {
  RESERVATION_STATUSES,
  type Reservation,
  type ReservationStatus,
} from '../domain/reservation.js';
import { canonicalValue, LEVELS, type Level } from '../domain/scopes.js';
import { documentClient, tableName } from './client.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import { and, attr, queryExpressions } from './expressions.js';
import {
  DUE_SHARDS,
  deadlineOfDueKey,
  dueBound,
  duePartition,
  isListPosition,
  keys,
  LIST_SPREAD,
  listPartitions,
  listSortKey,
  reservationIdOfListKey,
  tenantOfDueKey,
} from './keys.js';
import type { IndexName } from './table.js';
import { getItems } from './transact.js';

/** The reservation, or undefined when it never existed (strongly consistent). */
export async function readReservation(reservationId: string): Promise<Reservation | undefined> {
  const key = keys.reservation(reservationId);
  const item = (await getItems([key])).get(key.pk);
  return isReservationItem(item) ? reservationOf(item) : undefined;
}

type SubjectLevel = Exclude<Level, 'tenant'>;
const SUBJECT_LEVELS = LEVELS.slice(1) as SubjectLevel[];
const INDEX_OF: Record<SubjectLevel, IndexName> = {
  workspace: 'byWorkspace',
  app: 'byApp',
  workflow: 'byWorkflow',
  agent: 'byAgent',
  toolset: 'byToolset',
};

export interface ReservationListQuery {
  readonly tenant: string;
  readonly status?: ReservationStatus | undefined;
  readonly subject: Partial<Record<SubjectLevel, string | undefined>>;
  /** The position to continue after (from a previous page); undefined: the newest first. */
  readonly after?: string | undefined;
  /** Only those created in [from, to] (epoch ms, either open): a range of the listing's key. */
  readonly createdFrom?: number | undefined;
  readonly createdTo?: number | undefined;
  readonly limit: number;
  /** Applied to fresh items: the index only narrows the walk. */
  readonly matches: (r: Reservation) => boolean;
}

export interface ReservationPage {
  readonly reservations: readonly Reservation[];
  /** Where the next page starts; undefined when the walk is complete. */
  readonly nextPosition?: string | undefined;
}

interface ListingSource {
  readonly index: IndexName;
  readonly attribute: string;
  /** The partition of each listing spread (keys.ts LIST_SPREAD): read all, merge. */
  readonly partitions: readonly string[];
}

/**
 * The index a listing walks: the most specific subject filter, else status, else every status
 * of the tenant (its whole listing: four status partitions, merged as spreads are; reservations
 * have no tenant-wide index entry).
 */
function listingSource(q: ReservationListQuery): ListingSource {
  const spreads = Array.from({ length: LIST_SPREAD }, (_, k) => k);
  const level = [...SUBJECT_LEVELS].reverse().find((l) => q.subject[l] !== undefined);
  if (level) {
    const value = canonicalValue(level, q.subject[level] ?? '');
    return {
      index: INDEX_OF[level],
      attribute: `${level}_pk`,
      partitions: spreads.map((k) => listPartitions.level(q.tenant, level, value, k)),
    };
  }
  const statuses = q.status ? [q.status] : RESERVATION_STATUSES;
  return {
    index: 'byStatus',
    attribute: 'status_pk',
    partitions: statuses.flatMap((status) =>
      spreads.map((k) => listPartitions.status(q.tenant, status, k)),
    ),
  };
}

/**
 * The next `limit` list keys before `position` across every spread, newest first: each spread's
 * first `limit`, merged (the global first `limit` are among them). `exhausted` when no spread has
 * anything beyond what was returned.
 */
async function nextListKeys(
  source: ListingSource,
  position: string | undefined,
  limit: number,
  window: { readonly from?: number | undefined; readonly to?: number | undefined } = {},
): Promise<{ listKeys: string[]; exhausted: boolean }> {
  // The listing key starts with the creation time: a window is a range of it.
  const upper = window.to === undefined ? undefined : listSortKey(window.to, '~');
  const below =
    position !== undefined && (upper === undefined || position <= upper) ? position : upper;
  const pages = await Promise.all(
    source.partitions.map((partition) =>
      documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: source.index,
          ...queryExpressions(
            and(
              attr(source.attribute).eq(partition),
              window.from !== undefined
                ? attr('list_sk').between(listSortKey(window.from, ''), below ?? LAST_LIST_KEY)
                : below !== undefined && attr('list_sk').lt(below),
            ),
          ),
          ScanIndexForward: false,
          Limit: limit,
        }),
      ),
    ),
  );
  const merged = pages
    .flatMap((page) => (page.Items ?? []).map((i) => String(i.list_sk)))
    // `between` includes its upper bound: the position itself was returned before.
    .filter((sk) => below === undefined || sk < below)
    .sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  const listKeys = merged.slice(0, limit);
  const exhausted =
    merged.length <= limit && pages.every((page) => page.LastEvaluatedKey === undefined);
  return { listKeys, exhausted };
}

/** Above every listing key. */
const LAST_LIST_KEY = listSortKey(999_999_999_999_999, '~');

/** Cap on index entries examined per page, so a selective filter cannot make one call unbounded. */
const MAX_EXAMINED = 1_000;

/**
 * Newest first. The index holds keys only; each page is completed with one strongly consistent
 * BatchGetItem, and filters are applied to those fresh items, never to a stale index copy.
 */
export async function queryReservations(q: ReservationListQuery): Promise<ReservationPage> {
  if (q.after !== undefined && !isListPosition(q.after)) throw invalidCursor();
  const source = listingSource(q);
  const found: Reservation[] = [];
  let examined = 0;
  let position = q.after;
  let exhausted = false;
  while (found.length <= q.limit && examined < MAX_EXAMINED && !exhausted) {
    const next = await nextListKeys(source, position, q.limit + 1 - found.length, {
      from: q.createdFrom,
      to: q.createdTo,
    });
    const { listKeys } = next;
    exhausted = next.exhausted;
    if (listKeys.length === 0) break;
    const items = await getItems(
      listKeys.map((sk) => keys.reservation(reservationIdOfListKey(sk))),
    );
    for (const sk of listKeys) {
      examined++;
      const item = items.get(keys.reservation(reservationIdOfListKey(sk)).pk);
      position = sk;
      if (!isReservationItem(item)) continue;
      const reservation = reservationOf(item);
      if (!q.matches(reservation)) continue;
      found.push(reservation);
      if (found.length > q.limit) break;
    }
  }
  const page = found.slice(0, q.limit);
  const last = page[page.length - 1];
  if (found.length > q.limit && last) {
    return { reservations: page, nextPosition: listSortKey(last.createdAtMs, last.reservationId) };
  }
  // Stopped by the examination cap: resume after the last entry looked at.
  if (!exhausted && examined >= MAX_EXAMINED) return { reservations: page, nextPosition: position };
  return { reservations: page };
}

/** The first `limit` due keys before `bound` of each of the 16 shards, in parallel, by deadline. */
const queryEveryDueShard = (bound: number, limit: number) =>
  Promise.all(
    Array.from({ length: DUE_SHARDS }, (_, shard) =>
      documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'dueForExpiry',
          ...queryExpressions(
            and(attr('due_pk').eq(duePartition(shard)), attr('due_sk').lt(dueBound(bound))),
          ),
          Limit: limit,
        }),
      ),
    ),
  );

export interface DuePage {
  /** ACTIVE reservations past their deadline, read back consistently. */
  readonly reservations: readonly Reservation[];
  /** Some shard had more due entries than were read. */
  readonly more: boolean;
}

/**
 * Due reservations from every shard of the sparse due index at once (16 parallel Queries of
 * keys, then one consistent BatchGetItem), at most `perShard` from each. With `tenant`, only
 * that tenant's: its id is in the due key, so other tenants' items are never read.
 */
export async function queryDueReservations(
  now: number,
  perShard: number,
  tenant?: string,
): Promise<DuePage> {
  const shards = await queryEveryDueShard(now, perShard);
  const dueKeys = shards
    .flatMap((page) => page.Items ?? [])
    .filter((i) => {
      const owner = tenantOfDueKey(String(i.due_sk));
      return tenant === undefined || owner === undefined || owner === tenant;
    })
    .map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
  const items = dueKeys.length === 0 ? new Map() : await getItems(dueKeys);
  const reservations = [...items.values()]
    .filter(isReservationItem)
    .map(reservationOf)
    .filter((r) => r.status === 'ACTIVE' && (tenant === undefined || r.tenant === tenant));
  return { reservations, more: shards.some((page) => page.LastEvaluatedKey !== undefined) };
}

/**
 * The earliest deadline of an ACTIVE reservation before `before`, or undefined: one key from
 * each shard (the index is sorted by deadline), so an idle sweeper can stop at once.
 */
export async function nextDeadlineBefore(before: number): Promise<number | undefined> {
  const firsts = await queryEveryDueShard(before, 1);
  const deadlines = firsts.flatMap((page) =>
    (page.Items ?? []).map((i) => deadlineOfDueKey(String(i.due_sk))),
  );
  return deadlines.length > 0 ? Math.min(...deadlines) : undefined;
}
