import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Refusal } from '../domain/budget-events.js';
import { documentClient } from './client.js';
import { keys } from './keys.js';
import { putIfAbsentInput } from './transact.js';

/** Refusal records only feed the stream: DynamoDB's TTL deletes them a day later. */
const RETENTION_S = 86_400;

/** The refusal record of a refused reservation: one small PutItem, never part of a transaction. */
export function refusalPut(r: Refusal) {
  return putIfAbsentInput({
    ...keys.refusal(r.refusalId),
    type: 'refusal',
    refusal_id: r.refusalId,
    tenant: r.tenant,
    at_ms: r.atMs,
    reason_code: r.code,
    scope: r.scope,
    unit: r.unit,
    requested: r.requested,
    remaining: r.remaining,
    subject: r.subject,
    action: r.action,
    key_id: r.keyId,
    request_id: r.requestId,
    ...(r.suppressed > 0 && { suppressed: r.suppressed }),
    ttl: Math.floor(r.atMs / 1000) + RETENTION_S,
  });
}

export async function insertRefusal(r: Refusal): Promise<void> {
  await documentClient.send(new PutCommand(refusalPut(r)));
}
