import type { AuditEntry } from '../domain/audit.js';
import { type Budgets, NO_BUDGETS } from '../domain/budget.js';
import type { LedgerChange } from '../domain/ledger.js';
import type { Charge, Reservation } from '../domain/reservation.js';
import type { UsageEvent } from '../domain/settlement.js';
import { placeChanges, seedOf } from './budgets/placement.js';
import { chargeItem, chargeOf, isChargeItem } from './entities/charge.js';
import { eventRefundUpdate } from './entities/event.js';
import { type IdempotencyScope, idempotencyItem } from './entities/idempotency.js';
import type { OutcomeToStore } from './entities/outcome.js';
import { chargeUpdate, parentUpdate, reservationRefundUpdate } from './entities/reservation.js';
import { putIfAbsent, type TransactItem } from './expressions.js';
import { chargesPartition } from './keys.js';
import { partitionInOrder } from './pages.js';
import { auditPut, type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

// Charges of part of an actual while a reservation is ACTIVE, and refunds of what was charged
// (docs/decisions.md § Charges, § Refunds): each is one transaction of its record's conditional
// update, its idempotency record, and one change per scope, each on the shard and in the period
// its hold (or the event's charge) is on.

interface Recorded {
  readonly idempotency: { readonly scope: IdempotencyScope; readonly outcome: OutcomeToStore };
  readonly now: number;
}

/**
 * A charge: the reservation's update (conditioned on its charges as read), the charge's
 * idempotency record, the charge itself (listed by GET …/charges), the change on every scope.
 */
export interface NewCharge extends Recorded {
  readonly reservation: Reservation;
  /** The reservation as the charge leaves it. */
  readonly charged: Reservation;
  readonly charge: Charge;
  readonly changes: readonly LedgerChange[];
  readonly budgets?: Budgets | undefined;
  /** A child's charge beyond its hold takes from its parent's: the parent as read and after. */
  readonly parent?: { readonly reservation: Reservation; readonly after: Reservation } | undefined;
}

export function chargeTransaction(n: NewCharge): GuardedTransaction {
  const r = n.reservation;
  const placed = placeChanges(n.changes, n.budgets ?? NO_BUDGETS, seedOf(r.reservationId));
  const parent = n.parent && [
    parentUpdate(n.parent.reservation, n.parent.after, { id: r.reservationId, change: 'charged' }),
  ];
  return withRecord(
    chargeUpdate(r, n.charged, n.now),
    n,
    [putIfAbsent(chargeItem(n.charge)), ...(parent ?? [])],
    placed,
  );
}

export const insertCharge = (n: NewCharge): Promise<WriteOutcome> =>
  transactWrite(chargeTransaction(n), 'settle');

/** A reservation's charges in order, after the sequence a cursor carried (strongly consistent). */
export async function queryCharges(q: {
  readonly reservationId: string;
  readonly after?: string | undefined;
  readonly limit: number;
}): Promise<{ readonly charges: Charge[]; readonly nextPosition?: string | undefined }> {
  const page = await partitionInOrder({
    partition: chargesPartition(q.reservationId),
    after: q.after,
    limit: q.limit,
  });
  return {
    charges: page.items.filter(isChargeItem).map(chargeOf),
    nextPosition: page.nextPosition,
  };
}

/** A refund of what a reservation or an event charged: its record's update goes first. */
export interface NewRefund extends Recorded {
  readonly of:
    | { readonly reservation: Reservation; readonly refunded: number }
    | { readonly event: UsageEvent; readonly refunded: number };
  readonly changes: readonly LedgerChange[];
  readonly budgets: Budgets;
  /** Every refund is audited, in its own transaction. */
  readonly audit: AuditEntry;
}

export function refundTransaction(n: NewRefund): GuardedTransaction {
  const { of } = n;
  const [record, seed] =
    'reservation' in of
      ? [reservationRefundUpdate(of.reservation, of.refunded), of.reservation.reservationId]
      : [eventRefundUpdate(of.event, of.refunded), of.event.eventId];
  const placed = placeChanges(n.changes, n.budgets, seedOf(seed));
  return withRecord(record, n, [auditPut(n.audit)], placed);
}

export const applyRefund = (n: NewRefund): Promise<WriteOutcome> =>
  transactWrite(refundTransaction(n), 'settle');

/**
 * [the record's update, the idempotency record, what else the write puts, the ledger items]: a
 * failed update reads again (stale), a failed idempotency record replays (duplicate), a failed
 * ledger condition proves what the placement says; the sharded budgets touched go with it, for
 * this process's shard cache (store/write.ts).
 */
function withRecord(
  record: TransactItem,
  n: Recorded,
  others: readonly TransactItem[],
  placed: ReturnType<typeof placeChanges>,
): GuardedTransaction {
  const { scope, outcome } = n.idempotency;
  const head = [record, putIfAbsent(idempotencyItem(scope, outcome, n.now)), ...others];
  return {
    items: [...head, ...placed.items],
    layout: {
      recordAt: 1,
      proofs: [...head.map(() => undefined), ...placed.proofs],
      // The shard cache follows: a change written moves its shard, a failed one is read afresh.
      touches: placed.touches,
    },
  };
}
