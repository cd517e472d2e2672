import type { Amount } from '../domain/amounts.js';
import type { Budgets, Ledger } from '../domain/budget.js';
import { type Caller, type Credential, requireOwnTenant } from '../domain/caller.js';
import { invalidCursor } from '../domain/cursor.js';
import { chargeIntoParent, settlesIntoParent } from '../domain/delegation.js';
import { DomainError } from '../domain/errors.js';
import { derivedId } from '../domain/fingerprint.js';
import { type LedgerChange, ledgersAfter } from '../domain/ledger.js';
import type { RequestCount } from '../domain/rate-limits.js';
import {
  type Charge,
  chargeCount,
  chargedSoFar,
  heldAmount,
  type Reservation,
} from '../domain/reservation.js';
import { reservationKeyId } from '../domain/reservation-id.js';
import { chargeChanges, requireUnit, withDebtOf } from '../domain/settlement.js';
import { insertCharge, queryCharges } from '../store/charges.js';
import { isChargePosition } from '../store/keys.js';
import { readReservation } from '../store/reservation-queries.js';
import { recordMetric } from '../telemetry/invocation.js';
import { type Page, type PageRequest, paged } from './pages.js';
import { changeReservation } from './settlements.js';

// Charges while a hold is open (docs/decisions.md § Charges): a streamed call or a long task
// spends its budget in parts. Each part is charged against what is left of the hold (beyond it,
// the reservation's overage policy applies as at commit); the reservation stays ACTIVE, and its
// commit's `actual` is the whole actual, the charges included.

export interface ChargeRequest {
  readonly idempotencyKey: string;
  readonly amount: Amount;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

/**
 * A charge's answer (stored whole with its idempotency record: no metrics or metadata, whose
 * exact JSON lives on the charge item): the charge, the running total, what is left of the hold,
 * the balances.
 */
export interface Charged {
  readonly chargeId: string;
  readonly reservationId: string;
  readonly sequence: number;
  readonly amount: Amount;
  readonly chargedTotal: Amount;
  readonly held: Amount;
  readonly balances: readonly Ledger[];
}

interface ChargePlan {
  readonly result: Charged;
  readonly changes: readonly LedgerChange[];
  /** The reservation as the charge leaves it. */
  readonly charged: Reservation;
  readonly charge: Charge;
  /** A child's charge beyond its hold takes from its parent's: the parent as read, and after. */
  readonly parent?: { readonly reservation: Reservation; readonly after: Reservation } | undefined;
}

/**
 * POST /v1/reservations/{id}/charges: spent rises and the hold falls on every scope at once,
 * each on its hold's shard and in its period; one transaction conditioned on the reservation's
 * charges as read, so concurrent charges and a commit land one after the other, each on what the
 * last left. Idempotent (its record is written in the same transaction).
 */
export function chargeReservation(
  caller: Caller,
  reservationId: string,
  request: ChargeRequest,
  now: number,
  rate?: RequestCount,
): Promise<Charged> {
  return changeReservation(caller, reservationId, 'charge', request, now, {
    rate,
    decide: (r, budgets, parent): ChargePlan => {
      const { unit, amount } = request.amount;
      let into: ChargePlan['parent'];
      let { changes, held } = { changes: [] as LedgerChange[], held: heldAmount(r) };
      if (settlesIntoParent(r, parent)) {
        requireUnit(request.amount, held.unit, 'amount');
        const c = chargeIntoParent(r, parent, amount, false, budgets);
        changes = c.changes;
        held = { unit, amount: c.childHeld };
        // Only an overage taken from the parent's hold writes the parent.
        const after = { ...parent, held: { unit, amount: c.parentHeld } };
        if (c.parentHeld !== heldAmount(parent).amount) into = { reservation: parent, after };
      } else {
        ({ changes, held } = chargeChanges(r, request.amount, budgets));
      }
      const total = { unit, amount: chargedSoFar(r) + amount };
      const sequence = chargeCount(r) + 1;
      const charged: Reservation = {
        ...r,
        held,
        charges: { count: sequence, total },
        holds: withDebtOf(r.holds, changes),
      };
      const charge: Charge = {
        chargeId: derivedId(
          'chg',
          r.tenant,
          reservationKeyId(reservationId),
          request.idempotencyKey,
        ),
        // As the reservation names itself (its hint included), whichever form was asked for.
        reservationId: r.reservationId,
        sequence,
        amount: request.amount,
        createdAtMs: now,
        metrics: request.metrics,
        metadata: request.metadata,
      };
      const result: Charged = {
        chargeId: charge.chargeId,
        reservationId: r.reservationId,
        sequence,
        amount: request.amount,
        chargedTotal: total,
        held,
        balances: ledgersAfter(budgets, changes),
      };
      return { result, changes, charged, charge, parent: into };
    },
    onWritten: (r) => recordMetric('Charges', 1, {}, r.tenant),
    write: (r, plan, idempotency, budgets: Budgets) =>
      insertCharge({
        reservation: r,
        charged: plan.charged,
        charge: plan.charge,
        changes: plan.changes,
        budgets,
        idempotency,
        parent: plan.parent,
        now,
      }),
  });
}

/** A reservation's charges, and where it stands: charged, refunded, and what it still holds. */
export interface ChargeListing {
  readonly reservation: Reservation;
  readonly page: Page<Charge>;
}

/**
 * GET /v1/reservations/{id}/charges: its charges in the order they were made, paged (a tenant's
 * key, its own; the operator's, any tenant's).
 */
export async function listCharges(
  reader: Credential,
  reservationId: string,
  request: PageRequest,
): Promise<ChargeListing> {
  const reservation = await readReservation(reservationId);
  if (!reservation)
    throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  if (reader.kind === 'tenant') {
    requireOwnTenant(reader, reservation.tenant, `reservation ${reservationId}`);
  }
  const page = await paged({ route: 'charges', reservationId }, request, async (after) => {
    if (after !== undefined && !isChargePosition(after)) throw invalidCursor();
    const found = await queryCharges({ reservationId, after, limit: request.limit });
    // The reservation's id as it answers it: the charge's key holds only its key id.
    const items = found.charges.map((c) => ({ ...c, reservationId: reservation.reservationId }));
    return { items, nextPosition: found.nextPosition };
  });
  return { reservation, page };
}

/** What a reservation holds now: nothing once it is no longer ACTIVE. */
export const holdingNow = (r: Reservation): Amount =>
  r.status === 'ACTIVE' ? heldAmount(r) : { unit: r.reserved.unit, amount: 0 };
