import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Amount, Unit } from '../domain/amounts.js';
import type { LedgerChange } from '../domain/ledger.js';
import type { Reservation, ReservationStatus } from '../domain/reservation.js';
import { settleDeadline } from '../domain/reservation.js';
import { LEVELS } from '../domain/scopes.js';
import { documentClient, tableName } from './client.js';
import {
  type IdempotencyScope,
  idempotencyPut,
  type StoredResponse,
  storedResponseAttributes,
  storedResponseOf,
} from './idempotency.js';
import {
  dueBound,
  dueShard,
  dueSortKey,
  keys,
  listPartitions,
  listSortKey,
  reservationIdOfListKey,
} from './keys.js';
import { ledgerUpdate } from './ledgers.js';
import type { IndexName } from './table.js';
import { conditionFailedAt, getItems, type Item, type TransactItem, transact } from './transact.js';

export function reservationOf(item: Item): Reservation {
  const unit = item.unit as Unit;
  return {
    reservationId: String(item.reservation_id),
    tenant: String(item.tenant),
    status: item.status as ReservationStatus,
    idempotencyKey: String(item.idempotency_key),
    subject: item.subject as Reservation['subject'],
    action: item.action as Reservation['action'],
    reserved: { unit, amount: Number(item.estimate) },
    committed: item.committed === undefined ? undefined : { unit, amount: Number(item.committed) },
    createdAtMs: Number(item.created_at_ms),
    expiresAtMs: Number(item.expires_at_ms),
    gracePeriodMs: Number(item.grace_period_ms),
    finalizedAtMs: item.finalized_at_ms === undefined ? undefined : Number(item.finalized_at_ms),
    scopePath: String(item.scope_path),
    affectedScopes: item.scopes as string[],
    overagePolicy: item.overage_policy as Reservation['overagePolicy'],
    metadata: item.metadata as Reservation['metadata'],
  };
}

const isReservationItem = (item: Item | undefined): item is Item => item?.type === 'reservation';

/** The reservation, or undefined when it never existed. */
export async function getReservation(
  reservationId: string,
): Promise<{ reservation: Reservation; stored: StoredResponse | undefined } | undefined> {
  const item = (await getItems([keys.reservation(reservationId)])).get(
    keys.reservation(reservationId).pk,
  );
  return isReservationItem(item)
    ? { reservation: reservationOf(item), stored: storedResponseOf(item) }
    : undefined;
}

function listAttributes(r: Reservation): Item {
  const sk = listSortKey(r.createdAtMs, r.reservationId);
  const attributes: Item = {
    tenant_pk: listPartitions.tenant(r.tenant),
    status_pk: listPartitions.status(r.tenant, r.status),
    list_sk: sk,
  };
  for (const level of LEVELS.slice(1)) {
    const value = r.subject[level];
    if (value !== undefined)
      attributes[`${level}_pk`] = listPartitions.level(r.tenant, level, value);
  }
  return attributes;
}

export interface NewReservation {
  readonly reservation: Reservation;
  readonly holds: readonly LedgerChange[];
  readonly response: StoredResponse;
}

export type InsertOutcome =
  | { readonly kind: 'inserted' }
  | { readonly kind: 'duplicate'; readonly stored: StoredResponse | undefined }
  /** Index-aligned with `holds`: the ledger item as it was (undefined: no ledger) where refused. */
  | {
      readonly kind: 'refused';
      readonly refused: readonly { readonly index: number; readonly item: Item | undefined }[];
    };

