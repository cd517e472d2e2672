import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { refOf } from '../outbound/queue.js';
import { attemptPorts } from '../outbound/sinks.js';
import { runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { attemptDelivery, type ProbeResult, probeSubscription } from '../use-cases/deliveries.js';

/** A synchronous invocation by a /test route: one probe, answered. */
export interface ProbeInvocation {
  readonly probe: {
    readonly subscriptionId: string;
    readonly requestId: string;
    readonly traceId?: string;
  };
}

/**
 * The delivery function (docs/decisions.md § Events and webhooks): the only code that opens a
 * webhook's signing secret. SQS invokes it with batches of delivery messages; each is attempted
 * at once, side by side, so a receiver that hangs holds only its own (for at most
 * WEBHOOK_TIMEOUT_MS). A message whose delivery must be retried is made visible again after the
 * subscription's retry delay and reported failed (partial batch response): SQS brings it back
 * then. A /test probe invokes it directly.
 */
export async function handler(
  event: SQSEvent | ProbeInvocation,
): Promise<SQSBatchResponse | { result?: ProbeResult }> {
  if ('probe' in event) {
    const { subscriptionId, ...request } = event.probe;
    return { result: await probeSubscription(subscriptionId, request, attemptPorts()) };
  }
  return runInvocation(randomUUID(), async (invocation) => {
    const failures = await Promise.all(
      event.Records.map(async (record) => {
        const ref = refOf(record.body);
        if (!ref) {
          log.error('delivery message not understood, dropped', { message_id: record.messageId });
          return undefined;
        }
        try {
          const { retryInMs } = await attemptDelivery(ref, attemptPorts());
          if (retryInMs === undefined) return undefined;
          await retryAfter(record.receiptHandle, retryInMs);
        } catch (error) {
          log.error('delivery attempt failed', { error, delivery_id: ref.deliveryId });
        }
        return { itemIdentifier: record.messageId };
      }),
    );
    publishMetrics(invocation);
    return { batchItemFailures: failures.filter((f) => f !== undefined) };
  });
}

/** SQS shows a message again after its visibility timeout: set to the retry's delay (≤ 12 h). */
async function retryAfter(receiptHandle: string, delayMs: number): Promise<void> {
  const { ChangeMessageVisibilityCommand, SQSClient } = await import('@aws-sdk/client-sqs');
  client ??= new SQSClient({ region: config.AWS_REGION, maxAttempts: 3 });
  await client.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: config.WEBHOOK_QUEUE_URL,
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: Math.min(43_200, Math.max(1, Math.ceil(delayMs / 1000))),
    }),
  );
}

let client: import('@aws-sdk/client-sqs').SQSClient | undefined;
