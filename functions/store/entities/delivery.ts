import type { Delivery, DeliveryOrigin, DeliveryStatus } from '../../domain/deliveries.js';
import { isFinished } from '../../domain/deliveries.js';
import type { EventType } from '../../domain/events.js';
import type { Item } from '../expressions.js';
import { deliveryDuePartition, keys, timeKey } from '../keys.js';

// The delivery family: one item per delivery of an event to a subscription, in the
// subscription's partition by queueing time (its delivery log is one Query), rewritten after
// every attempt, deleted by the TTL with the events. While unfinished it is on the sparse due
// index (keys.ts deliveryDuePartitions).

export const DELIVERY_VERSION = 1;

export const isDeliveryItem = (item: Item | undefined): item is Item => item?.type === 'delivery';

export const deliveryKey = (d: Pick<Delivery, 'subscriptionId' | 'createdAtMs' | 'deliveryId'>) =>
  keys.delivery(d.subscriptionId, d.createdAtMs, d.deliveryId);

/** What an attempt rewrites (and the due index entry while a retry is due). */
export function deliveryState(d: Delivery): Item {
  const due = d.nextRetryAtMs ?? (d.status === 'PENDING' ? d.createdAtMs : undefined);
  return {
    status: d.status,
    attempted_at_ms: d.attemptedAtMs,
    completed_at_ms: d.completedAtMs,
    attempts: d.attempts,
    response_status: d.responseStatus,
    response_time_ms: d.responseTimeMs,
    error_message: d.errorMessage,
    next_retry_at_ms: d.nextRetryAtMs,
    ...(!isFinished(d) &&
      due !== undefined && {
        due_pk: deliveryDuePartition(d.deliveryId),
        due_sk: timeKey(due, d.deliveryId),
      }),
  };
}

/** Attributes a finished delivery no longer has (it leaves the due index). */
export const FINISHED_REMOVES = ['due_pk', 'due_sk', 'next_retry_at_ms'] as const;

export function deliveryItem(d: Delivery, retentionMs: number): Item {
  return {
    ...deliveryKey(d),
    type: 'delivery',
    v: DELIVERY_VERSION,
    delivery_id: d.deliveryId,
    subscription_id: d.subscriptionId,
    tenant: d.tenant,
    event_id: d.eventId,
    event_type: d.eventType,
    origin: d.origin,
    created_at_ms: d.createdAtMs,
    trace_id: d.traceId,
    trace_flags: d.traceFlags,
    traceparent_inbound_valid: d.traceparentInboundValid,
    ...deliveryState(d),
    ttl: Math.floor((d.createdAtMs + retentionMs) / 1000),
  };
}

const optionalNumber = (v: unknown) => (v === undefined ? undefined : Number(v));
const optionalString = (v: unknown) => (v === undefined ? undefined : String(v));

export function deliveryOf(item: Item): Delivery {
  return {
    deliveryId: String(item.delivery_id),
    subscriptionId: String(item.subscription_id),
    tenant: String(item.tenant),
    eventId: String(item.event_id),
    eventType: String(item.event_type) as EventType,
    origin: String(item.origin) as DeliveryOrigin,
    status: String(item.status) as DeliveryStatus,
    createdAtMs: Number(item.created_at_ms),
    attemptedAtMs: Number(item.attempted_at_ms),
    completedAtMs: optionalNumber(item.completed_at_ms),
    attempts: Number(item.attempts ?? 0),
    responseStatus: optionalNumber(item.response_status),
    responseTimeMs: optionalNumber(item.response_time_ms),
    errorMessage: optionalString(item.error_message),
    nextRetryAtMs: optionalNumber(item.next_retry_at_ms),
    traceId: optionalString(item.trace_id),
    traceFlags: optionalString(item.trace_flags),
    traceparentInboundValid:
      item.traceparent_inbound_valid === undefined
        ? undefined
        : item.traceparent_inbound_valid === true,
  };
}
