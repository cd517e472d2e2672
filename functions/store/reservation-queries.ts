import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Reservation, ReservationStatus } from '../domain/reservation.js';
import { LEVELS, type Level } from '../domain/scopes.js';
import { documentClient, tableName } from './client.js';
import { isReservationItem, reservationOf } from './items.js';
import {
  DUE_SHARDS,
  dueBound,
  duePartition,
  keys,
  listPartitions,
  listSortKey,
  reservationIdOfListKey,
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
  readonly limit: number;
  /** Applied to fresh items: the index only narrows the walk. */
  readonly matches: (r: Reservation) => boolean;
}

export interface ReservationPage {
  readonly reservations: readonly Reservation[];
  /** Where the next page starts; undefined when the walk is complete. */
  readonly nextPosition?: string | undefined;
}

/** The index a listing walks: the most specific subject filter, else status, else the tenant. */
function listingSource(q: ReservationListQuery) {
  const level = [...SUBJECT_LEVELS].reverse().find((l) => q.subject[l] !== undefined);
  if (level) {
    return {
      index: INDEX_OF[level],
      attribute: `${level}_pk`,
      partition: listPartitions.level(q.tenant, level, q.subject[level] ?? ''),
    };
  }
  if (q.status) {
    return {
      index: 'byStatus',
      attribute: 'status_pk',
      partition: listPartitions.status(q.tenant, q.status),
    };
  }
  return { index: 'byTenant', attribute: 'tenant_pk', partition: listPartitions.tenant(q.tenant) };
}

/** Cap on index entries examined per page, so a selective filter cannot make one call unbounded. */
const MAX_EXAMINED = 1_000;

/**
 * Newest first. The index holds keys only; each page is completed with one strongly consistent
 * BatchGetItem, and filters are applied to those fresh items, never to a stale index copy.
 */
export async function queryReservations(q: ReservationListQuery): Promise<ReservationPage> {
  const source = listingSource(q);
  const found: Reservation[] = [];
  let examined = 0;
  let position = q.after;
  let exhausted = false;
  while (found.length <= q.limit && examined < MAX_EXAMINED && !exhausted) {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: source.index,
        KeyConditionExpression: position ? '#p = :p AND #s < :after' : '#p = :p',
        ExpressionAttributeNames: { '#p': source.attribute, ...(position && { '#s': 'list_sk' }) },
        ExpressionAttributeValues: {
          ':p': source.partition,
          ...(position && { ':after': position }),
        },
        ScanIndexForward: false,
        Limit: q.limit + 1 - found.length,
      }),
    );
    const listKeys = (page.Items ?? []).map((i) => String(i.list_sk));
    exhausted = !page.LastEvaluatedKey;
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

export interface DueWalk {
  readonly pageSize: number;
  /** Real time (Date.now()) at which to stop walking, e.g. shortly before a Lambda's timeout. */
  readonly stopAt: number;
}

/**
 * Walks every shard of the sparse due index for ACTIVE reservations past their deadline at
 * `now`, one page at a time (items read back consistently). `expire` settles a page and says
 * how many it expired; a full page with none expired is made of index entries not yet caught
 * up, so the walk moves on to the next shard. Returns false when stopped by `stopAt`.
 */
export async function walkDueReservations(
  now: number,
  walk: DueWalk,
  expire: (page: readonly Reservation[]) => Promise<number>,
): Promise<boolean> {
  for (let shard = 0; shard < DUE_SHARDS; shard++) {
    for (;;) {
      if (Date.now() >= walk.stopAt) return false;
      const page = await documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'dueForExpiry',
          KeyConditionExpression: '#p = :p AND #s < :bound',
          ExpressionAttributeNames: { '#p': 'due_pk', '#s': 'due_sk' },
          ExpressionAttributeValues: { ':p': duePartition(shard), ':bound': dueBound(now) },
          Limit: walk.pageSize,
        }),
      );
      const dueKeys = (page.Items ?? []).map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
      const items = dueKeys.length === 0 ? new Map() : await getItems(dueKeys);
      const due = [...items.values()].filter(isReservationItem).map(reservationOf);
      const expired = due.length === 0 ? 0 : await expire(due);
      if (dueKeys.length < walk.pageSize || expired === 0) break;
    }
  }
  return true;
}
