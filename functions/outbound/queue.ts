import type { SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config/settings.js';
import type { DeliveryQueue, DeliveryRef } from '../use-cases/deliveries.js';

/**
 * The delivery queue (docs/decisions.md § Events and webhooks). In AWS an SQS queue: the stream
 * consumer and replays send one message per delivery, the delivery function consumes them
 * (bounded concurrency, partial batch failures, a dead-letter queue). Locally the runner's
 * worker (infra/local/delivery-worker.ts) registers itself here and plays the same part.
 */

/** A message names its delivery record; everything else is read from the table. */
export const messageOf = (r: DeliveryRef): string =>
  JSON.stringify({ s: r.subscriptionId, c: r.createdAtMs, d: r.deliveryId });

export function refOf(body: string): DeliveryRef | undefined {
  try {
    const m = JSON.parse(body) as { s?: unknown; c?: unknown; d?: unknown };
    if (typeof m.s !== 'string' || typeof m.c !== 'number' || typeof m.d !== 'string')
      return undefined;
    return { subscriptionId: m.s, createdAtMs: m.c, deliveryId: m.d };
  } catch {
    return undefined;
  }
}

/** SQS takes at most 10 messages per SendMessageBatch, and a delay of at most 15 minutes. */
const PER_CALL = 10;
const MAX_DELAY_S = 900;

let sqs: Promise<SQSClient> | undefined;
const sqsClient = () =>
  (sqs ??= import('@aws-sdk/client-sqs').then(
    ({ SQSClient }) => new SQSClient({ region: config.AWS_REGION, maxAttempts: 3 }),
  ));

export function sqsQueue(queueUrl: string): DeliveryQueue {
  return {
    async send(refs, delayMs = 0) {
      const { SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
      const client = await sqsClient();
      let sent = 0;
      for (let i = 0; i < refs.length; i += PER_CALL) {
        const batch = refs.slice(i, i + PER_CALL);
        const out = await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: batch.map((r, k) => ({
              Id: String(k),
              MessageBody: messageOf(r),
              DelaySeconds: Math.min(MAX_DELAY_S, Math.ceil(delayMs / 1000)),
            })),
          }),
        );
        sent += out.Successful?.length ?? 0;
        if ((out.Failed?.length ?? 0) > 0) {
          throw new Error(`SQS refused ${out.Failed?.length} of ${batch.length} delivery messages`);
        }
      }
      return sent;
    },
  };
}

let local: DeliveryQueue | undefined;

/** The local runner's worker takes the queue's part in this process. */
export function useLocalQueue(queue: DeliveryQueue | undefined): void {
  local = queue;
}

/** A queue that drops everything: a process with neither (a tool, a test without a worker). */
const nowhere: DeliveryQueue = { send: async () => 0 };

/** The process's queue: SQS when WEBHOOK_QUEUE_URL is set, else the local worker's. */
export const deliveryQueue = (): DeliveryQueue =>
  config.WEBHOOK_QUEUE_URL ? sqsQueue(config.WEBHOOK_QUEUE_URL) : (local ?? nowhere);
