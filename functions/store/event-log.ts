import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { invalidCursor } from '../domain/cursor.js';
import type { EventCategory, EventDocument, EventType } from '../domain/events.js';
import { documentClient } from './client.js';
import {
  eventBodyOf,
  isLoggedEventItem,
  loggedEventItem,
  loggedEventOf,
} from './entities/logged-event.js';
import { type Item, putIfAbsentInput } from './expressions.js';
import { directory, eventSpreads, isTimePosition, keys, timeRange } from './keys.js';
import { queryPage, querySpreadPage } from './pages.js';
import { getItems } from './transact.js';

/**
 * Puts each event that is not in the log yet (a conditional put per event: a redelivered
 * stream record, or a second consumer, finds it there); answers those it put. The puts run
 * side by side.
 */
export async function logEvents(
  events: readonly EventDocument[],
  retentionMs: number,
): Promise<EventDocument[]> {
  const put = await Promise.all(
    events.map(async (e) => {
      try {
        await documentClient.send(
          new PutCommand(putIfAbsentInput(loggedEventItem(e, retentionMs))),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    }),
  );
  return events.filter((_, i) => put[i]);
}

/** A logged event and the exact text deliveries send; undefined when absent (or expired). */
export async function getLoggedEvent(
  eventId: string,
): Promise<{ readonly event: EventDocument; readonly body: string } | undefined> {
  const key = keys.loggedEvent(eventId);
  const item = (await getItems([key])).get(key.pk);
  return isLoggedEventItem(item)
    ? { event: loggedEventOf(item), body: eventBodyOf(item) }
    : undefined;
}

/** The reference's listEvents filters, all AND-composed. */
export interface EventFilter {
  readonly eventType?: EventType | undefined;
  readonly category?: EventCategory | undefined;
  /** A scope prefix. */
  readonly scope?: string | undefined;
  readonly correlationId?: string | undefined;
  readonly traceId?: string | undefined;
  readonly requestId?: string | undefined;
  /** Case-insensitive substring of the correlation id or the scope. */
  readonly search?: string | undefined;
  /** Only these categories (a tenant's listing: the tenant-accessible ones). */
  readonly categories?: readonly EventCategory[] | undefined;
}

export interface EventQuery extends EventFilter {
  /** One tenant's events; every tenant's when absent. */
  readonly tenant?: string | undefined;
  readonly fromMs: number;
  readonly toMs?: number | undefined;
  readonly newestFirst: boolean;
  readonly after?: string | undefined;
  readonly limit: number;
}

const includes = (text: unknown, part: string) =>
  typeof text === 'string' && text.toLowerCase().includes(part);

/** Whether a logged event's item passes the filter (its attributes carry every field filtered on). */
export function eventMatches(f: EventFilter, item: Item): boolean {
  const search = f.search?.toLowerCase();
  return (
    isLoggedEventItem(item) &&
    (f.eventType === undefined || item.event_type === f.eventType) &&
    (f.category === undefined || item.category === f.category) &&
    (f.categories === undefined || f.categories.includes(item.category as EventCategory)) &&
    (f.scope === undefined || (typeof item.scope === 'string' && item.scope.startsWith(f.scope))) &&
    (f.correlationId === undefined || item.correlation_id === f.correlationId) &&
    (f.traceId === undefined || item.trace_id === f.traceId) &&
    (f.requestId === undefined || item.request_id === f.requestId) &&
    (search === undefined || includes(item.correlation_id, search) || includes(item.scope, search))
  );
}

/**
 * A page of the log in time order: one tenant's is a Query of its partition of the directory
 * index (whole items: filters run on the page); every tenant's merges the event spreads of the
 * byStatus index (keys only) and reads the items back. Never a Scan.
 */
export async function queryEvents(q: EventQuery) {
  if (q.after !== undefined && !isTimePosition(q.after)) throw invalidCursor();
  const range = timeRange(q.fromMs, q.toMs);
  const matches = (item: Item) => eventMatches(q, item);
  const page =
    q.tenant !== undefined
      ? await queryPage({
          index: 'directory',
          partitionKey: 'dir_pk',
          partition: directory.events.pk(q.tenant),
          sortKey: 'dir_sk',
          lowest: range.from,
          highest: range.to,
          newestFirst: q.newestFirst,
          after: q.after,
          limit: q.limit,
          matches,
        })
      : await querySpreadPage({
          index: 'byStatus',
          partitionKey: 'status_pk',
          partitions: eventSpreads(),
          sortKey: 'list_sk',
          lowest: range.from,
          highest: range.to,
          newestFirst: q.newestFirst,
          after: q.after,
          limit: q.limit,
          read: getItems,
          matches,
        });
  return {
    events: page.items.map((item) => ({ event: loggedEventOf(item), body: eventBodyOf(item) })),
    nextPosition: page.nextPosition,
  };
}
