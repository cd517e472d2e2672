import { type Budgets, NO_BUDGETS } from '../domain/budget.js';
import type { LedgerChange } from '../domain/ledger.js';
import type { UsageEvent } from '../domain/settlement.js';
import { placeChanges, seedOf } from './budgets/placement.js';
import { eventItem, eventOf, isEventItem } from './entities/event.js';
import type { OutcomeToStore } from './entities/outcome.js';
import { putIfAbsent, type TransactItem } from './expressions.js';
import { keys } from './keys.js';
import { getItems } from './transact.js';
import { type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

export interface NewEvent {
  readonly event: UsageEvent;
  readonly charges: readonly LedgerChange[];
  readonly outcome: OutcomeToStore;
  /** The budgets of the scopes, as read: a sharded one's changes are placed on its shards. */
  readonly budgets?: Budgets | undefined;
}

/** The debit on every scope and the event record (its own idempotency record): scopes + 1 items. */
export function eventTransaction(
  e: NewEvent,
  attempt = 0,
): GuardedTransaction & { exact: boolean } {
  const placed = placeChanges(e.charges, e.budgets ?? NO_BUDGETS, seedOf(e.event.eventId, attempt));
  const items: TransactItem[] = [...placed.items, putIfAbsent(eventItem(e.event, e.outcome))];
  return {
    items,
    layout: { recordAt: placed.items.length, proofs: placed.proofs, touches: placed.touches },
    exact: placed.exact,
  };
}

/** A charge that rewrites a sharded budget whole is not sent again after a conflict: read again. */
export function insertEvent(e: NewEvent): Promise<WriteOutcome> {
  return transactWrite((attempt) => {
    const t = eventTransaction(e, attempt);
    return attempt > 0 && t.exact ? undefined : t;
  });
}

/** The event, or undefined when it never existed (strongly consistent). */
export async function readEvent(eventId: string): Promise<UsageEvent | undefined> {
  const key = keys.event(eventId);
  const item = (await getItems([key])).get(key.pk);
  return isEventItem(item) ? eventOf(item) : undefined;
}
