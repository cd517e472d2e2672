import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { invalidCursor } from '../domain/cursor.js';
import { type Delivery, type DeliveryStatus, isFinished } from '../domain/deliveries.js';
import { documentClient, tableName } from './client.js';
import {
  deliveryItem,
  deliveryKey,
  deliveryOf,
  deliveryState,
  FINISHED_REMOVES,
  isDeliveryItem,
} from './entities/delivery.js';
import {
  and,
  attr,
  type Key,
  Placeholders,
  putIfAbsentInput,
  queryExpressions,
  updateExpression,
} from './expressions.js';
import {
  deliveryDuePartitions,
  deliveryPartition,
  isTimePosition,
  timeKey,
  timeRange,
} from './keys.js';
import { queryPage } from './pages.js';
import { getItemList, getItems } from './transact.js';

/**
 * Queues deliveries: each put only if absent (an event's delivery to a subscription has a
 * derived id, so a redelivered stream record finds it). Answers, per delivery, 'new', or the
 * delivery found there (its message may never have been sent: the caller sends one again while
 * it is still PENDING).
 */
export async function insertDeliveries(
  deliveries: readonly Delivery[],
  retentionMs: number,
): Promise<('new' | Delivery)[]> {
  return Promise.all(
    deliveries.map(async (d) => {
      try {
        await documentClient.send(new PutCommand(putIfAbsentInput(deliveryItem(d, retentionMs))));
        return 'new' as const;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        return (await getDelivery(d)) ?? d;
      }
    }),
  );
}

/** A delivery by its key parts (strongly consistent). */
export async function getDelivery(
  d: Pick<Delivery, 'subscriptionId' | 'createdAtMs' | 'deliveryId'>,
): Promise<Delivery | undefined> {
  const key = deliveryKey(d);
  const item = (await getItems([key])).get(key.pk);
  return isDeliveryItem(item) && item.sk === key.sk ? deliveryOf(item) : undefined;
}

/**
 * An attempt's outcome, only over the state it was made from (`attempts` unchanged): a second
 * worker holding the same message records nothing. Answers false then.
 */
export async function recordAttempt(before: Delivery, after: Delivery): Promise<boolean> {
  const p = new Placeholders();
  const state = deliveryState(after);
  const finished = isFinished(after);
  const remove = finished ? [...FINISHED_REMOVES] : [];
  const set = Object.fromEntries(Object.entries(state).filter(([, v]) => v !== undefined));
  const unset = Object.entries(state)
    .filter(([k, v]) => v === undefined && !remove.includes(k as (typeof FINISHED_REMOVES)[number]))
    .map(([k]) => k);
  try {
    await documentClient.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: deliveryKey(after),
        UpdateExpression: updateExpression({ set, remove: [...remove, ...unset] }, p),
        ConditionExpression: attr('attempts').eq(before.attempts)(p),
        ExpressionAttributeNames: p.names,
        ExpressionAttributeValues: p.values,
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

export interface DeliveryQuery {
  readonly subscriptionId: string;
  readonly status?: DeliveryStatus | undefined;
  readonly fromMs?: number | undefined;
  readonly toMs?: number | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
}

/** A subscription's delivery log, newest first (one strongly consistent Query per page). */
export async function queryDeliveries(q: DeliveryQuery) {
  if (q.after !== undefined && !isTimePosition(q.after)) throw invalidCursor();
  const range = timeRange(q.fromMs, q.toMs);
  const page = await queryPage({
    partitionKey: 'pk',
    partition: deliveryPartition(q.subscriptionId),
    sortKey: 'sk',
    lowest: range.from,
    highest: range.to,
    newestFirst: true,
    after: q.after,
    limit: q.limit,
    matches: (item) => isDeliveryItem(item) && (q.status === undefined || item.status === q.status),
  });
  return { deliveries: page.items.map(deliveryOf), nextPosition: page.nextPosition };
}

/**
 * Unfinished deliveries due by `before`, oldest first, at most `limit` per due partition (the
 * sparse due index, keys only; the items read back consistently): what the local worker
 * resumes at start.
 */
export async function queryUnfinishedDeliveries(
  before: number,
  limit: number,
): Promise<Delivery[]> {
  const pages = await Promise.all(
    deliveryDuePartitions().map((partition) =>
      documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'dueForExpiry',
          ...queryExpressions(
            and(attr('due_pk').eq(partition), attr('due_sk').lt(timeKey(before, '~'))),
          ),
          Limit: limit,
        }),
      ),
    ),
  );
  const found: Key[] = pages.flatMap((page) =>
    (page.Items ?? []).map((i) => ({ pk: String(i.pk), sk: String(i.sk) })),
  );
  if (found.length === 0) return [];
  const items = await getItemList(found);
  return items
    .filter(isDeliveryItem)
    .map(deliveryOf)
    .filter((d) => !isFinished(d));
}
