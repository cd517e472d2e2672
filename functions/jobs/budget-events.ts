import { randomUUID } from 'node:crypto';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { putOnBus } from '../budget-events/eventbridge.js';
import { budgetEventMessage } from '../budget-events/render.js';
import type { BudgetEventMessage } from '../budget-events/schemas.js';
import { WebhookDispatcher } from '../budget-events/webhooks.js';
import { webhookSecret } from '../config/secrets.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { decodeStreamRecord } from '../store/stream.js';
import { recordMetric, runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { budgetEventsOf } from '../use-cases/budget-events.js';

/**
 * The table's stream → budget events (docs/decisions.md § Budget events). In AWS an event source
 * mapping invokes it with batches of records (bisected on error, partial failures reported, a
 * DLQ for what never goes through) and it puts the events on the stack's bus; the local runner
 * feeds it the same records from DynamoDB Local's stream (infra/local/stream-poller.ts). With
 * WEBHOOK_URLS it also POSTs them, signed, to each URL.
 */
export function handler(
  event: DynamoDBStreamEvent,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<DynamoDBBatchResponse> {
  // One telemetry invocation per batch: its DynamoDB calls and the events it published.
  return runInvocation(randomUUID(), async (invocation) => {
    const response = await handleBatch(event, context);
    publishMetrics(invocation);
    return response;
  });
}

async function handleBatch(
  event: DynamoDBStreamEvent,
  context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
): Promise<DynamoDBBatchResponse> {
  const records = event.Records;
  const derived = await budgetEventsOf(records.map(decodeStreamRecord));
  let failedAt = derived.failedAt;
  if (failedAt !== undefined) {
    log.error('budget events: a record could not be read, retried from it', {
      error: derived.error,
      sequence_number: records[failedAt]?.dynamodb?.SequenceNumber,
    });
  }
  const messages = derived.events.flatMap((events, record) =>
    events.map((e) => ({ record, message: budgetEventMessage(e) })),
  );
  if (config.EVENT_BUS_NAME && messages.length > 0) {
    const failed = await putOnBus(
      config.EVENT_BUS_NAME,
      messages.map((m) => m.message),
    );
    for (const i of failed) {
      const record = messages[i]?.record ?? 0;
      failedAt = Math.min(failedAt ?? record, record);
    }
  }
  // Events of the records retried from `failedAt` are sent when those records come again.
  const sent = messages.filter((m) => failedAt === undefined || m.record < failedAt);
  const hooks = webhooks();
  if (hooks && sent.length > 0) {
    hooks.enqueue(sent.map(({ message }) => delivery(message)));
    // A Lambda is frozen once it returns: deliveries finish first (bounded by their retries).
    if (context) await hooks.idle(Date.now() + context.getRemainingTimeInMillis() - 5_000);
  }
  const types = countBy(sent.map((m) => m.message.event_type));
  for (const [type, n] of Object.entries(types)) recordMetric('BudgetEvents', n, { Type: type });
  const dropped = hooks ? hooks.stats().dropped - droppedReported : 0;
  if (dropped > 0) {
    droppedReported += dropped;
    recordMetric('WebhookDeliveriesDropped', dropped, {});
  }
  if (messages.length > 0 || failedAt !== undefined) {
    log.info('budget events', {
      records: records.length,
      events: sent.length,
      types,
      ...(failedAt !== undefined && { retry_from: failedAt }),
      ...(hooks && { webhooks: hooks.stats() }),
    });
  }
  const retryFrom = failedAt === undefined ? undefined : records[failedAt]?.dynamodb;
  return {
    batchItemFailures: retryFrom?.SequenceNumber
      ? [{ itemIdentifier: retryFrom.SequenceNumber }]
      : [],
  };
}

const delivery = (m: BudgetEventMessage) => ({
  eventId: m.event_id,
  eventType: m.event_type,
  body: JSON.stringify(m),
});

const countBy = (values: readonly string[]) => {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
};

let dispatcher: WebhookDispatcher | undefined;
/** Drops already counted in a WebhookDeliveriesDropped metric (deliveries outlive batches). */
let droppedReported = 0;

/** The process's webhook dispatcher, when WEBHOOK_URLS names any. */
function webhooks(): WebhookDispatcher | undefined {
  if (config.WEBHOOK_URLS.length === 0) return undefined;
  dispatcher ??= new WebhookDispatcher({
    urls: config.WEBHOOK_URLS,
    secret: webhookSecret,
    maxRetries: config.WEBHOOK_MAX_RETRIES,
    initialDelayMs: config.WEBHOOK_RETRY_INITIAL_MS,
    maxDelayMs: config.WEBHOOK_RETRY_MAX_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    log,
  });
  return dispatcher;
}

/** The local runner's shutdown: pending deliveries are abandoned. */
export function stopWebhooks(): void {
  dispatcher?.stop();
}

/** Local runner and tests: what the dispatcher has done so far. */
export const webhookStats = () => dispatcher?.stats();
