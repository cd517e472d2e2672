import { randomUUID } from 'node:crypto';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { config } from '../config/settings.js';
import { busOf, webhooksOf } from '../outbound/sinks.js';
import { runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { publishBudgetEvents } from '../use-cases/publish-budget-events.js';

export { stopWebhooks, webhookStats } from '../outbound/sinks.js';

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
    const { retryFrom } = await publishBudgetEvents(event.Records, {
      bus: config.EVENT_BUS_NAME ? busOf(config.EVENT_BUS_NAME) : undefined,
      webhooks: webhooksOf(),
      clock: Date.now,
      deadline: context && Date.now() + context.getRemainingTimeInMillis() - 5_000,
    });
    publishMetrics(invocation);
    const from = retryFrom === undefined ? undefined : event.Records[retryFrom]?.dynamodb;
    return {
      batchItemFailures: from?.SequenceNumber ? [{ itemIdentifier: from.SequenceNumber }] : [],
    };
  });
}
