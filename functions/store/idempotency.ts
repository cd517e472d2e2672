import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { documentClient } from './client.js';
import { type IdempotencyScope, idempotencyItem, idempotencyKey } from './entities/idempotency.js';
import type { OutcomeToStore, StoredOutcome } from './entities/outcome.js';
import { putIfAbsentInput } from './expressions.js';
import { recordedOutcomeOf } from './records.js';
import { getItems } from './transact.js';
import type { WriteOutcome } from './write.js';

/** A record on its own (decide has no other effect); `duplicate` carries the one that won. */
export async function putIdempotencyRecord(
  s: IdempotencyScope,
  outcome: OutcomeToStore,
  nowMs: number,
): Promise<WriteOutcome> {
  // A plain conditional PutItem: half the write units of a one-item transaction.
  try {
    await documentClient.send(new PutCommand(putIfAbsentInput(idempotencyItem(s, outcome, nowMs))));
    return { kind: 'written' };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return {
      kind: 'duplicate',
      stored: recordedOutcomeOf(error.Item ? unmarshall(error.Item) : undefined),
    };
  }
}

/** The outcome an idempotency record keeps, or undefined when there is none. */
export async function readIdempotencyRecord(
  s: IdempotencyScope,
): Promise<StoredOutcome | undefined> {
  const key = idempotencyKey(s);
  return recordedOutcomeOf((await getItems([key])).get(key.pk));
}
