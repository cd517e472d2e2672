import type { BudgetEvent } from '../domain/budget-events.js';
import { log } from '../log.js';
import { decodeStreamRecord, type StreamRecord } from '../store/stream.js';
import { recordMetric } from '../telemetry/invocation.js';
import { budgetEventsOf } from './budget-events.js';

// The table's stream → budget events → the outbound edge (docs/decisions.md § Budget events).
// The edge's adapters (functions/outbound) are handed in as ports, so this reads top to bottom
// as what happens to a batch, and a test can stand in for the bus and the webhooks.

/** Where budget events go: the bus, webhooks; the clock; and when a batch must be done. */
export interface EventPorts {
  readonly bus?: EventBus | undefined;
  readonly webhooks?: EventWebhooks | undefined;
  readonly clock: () => number;
  /** Epoch ms: deliveries still pending then are left to go on (in Lambda: before the timeout). */
  readonly deadline?: number | undefined;
}

export interface EventBus {
  /** Puts the events; answers the indexes of those it could not put. */
  put(events: readonly BudgetEvent[]): Promise<ReadonlySet<number>>;
}

export interface EventWebhooks {
  /** Queues each event for every receiver and returns at once. */
  enqueue(events: readonly BudgetEvent[]): void;
  /** Resolves true once nothing is pending, false at `deadline`. */
  idle(deadline: number): Promise<boolean>;
  /** Deliveries given up on since the last call (retries exhausted, refused, queue full). */
  takeDropped(): number;
  stats(): Readonly<Record<string, number>>;
}

/**
 * Publishes the budget events of a batch of stream records, in stream order: to the bus, then
 * (those the bus took, or all without a bus) to the webhooks. `retryFrom`: the first record whose
 * events could not be derived or put; it and the records after it are delivered again (their
 * events keep their ids), those before it are done.
 */
export async function publishBudgetEvents(
  records: readonly StreamRecord[],
  ports: EventPorts,
): Promise<{ readonly retryFrom?: number | undefined }> {
  const derived = await budgetEventsOf(records.map((r) => decodeStreamRecord(r, ports.clock)));
  let failedAt = derived.failedAt;
  if (failedAt !== undefined) {
    log.error('budget events: a record could not be read, retried from it', {
      error: derived.error,
      sequence_number: records[failedAt]?.dynamodb?.SequenceNumber,
    });
  }
  const found = derived.events.flatMap((events, record) =>
    events.map((event) => ({ record, event })),
  );
  if (ports.bus && found.length > 0) {
    for (const i of await ports.bus.put(found.map((f) => f.event))) {
      const record = found[i]?.record ?? 0;
      failedAt = Math.min(failedAt ?? record, record);
    }
  }
  // Events of the records retried from `failedAt` are sent when those records come again.
  const sent = found.filter((f) => failedAt === undefined || f.record < failedAt);
  const { webhooks } = ports;
  if (webhooks && sent.length > 0) {
    webhooks.enqueue(sent.map((f) => f.event));
    // A Lambda is frozen once it returns: deliveries finish first (bounded by their retries).
    if (ports.deadline !== undefined) await webhooks.idle(ports.deadline);
  }
  report(records.length, found.length, sent, failedAt, webhooks);
  return { retryFrom: failedAt };
}

function report(
  records: number,
  found: number,
  sent: readonly { readonly event: BudgetEvent }[],
  failedAt: number | undefined,
  webhooks: EventWebhooks | undefined,
): void {
  const types: Record<string, number> = {};
  for (const { event } of sent) types[event.type] = (types[event.type] ?? 0) + 1;
  for (const [type, n] of Object.entries(types)) recordMetric('BudgetEvents', n, { Type: type });
  const dropped = webhooks?.takeDropped() ?? 0;
  if (dropped > 0) recordMetric('WebhookDeliveriesDropped', dropped, {});
  if (found === 0 && failedAt === undefined) return;
  log.info('budget events', {
    records,
    events: sent.length,
    types,
    ...(failedAt !== undefined && { retry_from: failedAt }),
    ...(webhooks && { webhooks: webhooks.stats() }),
  });
}