/** Holds on every scope and the reservation record (which is its own idempotency record): scopes + 1 items. */
export function reserveTransaction(n: NewReservation): TransactItem[] {
  const r = n.reservation;
  return [
    ...n.holds.map(ledgerUpdate),
    {
      Put: {
        TableName: tableName(),
        Item: {
          ...keys.reservation(r.reservationId),
          type: 'reservation',
          reservation_id: r.reservationId,
          tenant: r.tenant,
          status: r.status,
          idempotency_key: r.idempotencyKey,
          subject: r.subject,
          action: r.action,
          unit: r.reserved.unit,
          estimate: r.reserved.amount,
          created_at_ms: r.createdAtMs,
          expires_at_ms: r.expiresAtMs,
          grace_period_ms: r.gracePeriodMs,
          deadline_ms: settleDeadline(r),
          scope_path: r.scopePath,
          scopes: r.affectedScopes,
          overage_policy: r.overagePolicy,
          metadata: r.metadata,
          ...storedResponseAttributes(n.response),
          ...listAttributes(r),
          due_pk: dueShard(r.reservationId),
          due_sk: dueSortKey(settleDeadline(r), r.reservationId),
        },
        // Keyed by a hash of (tenant, idempotency key): a replay fails here instead of reserving twice.
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
  ];
}

export async function insertReservation(n: NewReservation): Promise<InsertOutcome> {
  const outcome = await transact(reserveTransaction(n));
  if (outcome.kind === 'committed') return { kind: 'inserted' };
  const record = outcome.reasons[n.holds.length];
  if (record?.code === 'ConditionalCheckFailed')
    return { kind: 'duplicate', stored: storedResponseOf(record.item) };
  const refused = n.holds.flatMap((_, index) =>
    conditionFailedAt(outcome.reasons, index)
      ? [{ index, item: outcome.reasons[index]?.item }]
      : [],
  );
  return { kind: 'refused', refused };
}

export interface Settlement {
  readonly reservation: Reservation;
  readonly to: 'COMMITTED' | 'RELEASED' | 'EXPIRED';
  readonly now: number;
  readonly changes: readonly LedgerChange[];
  readonly committed?: Amount | undefined;
  readonly detail?: Record<string, unknown> | undefined;
  readonly idempotency?:
    | { readonly scope: IdempotencyScope; readonly response: StoredResponse }
    | undefined;
}

export type SettleOutcome =
  | { readonly kind: 'settled' }
  | { readonly kind: 'replayed'; readonly stored: StoredResponse | undefined }
  /** The reservation is no longer what the decision was based on: the item as it is now. */
  | { readonly kind: 'stale'; readonly item: Item | undefined }
  | {
      readonly kind: 'refused';
      readonly refused: readonly { readonly index: number; readonly item: Item | undefined }[];
    };

/**
 * Commit, release or expiry: one transaction conditioned on the reservation still being ACTIVE
 * (and before, resp. after, its deadline), so whichever settles first wins and the others fail.
 */
export function settleTransaction(s: Settlement): TransactItem[] {
  const r = s.reservation;
  const beforeDeadline = s.to !== 'EXPIRED';
  const items: TransactItem[] = [
    {
      Update: {
        TableName: tableName(),
        Key: keys.reservation(r.reservationId),
        UpdateExpression: `SET #status = :to, #status_pk = :status_pk, #finalized = :now${s.committed ? ', #committed = :committed' : ''}${s.detail ? ', #detail = :detail' : ''} REMOVE #due_pk, #due_sk`,
        ConditionExpression: `#status = :active AND #tenant = :tenant AND #deadline ${beforeDeadline ? '>' : '<='} :now`,
        ExpressionAttributeNames: {
          '#status': 'status',
          '#status_pk': 'status_pk',
          '#finalized': 'finalized_at_ms',
          '#tenant': 'tenant',
          '#deadline': 'deadline_ms',
          '#due_pk': 'due_pk',
          '#due_sk': 'due_sk',
          ...(s.committed && { '#committed': 'committed' }),
          ...(s.detail && { '#detail': `${s.to.toLowerCase()}_detail` }),
        },
        ExpressionAttributeValues: {
          ':to': s.to,
          ':status_pk': listPartitions.status(r.tenant, s.to),
          ':now': s.now,
          ':active': 'ACTIVE',
          ':tenant': r.tenant,
          ...(s.committed && { ':committed': s.committed.amount }),
          ...(s.detail && { ':detail': s.detail }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    ...s.changes.map(ledgerUpdate),
  ];
  if (s.idempotency) items.push(idempotencyPut(s.idempotency.scope, s.idempotency.response, s.now));
  return items;
}

export async function settleReservation(s: Settlement): Promise<SettleOutcome> {
  const outcome = await transact(settleTransaction(s));
  if (outcome.kind === 'committed') return { kind: 'settled' };
  const idempotencyIndex = 1 + s.changes.length;
  if (s.idempotency && conditionFailedAt(outcome.reasons, idempotencyIndex)) {
    return { kind: 'replayed', stored: storedResponseOf(outcome.reasons[idempotencyIndex]?.item) };
  }
  if (conditionFailedAt(outcome.reasons, 0))
    return { kind: 'stale', item: outcome.reasons[0]?.item };
  const refused = s.changes.flatMap((_, i) =>
    conditionFailedAt(outcome.reasons, i + 1)
      ? [{ index: i, item: outcome.reasons[i + 1]?.item }]
      : [],
  );
  return { kind: 'refused', refused };
}

export interface Extension {
  readonly reservation: Reservation;
  readonly newExpiresAtMs: number;
  readonly now: number;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly idempotency: { readonly scope: IdempotencyScope; readonly response: StoredResponse };
}

/** Moves expiry (and the sweeper's due key) forward; conditioned on the expiry we read. */
export async function extendReservation(e: Extension): Promise<SettleOutcome> {
  const r = e.reservation;
  const newDeadline = e.newExpiresAtMs + r.gracePeriodMs;
  const outcome = await transact([
    {
      Update: {
        TableName: tableName(),
        Key: keys.reservation(r.reservationId),
        UpdateExpression: `SET #expires = :expires, #deadline = :deadline, #due_sk = :due_sk${e.metadata ? ', #meta = :meta' : ''}`,
        ConditionExpression:
          '#status = :active AND #tenant = :tenant AND #expires = :seen AND #expires > :now',
        ExpressionAttributeNames: {
          '#status': 'status',
          '#tenant': 'tenant',
          '#expires': 'expires_at_ms',
          '#deadline': 'deadline_ms',
          '#due_sk': 'due_sk',
          ...(e.metadata && { '#meta': 'extend_metadata' }),
        },
        ExpressionAttributeValues: {
          ':active': 'ACTIVE',
          ':tenant': r.tenant,
          ':seen': r.expiresAtMs,
          ':now': e.now,
          ':expires': e.newExpiresAtMs,
          ':deadline': newDeadline,
          ':due_sk': dueSortKey(newDeadline, r.reservationId),
          ...(e.metadata && { ':meta': e.metadata }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    idempotencyPut(e.idempotency.scope, e.idempotency.response, e.now),
  ]);
  if (outcome.kind === 'committed') return { kind: 'settled' };
  if (conditionFailedAt(outcome.reasons, 1))
    return { kind: 'replayed', stored: storedResponseOf(outcome.reasons[1]?.item) };
  return { kind: 'stale', item: outcome.reasons[0]?.item };
}

export interface ListQuery {
  readonly index: IndexName;
  readonly partitionAttribute: string;
  readonly partition: string;
  readonly after?: string | undefined;
  readonly limit: number;
  readonly matches: (r: Reservation) => boolean;
}

export interface ListPage {
  readonly reservations: readonly Reservation[];
  /** Where the next page starts; undefined when the walk is complete. */
  readonly nextPosition?: string | undefined;
}

/** Cap on index entries examined per page, so a selective filter cannot make one call unbounded. */
const MAX_EXAMINED = 1_000;

/**
 * Newest first. The index holds keys only; each page is completed with one strongly consistent
 * BatchGetItem, and filters are applied to those fresh items, never to a stale index copy.
 */
export async function queryReservations(q: ListQuery): Promise<ListPage> {
  const found: Reservation[] = [];
  let examined = 0;
  let position = q.after;
  let exhausted = false;
  while (found.length <= q.limit && examined < MAX_EXAMINED && !exhausted) {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: q.index,
        KeyConditionExpression: position ? '#p = :p AND #s < :after' : '#p = :p',
        ExpressionAttributeNames: {
          '#p': q.partitionAttribute,
          ...(position && { '#s': 'list_sk' }),
        },
        ExpressionAttributeValues: { ':p': q.partition, ...(position && { ':after': position }) },
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

/** ACTIVE reservations whose deadline has passed, from one shard of the sparse due index. */
export async function queryDueReservations(
  shard: number,
  now: number,
  limit: number,
): Promise<Reservation[]> {
  const page = await documentClient.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'dueForExpiry',
      KeyConditionExpression: '#p = :p AND #s < :bound',
      ExpressionAttributeNames: { '#p': 'due_pk', '#s': 'due_sk' },
      ExpressionAttributeValues: { ':p': `DUE#${shard}`, ':bound': dueBound(now) },
      Limit: limit,
    }),
  );
  const dueKeys = (page.Items ?? []).map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
  if (dueKeys.length === 0) return [];
  const items = await getItems(dueKeys);
  return [...items.values()].filter(isReservationItem).map(reservationOf);
}
