import type { LedgerChange } from '../domain/ledger.js';
import { tableName } from './client.js';
import { type StoredResponse, storedResponseAttributes, storedResponseOf } from './idempotency.js';
import { keys } from './keys.js';
import { ledgerUpdate } from './ledgers.js';
import { conditionFailedAt, type Item, type TransactItem, transact } from './transact.js';

export interface NewEvent {
  readonly eventId: string;
  readonly tenant: string;
  readonly record: Record<string, unknown>;
  readonly charges: readonly LedgerChange[];
  readonly response: StoredResponse;
}

export type EventOutcome =
  | { readonly kind: 'applied' }
  | { readonly kind: 'duplicate'; readonly stored: StoredResponse | undefined }
  | {
      readonly kind: 'refused';
      readonly refused: readonly { readonly index: number; readonly item: Item | undefined }[];
    };

/** The debit on every scope and the event record (its own idempotency record): scopes + 1 items. */
export function eventTransaction(e: NewEvent): TransactItem[] {
  return [
    ...e.charges.map(ledgerUpdate),
    {
      Put: {
        TableName: tableName(),
        Item: {
          ...keys.event(e.eventId),
          type: 'event',
          event_id: e.eventId,
          tenant: e.tenant,
          ...e.record,
          ...storedResponseAttributes(e.response),
        },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
  ];
}

export async function insertEvent(e: NewEvent): Promise<EventOutcome> {
  const outcome = await transact(eventTransaction(e));
  if (outcome.kind === 'committed') return { kind: 'applied' };
  const record = outcome.reasons[e.charges.length];
  if (record?.code === 'ConditionalCheckFailed')
    return { kind: 'duplicate', stored: storedResponseOf(record.item) };
  const refused = e.charges.flatMap((_, index) =>
    conditionFailedAt(outcome.reasons, index)
      ? [{ index, item: outcome.reasons[index]?.item }]
      : [],
  );
  return { kind: 'refused', refused };
}
