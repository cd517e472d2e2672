import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Refusal } from '../domain/budget-events.js';
import { documentClient } from './client.js';
import { refusalItem } from './entities/refusal.js';
import { putIfAbsentInput } from './expressions.js';

/** The refusal record of a refused reservation: one small PutItem, never part of a transaction. */
export async function insertRefusal(r: Refusal): Promise<void> {
  await documentClient.send(new PutCommand(putIfAbsentInput(refusalItem(r))));
}
