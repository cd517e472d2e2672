import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { documentClient } from './client.js';
import { keys } from './keys.js';
import { type Item, putIfAbsent, putIfAbsentInput, type TransactItem } from './transact.js';
import type { WriteOutcome } from './write.js';

/** Records outlive the SPEC's 24 h minimum; DynamoDB TTL deletes them some time after. */
export const IDEMPOTENCY_RETENTION_MS = 7 * 24 * 3_600_000;

/**
 * What a replay needs: the payload's fingerprint and the operation's result (a domain value,
 * rendered by the edge exactly as the first answer was).
 */
export interface StoredOutcome {
  readonly fingerprint: string;
  readonly result: unknown;
}

/** The idempotency records of operations whose effect has no item of its own to carry one. */
export interface IdempotencyScope {
  readonly tenant: string;
  readonly operation: string;
  readonly key: string;
}

export const idempotencyKey = (s: IdempotencyScope) =>
  keys.idempotency(s.tenant, s.operation, s.key);

/** Written in the same transaction as the effect it records, so it exists iff the effect does. */
export function idempotencyPut(
  s: IdempotencyScope,
  outcome: StoredOutcome,
  nowMs: number,
): TransactItem {
  return putIfAbsent(idempotencyItem(s, outcome, nowMs));
}

const idempotencyItem = (s: IdempotencyScope, outcome: StoredOutcome, nowMs: number) => ({
  ...idempotencyKey(s),
  type: 'idempotency',
  ...storedOutcomeAttributes(outcome),
  ttl: Math.ceil((nowMs + IDEMPOTENCY_RETENTION_MS) / 1000),
});

export const storedOutcomeAttributes = (o: StoredOutcome) => ({
  fingerprint: o.fingerprint,
  result: JSON.stringify(o.result),
});

/** A record of 0.1.0 (a wire body in `response_body`): its fingerprint still guards the key. */
export const UNRENDERABLE = Symbol('a 0.1.0 record: no domain result to replay');

export function storedOutcomeOf(item: Item | undefined): StoredOutcome | undefined {
  if (!item || typeof item.fingerprint !== 'string') return undefined;
  if (typeof item.result === 'string')
    return { fingerprint: item.fingerprint, result: JSON.parse(item.result) };
  if (typeof item.response_body === 'string')
    return { fingerprint: item.fingerprint, result: UNRENDERABLE };
  return undefined;
}

/** A record on its own (decide has no other effect); `duplicate` carries the one that won. */
export async function putIdempotencyRecord(
  s: IdempotencyScope,
  outcome: StoredOutcome,
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
      stored: storedOutcomeOf(error.Item ? unmarshall(error.Item) : undefined),
    };
  }
}
