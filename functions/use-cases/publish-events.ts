import { config } from '../config/settings.js';
import type { EventDocument } from '../domain/events.js';
import { log } from '../log.js';
import { logEvents } from '../store/event-log.js';
import { decodeStreamRecord, type StreamRecord, type TableChange } from '../store/stream.js';
import { recordMetric } from '../telemetry/invocation.js';
import { type DeliveryQueue, dispatchEvents, forgetSubscriptions } from './deliveries.js';
import { eventsOfChanges } from './derive-events.js';

// The table's stream → events (docs/decisions.md § Events and webhooks): derived, kept in the
// event log, put on the bus, and queued for the webhook subscriptions that select them. No
// delivery is made here: a slow or dead receiver never holds the stream or the bus.

/** Where events go: the bus (AWS), the delivery queue; the clock. */
export interface EventPorts {
  readonly bus?: EventBus | undefined;
  readonly queue: DeliveryQueue;
  readonly clock: () => number;
}

export interface EventBus {
  /** Puts the events; answers the indexes of those it could not put. */
  put(events: readonly EventDocument[]): Promise<ReadonlySet<number>>;
}

/**
 * The events of a batch of stream records, in stream order: logged (each once: a conditional
 * put), put on the bus, then recorded and queued as deliveries. `retryFrom`: the first record
 * whose events could not be derived, logged, put or queued; it and the records after it come
 * again (their events keep their ids, their deliveries theirs), those before it are done.
 */
export async function publishEvents(
  records: readonly StreamRecord[],
  ports: EventPorts,
): Promise<{ readonly retryFrom?: number | undefined }> {
  const changes = records.map((r) => decodeStreamRecord(r, ports.clock));
  for (const change of changes) forgetChangedSubscriptions(change);
  const derived = await eventsOfChanges(changes);
  let failedAt = derived.failedAt;
  if (failedAt !== undefined) {
    log.error('events: a record could not be read, retried from it', {
      error: derived.error,
      sequence_number: records[failedAt]?.dynamodb?.SequenceNumber,
    });
  }
  const found = derived.events.flatMap((events, record) =>
    events.map((event) => ({ record, event })),
  );
  const failAt = (record: number) => {
    failedAt = Math.min(failedAt ?? record, record);
  };
  const retentionMs = config.EVENT_RETENTION_DAYS * 86_400_000;
  try {
    await logEvents(
      found.map((f) => f.event),
      retentionMs,
    );
  } catch (error) {
    log.error('events: the event log refused a write, retried', { error });
    failAt(found[0]?.record ?? 0);
  }
  if (ports.bus && found.length > 0) {
    for (const i of await ports.bus.put(found.map((f) => f.event))) failAt(found[i]?.record ?? 0);
  }
  // Events of the records retried from `failedAt` are queued when those records come again.
  const done = found.filter((f) => failedAt === undefined || f.record < failedAt);
  try {
    await dispatchEvents(
      done.map((f) => f.event),
      ports.queue,
      ports.clock(),
      inboundFlags(changes, derived.events),
    );
  } catch (error) {
    log.error('events: deliveries could not be queued, retried', { error });
    failAt(done[0]?.record ?? 0);
  }
  report(records.length, found.length, done, failedAt);
  return { retryFrom: failedAt };
}

/**
 * The `traceparent` flags of the requests events came from, by event id, where a request came
 * with one (admin changes: their audit records keep it): deliveries preserve the sampling choice.
 */
function inboundFlags(
  changes: readonly TableChange[],
  events: readonly (readonly EventDocument[])[],
): ReadonlyMap<string, string> {
  const flags = new Map<string, string>();
  events.forEach((list, i) => {
    const change = changes[i];
    if (change?.kind !== 'audit' || change.record.traceFlags === undefined) return;
    for (const e of list) flags.set(e.event_id, change.record.traceFlags);
  });
  return flags;
}

/** A subscription created or changed: its owner's next events read the subscriptions again. */
function forgetChangedSubscriptions(change: TableChange): void {
  if (change.kind === 'audit' && change.record.resourceType === 'webhook') {
    forgetSubscriptions(change.record.tenant);
  }
}

function report(
  records: number,
  found: number,
  sent: readonly { readonly event: EventDocument }[],
  failedAt: number | undefined,
): void {
  const types: Record<string, number> = {};
  for (const { event } of sent) types[event.event_type] = (types[event.event_type] ?? 0) + 1;
  for (const [type, n] of Object.entries(types)) recordMetric('BudgetEvents', n, { Type: type });
  if (found === 0 && failedAt === undefined) return;
  log.info('events', {
    records,
    events: sent.length,
    types,
    ...(failedAt !== undefined && { retry_from: failedAt }),
  });
}
