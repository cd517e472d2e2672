import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { documentClient, tableName } from './client.js';
import { keys } from './keys.js';
import type { Item, TransactItem } from './transact.js';

/** Records outlive the SPEC's 24 h minimum; DynamoDB TTL deletes them some time after. */
export const IDEMPOTENCY_RETENTION_MS = 7 * 24 * 3_600_000;

export interface StoredResponse {
  readonly fingerprint: string;
  readonly statusCode: number;
  readonly body: unknown;
}

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
  response: StoredResponse,
  nowMs: number,
): TransactItem {
  return {
    Put: {
      TableName: tableName(),
      Item: {
        ...idempotencyKey(s),
        type: 'idempotency',
        ...storedResponseAttributes(response),
        ttl: Math.ceil((nowMs + IDEMPOTENCY_RETENTION_MS) / 1000),
      },
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'pk' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

export const storedResponseAttributes = (r: StoredResponse) => ({
  fingerprint: r.fingerprint,
  response_status: r.statusCode,
  response_body: JSON.stringify(r.body),
});

export function storedResponseOf(item: Item | undefined): StoredResponse | undefined {
  if (!item || typeof item.fingerprint !== 'string' || typeof item.response_body !== 'string')
    return undefined;
  return {
    fingerprint: item.fingerprint,
    statusCode: Number(item.response_status),
    body: JSON.parse(item.response_body),
  };
}

/** A record on its own (decide has no other effect); `duplicate` carries the one that won. */
export async function putIdempotencyRecord(
  s: IdempotencyScope,
  response: StoredResponse,
  nowMs: number,
): Promise<{ kind: 'inserted' } | { kind: 'duplicate'; stored: StoredResponse | undefined }> {
  // A plain conditional PutItem: half the write units of a one-item transaction.
  const put = idempotencyPut(s, response, nowMs).Put;
  if (!put) throw new Error('idempotencyPut builds a Put');
  try {
    await documentClient.send(new PutCommand(put));
    return { kind: 'inserted' };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return {
      kind: 'duplicate',
      stored: storedResponseOf(error.Item ? unmarshall(error.Item) : undefined),
    };
  }
}
