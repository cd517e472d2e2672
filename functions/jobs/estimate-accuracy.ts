import { randomUUID } from 'node:crypto';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { serverNow } from '../clock.js';
import { log } from '../log.js';
import { runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { aggregateAccuracy } from '../use-cases/estimate-accuracy.js';

/**
 * The table's stream → estimate accuracy (docs/decisions.md § Estimate accuracy). In AWS an event
 * source mapping of its own invokes it with the reservations that left ACTIVE, in large batches
 * (the figures are statistics: a few seconds late is fine, fewer writes is better); locally the
 * runner's stream poller feeds it the same records. A batch is added whole or not at all: on a
 * failure it is delivered again, and its transactions' tokens keep what was added from being
 * added twice.
 */
export function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  return runInvocation(randomUUID(), async (invocation) => {
    try {
      // Server time: a kind idle for a week gives its place (tests move the clock instead).
      const { settled } = await aggregateAccuracy(event.Records, serverNow);
      if (settled > 0) log.info('estimate accuracy', { records: event.Records.length, settled });
      return { batchItemFailures: [] };
    } catch (error) {
      log.error('estimate accuracy: the batch is retried', { error });
      const first = event.Records[0]?.dynamodb?.SequenceNumber;
      return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
    } finally {
      publishMetrics(invocation);
    }
  });
}
