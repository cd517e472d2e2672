import type { Unit } from '../domain/amounts.js';
import type { Budgets } from '../domain/budget.js';
import type { Reservation } from '../domain/reservation.js';
import type { UsageEvent } from '../domain/settlement.js';
import { budgetsOf, ledgerKeys, readHeldShards } from './budgets/read.js';
import { mark } from './budgets/shard-cache.js';
import { eventOf, isEventItem } from './entities/event.js';
import { type IdempotencyScope, idempotencyKey } from './entities/idempotency.js';
import type { StoredOutcome } from './entities/outcome.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import type { Key } from './expressions.js';
import { keys } from './keys.js';
import { recordedOutcomeOf, settledOutcome } from './records.js';
import { getItems } from './transact.js';

export interface SnapshotRequest {
  readonly reservationId?: string | undefined;
  readonly eventId?: string | undefined;
  readonly idempotency?: IdempotencyScope | undefined;
  /**
   * The operation keeps its outcome on the reservation (commit, release: store/records.ts
   * `settledOutcome`), so the idempotency record is not read.
   */
  readonly outcomeOnReservation?: boolean | undefined;
  readonly budgets?: { readonly scopes: readonly string[]; readonly unit: Unit } | undefined;
  /**
   * Read sharded budgets at one instant (TransactGetItems), as a refusal must be: a
   * BatchGetItem sees each shard at its own moment.
   */
  readonly atomic?: boolean | undefined;
}

export interface Snapshot {
  /** The outcome stored with the reservation, event or idempotency record asked for. */
  readonly replay?: StoredOutcome | undefined;
  readonly reservation?: Reservation | undefined;
  /** The event asked for (`eventId`), when it exists. */
  readonly event?: UsageEvent | undefined;
  /** The budgets read, as stored (a rolling one may be due to roll over), by budgetKey. */
  readonly budgets: Budgets;
  /** Whether the budgets are one instant's (always, unless a sharded budget was batch-read). */
  readonly atomic: boolean;
}

/**
 * Everything an operation must know before it writes, in one strongly consistent
 * BatchGetItem: the record a replay would find, the reservation, and the budgets.
 */
export async function readSnapshot(r: SnapshotRequest): Promise<Snapshot> {
  const wanted: Key[] = [];
  if (r.reservationId) wanted.push(keys.reservation(r.reservationId));
  if (r.eventId) wanted.push(keys.event(r.eventId));
  const record = r.idempotency && !r.outcomeOnReservation ? r.idempotency : undefined;
  if (record) wanted.push(idempotencyKey(record));
  const mode = r.atomic === true ? 'atomic' : 'batch';
  if (r.budgets) wanted.push(...ledgerKeys(r.budgets.scopes, r.budgets.unit, mode));
  const readAt = mark();
  const items = await getItems(wanted);
  const reservationItem = r.reservationId
    ? items.get(keys.reservation(r.reservationId).pk)
    : undefined;
  const reservation = isReservationItem(reservationItem)
    ? reservationOf(reservationItem)
    : undefined;
  if (reservation && mode === 'batch') await readHeldShards(items, reservation);
  const { budgets, atomic } = await budgetsOf(items, mode, readAt);
  const eventItem = r.eventId ? items.get(keys.event(r.eventId).pk) : undefined;
  const recordItem = r.idempotency
    ? record && items.get(idempotencyKey(record).pk)
    : (eventItem ?? reservationItem);
  return {
    // Commit and release outcomes live on the reservation; records of 0.2 and before apart.
    replay:
      recordedOutcomeOf(recordItem) ??
      (r.idempotency &&
        settledOutcome(reservationItem, r.idempotency.operation, r.idempotency.key)),
    reservation,
    event: isEventItem(eventItem) ? eventOf(eventItem) : undefined,
    budgets,
    atomic,
  };
}
