import type { EventDocument } from '../../domain/events.js';
import type { Item } from '../expressions.js';
import { directory, eventSpreadOf, keys, timeKey } from '../keys.js';

// The event log: one item per emitted event (the protocol's Event), put once (conditionally:
// a redelivered stream record finds it there) and deleted by DynamoDB's TTL after the
// retention. Its document is kept as the JSON text every delivery sends, byte for byte.
// Listed per tenant on the `directory` index, across tenants on `byStatus` (keys.ts).

/** Written on every logged event from this version on. */
export const LOGGED_EVENT_VERSION = 1;

export const isLoggedEventItem = (item: Item | undefined): item is Item =>
  item?.type === 'logged-event';

/** The item of an event, kept until `retentionMs` after it happened. */
export function loggedEventItem(e: EventDocument, retentionMs: number): Item {
  const atMs = Date.parse(e.timestamp);
  const position = timeKey(atMs, e.event_id);
  return {
    ...keys.loggedEvent(e.event_id),
    type: 'logged-event',
    v: LOGGED_EVENT_VERSION,
    tenant: e.tenant_id,
    event_type: e.event_type,
    category: e.category,
    at_ms: atMs,
    ...(e.scope !== undefined && { scope: e.scope }),
    ...(e.correlation_id !== undefined && { correlation_id: e.correlation_id }),
    ...(e.request_id !== undefined && { request_id: e.request_id }),
    ...(e.trace_id !== undefined && { trace_id: e.trace_id }),
    document: JSON.stringify(e),
    dir_pk: directory.events.pk(e.tenant_id),
    dir_sk: position,
    // Every tenant's events, on the index reservations are listed by status from (keys.ts).
    status_pk: eventSpreadOf(e.event_id),
    list_sk: position,
    ttl: Math.floor((atMs + retentionMs) / 1000),
  };
}

/** The document as stored: exactly what was delivered. */
export const loggedEventOf = (item: Item): EventDocument =>
  JSON.parse(String(item.document)) as EventDocument;

/** The JSON text deliveries sign and send. */
export const eventBodyOf = (item: Item): string => String(item.document);

/** When the event happened (its listing position's time). */
export const loggedEventAt = (item: Item): number => Number(item.at_ms);
