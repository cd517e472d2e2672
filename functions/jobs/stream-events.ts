import { randomUUID } from 'node:crypto';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { webhookSecret } from '../config/secrets.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { busOf, deliveryQueue, webhookPorts } from '../outbound/sinks.js';
import { runInvocation } from '../telemetry/invocation.js';
import { publishEvents } from '../use-cases/publish-events.js';
import { bootstrapSubscriptions } from '../use-cases/webhooks.js';

/**
 * The table's stream → events (docs/decisions.md § Events and webhooks). In AWS an event source
 * mapping invokes it with batches of records (bisected on error, partial failures reported, a
 * DLQ for what never goes through); it logs each event, puts it on the stack's bus and queues
 * its webhook deliveries (SQS). The local runner feeds it the same records from DynamoDB Local's
 * stream (infra/local/stream-poller.ts). Its first batch first makes sure the environment's
 * bootstrap subscriptions (WEBHOOK_URLS) exist.
 */
export function handler(
  event: DynamoDBStreamEvent,
  _context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<DynamoDBBatchResponse> {
  // One telemetry invocation per batch: its DynamoDB calls and the events it published.
  return runInvocation(randomUUID(), async () => {
    await bootstrapOnce();
    const { retryFrom } = await publishEvents(event.Records, {
      bus: config.EVENT_BUS_NAME ? busOf(config.EVENT_BUS_NAME) : undefined,
      queue: deliveryQueue(),
      clock: Date.now,
    });
    const from = retryFrom === undefined ? undefined : event.Records[retryFrom]?.dynamodb;
    return {
      batchItemFailures: from?.SequenceNumber ? [{ itemIdentifier: from.SequenceNumber }] : [],
    };
  });
}

let bootstrapped: Promise<void> | undefined;

/** WEBHOOK_URLS → the operator's subscriptions, once per process (idempotent across them). */
export function bootstrapOnce(): Promise<void> {
  if (config.WEBHOOK_URLS.length === 0) return Promise.resolve();
  bootstrapped ??= webhookSecret()
    .then((secret) =>
      bootstrapSubscriptions(
        config.WEBHOOK_URLS,
        secret,
        { now: Date.now(), requestId: 'bootstrap' },
        webhookPorts(),
      ),
    )
    .catch((error: unknown) => {
      bootstrapped = undefined; // tried again with the next batch
      log.error('webhook bootstrap failed', { error });
    });
  return bootstrapped;
}
