import type { AuditEntry } from '../domain/audit.js';
import type { Budgets } from '../domain/budget.js';
import { type Caller, type Credential, requireOwnTenant } from '../domain/caller.js';
import { invalidCursor } from '../domain/cursor.js';
import {
  childScopes,
  type Delegated,
  type DelegationRequest,
  delegate,
} from '../domain/delegation.js';
import { DomainError } from '../domain/errors.js';
import { derivedId } from '../domain/fingerprint.js';
import { ledgersAfter, presentLedgers } from '../domain/ledger.js';
import { affectedScopes, type Reservation } from '../domain/reservation.js';
import { insertDelegation, queryDelegations } from '../store/delegations.js';
import { readReservation } from '../store/reservation-queries.js';
import { recordMetric } from '../telemetry/invocation.js';
import type { WriteContext } from './context.js';
import { type Page, type PageRequest, paged } from './pages.js';
import { type Lease, leaseAt, type Reserved } from './reservations.js';
import { changeReservation } from './settlements.js';

// Sub-agent budgets (docs/decisions.md § Delegations): an agent hands part of its hold to a
// child reservation, which the sub-agent extends, charges, commits and releases by its id like
// any reservation; what it does not use comes back to the parent's hold.

export type { DelegationRequest };

interface DelegationPlan {
  readonly result: Reserved;
  readonly delegated: Delegated;
  readonly audit: AuditEntry;
}

/**
 * POST /v1/reservations/{id}/delegations: one transaction moves `amount` from the parent's hold
 * to a new child reservation (and holds it on the child's own deeper scopes), conditioned on the
 * parent's hold as read. The answer is a reserve's: an unmodified SDK drives the child.
 */
export async function delegateReservation(
  caller: Caller,
  parentId: string,
  request: DelegationRequest,
  { now, requestId }: WriteContext,
): Promise<Reserved & Lease> {
  const childId = derivedId('rsv', caller.tenant, 'delegation', request.idempotencyKey);
  const lease = leaseAt(now);
  const result = await changeReservation(caller, parentId, 'delegate', request, now, {
    moreScopes: (parent) => childScopes(parent, request),
    decide: (parent, budgets): DelegationPlan => {
      const own = childScopes(parent, request);
      const delegated = delegate(parent, request, childId, own, budgets, now);
      const { child } = delegated;
      const inherited = affectedScopes(parent);
      const result: Reserved = {
        kind: 'reserved',
        reservationId: child.reservationId,
        affectedScopes: affectedScopes(child),
        scopePath: child.scopePath,
        reserved: child.reserved,
        expiresAtMs: child.expiresAtMs,
        // The parent's scopes are unchanged (the budget moved); the child's own took the hold.
        balances: [
          ...presentLedgers(inherited, child.reserved.unit, budgets),
          ...ledgersAfter(budgets, delegated.holds),
        ],
      };
      const audit: AuditEntry = {
        tenant: parent.tenant,
        actor: { kind: 'key', keyId: caller.keyId },
        requestId,
        atMs: now,
        action: 'reservation.delegate',
        reservationId: parentId,
        detail: {
          parent_reservation_id: parentId,
          child_reservation_id: child.reservationId,
          amount: child.reserved.amount,
          unit: child.reserved.unit,
          depth: child.delegation?.depth,
          scopes: affectedScopes(child),
        },
      };
      return { result, delegated, audit };
    },
    onWritten: (parent) => recordMetric('Delegations', 1, {}, parent.tenant),
    write: (parent, { delegated, audit }, idempotency, budgets: Budgets) =>
      insertDelegation({ parent, delegated, budgets, idempotency, now, audit }),
  });
  return { ...result, ...lease.of(result.expiresAtMs) };
}

/** A reservation's children, and the reservation itself. */
export interface DelegationListing {
  readonly reservation: Reservation;
  readonly page: Page<Reservation>;
}

/**
 * GET /v1/reservations/{id}/delegations: its children in the order they were made, paged (a
 * tenant's key, its own; the operator's, any tenant's).
 */
export async function listDelegations(
  reader: Credential,
  reservationId: string,
  request: PageRequest,
): Promise<DelegationListing> {
  const reservation = await readReservation(reservationId);
  if (!reservation) {
    throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  }
  if (reader.kind === 'tenant') {
    requireOwnTenant(reader, reservation.tenant, `reservation ${reservationId}`);
  }
  const page = await paged({ route: 'delegations', reservationId }, request, async (after) => {
    if (after !== undefined && !/^\d{15}$/.test(after)) throw invalidCursor();
    const found = await queryDelegations({ parentId: reservationId, after, limit: request.limit });
    return { items: found.children, nextPosition: found.nextPosition };
  });
  return { reservation, page };
}
