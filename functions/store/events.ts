import type { Amount } from '../domain/amounts.js';
import { type Budgets, NO_BUDGETS } from '../domain/budget.js';
import { exactJson } from '../domain/json.js';
import type { LedgerChange, OveragePolicy } from '../domain/ledger.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { outcomeAttributesOf, type StoredOutcome } from './idempotency.js';
import { keys } from './keys.js';
import { ledgerUpdate } from './ledgers.js';
import { placeChanges, seedOf } from './shards.js';
import { type Item, putIfAbsent, type TransactItem } from './transact.js';
import { type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

export interface NewEvent {
  readonly eventId: string;
  readonly tenant: string;
  readonly createdAtMs: number;
  readonly subject: Subject;
  readonly action: Action;
  readonly actual: Amount;
  readonly scopes: readonly string[];
  readonly overagePolicy: OveragePolicy;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly clientTimeMs?: number | undefined;
  readonly charges: readonly LedgerChange[];
  readonly outcome: StoredOutcome;
  /** The budgets of the scopes, as read: a sharded one's changes are placed on its shards. */
  readonly budgets?: Budgets | undefined;
}

/** The debit on every scope and the event record (its own idempotency record): scopes + 1 items. */
export function eventTransaction(e: NewEvent, attempt = 0): GuardedTransaction {
  const placed = placeChanges(
    e.charges,
    e.budgets ?? NO_BUDGETS,
    seedOf(e.eventId, attempt),
    ledgerUpdate,
  );
  const record: Item = {
    ...keys.event(e.eventId),
    type: 'event',
    event_id: e.eventId,
    tenant: e.tenant,
    created_at_ms: e.createdAtMs,
    subject: e.subject,
    action: e.action,
    unit: e.actual.unit,
    actual: e.actual.amount,
    scopes: e.scopes,
    overage_policy: e.overagePolicy,
    // As JSON text: exact numbers and any keys survive (DynamoDB maps would refuse them).
    ...(e.metrics !== undefined && { metrics_json: exactJson(e.metrics) }),
    ...(e.metadata !== undefined && { metadata_json: exactJson(e.metadata) }),
    client_time_ms: e.clientTimeMs,
  };
  const items: TransactItem[] = [
    ...placed.items,
    putIfAbsent({ ...record, ...outcomeAttributesOf(record, e.outcome) }),
  ];
  return { items, layout: { recordAt: placed.items.length, proofs: placed.proofs } };
}

export function insertEvent(e: NewEvent): Promise<WriteOutcome> {
  return transactWrite((attempt) => eventTransaction(e, attempt));
}
