import type { Amount } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import type { Ledger } from '../domain/budget.js';
import { type Credential, requireOwnTenant } from '../domain/caller.js';
import { DomainError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import { ledgersAfter } from '../domain/ledger.js';
import { refundableLeft, refundChanges } from '../domain/refunds.js';
import { tenantClosed } from '../domain/tenant.js';
import { applyRefund } from '../store/charges.js';
import { readEvent } from '../store/events.js';
import { readReservation } from '../store/reservation-queries.js';
import { getTenant } from '../store/tenants.js';
import { recordMetric } from '../telemetry/invocation.js';
import { refundableOf, refundingSource, type Snapshot } from './budget-reader.js';
import { actorOf, type WriteContext } from './context.js';
import { guardedWrite } from './guarded-write.js';
import { outcomeToStore } from './outcomes.js';

// Refunds (docs/decisions.md § Refunds): a provider refunded a failed call, or an operator
// reverses a mistaken charge. A refund raises what an agent may spend, so it takes the admin key
// or a key with budgets:write, never a runtime permission; each is audited in its own
// transaction, and the stream turns that record into a `custom.refund` event.

export interface RefundRequest {
  readonly idempotencyKey: string;
  readonly amount: Amount;
  readonly reason: string;
}

/** What was refunded, and what is left to refund; the balances of every scope refunded. */
export interface Refunded {
  readonly refundId: string;
  readonly of: { readonly kind: 'reservation' | 'event'; readonly id: string };
  readonly amount: Amount;
  readonly refundedTotal: Amount;
  readonly refundable: Amount;
  readonly balances: readonly Ledger[];
}

/** POST /v1/reservations/{id}/refunds: of its charges, or once committed of its whole actual. */
export const refundReservation = (
  writer: Credential,
  reservationId: string,
  request: RefundRequest,
  context: WriteContext,
): Promise<Refunded> => refund(writer, { reservationId }, request, context);

/** POST /v1/events/{id}/refunds: of the event's actual. */
export const refundEvent = (
  writer: Credential,
  eventId: string,
  request: RefundRequest,
  context: WriteContext,
): Promise<Refunded> => refund(writer, { eventId }, request, context);

type Target = { readonly reservationId: string } | { readonly eventId: string };

/**
 * One refund: the record refunded, its idempotency record (per tenant, like extend's) and the
 * refund's audit record in one transaction with a change on every scope charged, each where
 * the charge landed (domain/refunds.ts). The record is conditioned on what was refunded and
 * charged when read, so concurrent refunds never pass what was charged.
 */
async function refund(
  writer: Credential,
  target: Target,
  request: RefundRequest,
  { now, requestId }: WriteContext,
): Promise<Refunded> {
  const kind = 'reservationId' in target ? 'reservation' : 'event';
  const id = 'reservationId' in target ? target.reservationId : target.eventId;
  // The operator's key names no tenant: the record refunded does (its idempotency key is kept
  // under that tenant, as the tenant's own key would).
  const tenant = writer.kind === 'tenant' ? writer.tenant : await ownerOf(target);
  const idempotency = { tenant, operation: 'refund', key: request.idempotencyKey };
  const print = fingerprint({ ...target, ...request });
  const source = refundingSource(target, idempotency, tenant, now);
  return guardedWrite({
    name: 'refund',
    fingerprint: print,
    recheckReplayBeforeRefusing: true,
    read: source.read,
    repair: async (snapshot) => {
      await requireTenantNotClosed(tenant, snapshot);
      return source.repair(snapshot);
    },
    decide: (snapshot) => {
      const refundable = refundableOf(snapshot);
      if (!refundable) throw new DomainError('NOT_FOUND', `${kind} ${id} does not exist`);
      if (writer.kind === 'tenant') requireOwnTenant(writer, refundable.tenant, `${kind} ${id}`);
      const { unit } = refundable;
      if (request.amount.unit !== unit) {
        throw new DomainError(
          'UNIT_MISMATCH',
          `amount is in ${request.amount.unit}, the ${kind} in ${unit}`,
          {
            requested_unit: request.amount.unit,
            expected_unit: unit,
          },
        );
      }
      const amount = request.amount.amount;
      const changes = refundChanges(refundable, amount, snapshot.budgets);
      const refunded = refundable.refunded + amount;
      const result: Refunded = {
        refundId: derivedId('rfd', tenant, request.idempotencyKey),
        of: { kind, id },
        amount: request.amount,
        refundedTotal: { unit, amount: refunded },
        refundable: { unit, amount: refundableLeft({ ...refundable, refunded }) },
        balances: ledgersAfter(snapshot.budgets, changes),
      };
      const audit: AuditEntry = {
        tenant,
        // A named operator credential is audited under its key id and name.
        actor: actorOf(writer),
        requestId,
        atMs: now,
        ...(kind === 'reservation'
          ? { action: 'reservation.refund' as const, reservationId: id }
          : { action: 'event.refund' as const, eventId: id }),
        detail: {
          refund_id: result.refundId,
          amount,
          unit,
          reason: request.reason,
          refunded_total: refunded,
          charged: refundable.charged,
          scopes: refundable.places.map((p) => p.scope),
        },
      };
      return { result, changes, budgets: snapshot.budgets, audit, snapshot, refunded };
    },
    write: ({ result, changes, budgets, audit, snapshot, refunded }) =>
      applyRefund({
        of: snapshot.reservation
          ? { reservation: snapshot.reservation, refunded }
          : { event: snapshot.event as NonNullable<typeof snapshot.event>, refunded },
        changes,
        budgets,
        audit,
        idempotency: { scope: idempotency, outcome: outcomeToStore(print, result) },
        now,
      }),
    onWritten: ({ result }) =>
      recordMetric('Refunded', result.amount.amount, { Unit: result.amount.unit }, tenant),
  });
}

/**
 * The closed-tenant rule, as for commits (use-cases/settlements.ts): once its tenant is CLOSED, a
 * fresh refund is 409 TENANT_CLOSED, before any other error (a replay answered first, by the
 * loop). The close closes every budget before the tenant's record flips, so the budgets read show
 * it at once (and a refund landing on one closed since is refused by its condition, then read
 * again); with nothing read to refund, the tenant's record tells.
 */
async function requireTenantNotClosed(tenant: string, snapshot: Snapshot): Promise<void> {
  const budgets = [...snapshot.budgets.values()];
  const closed =
    budgets.length > 0
      ? budgets.some((b) => b.status === 'CLOSED')
      : (await getTenant(tenant))?.status === 'CLOSED';
  if (closed) throw tenantClosed(tenant);
}

/** The tenant of the record the operator refunds (404 when there is none). */
async function ownerOf(target: Target): Promise<string> {
  const found =
    'reservationId' in target
      ? await readReservation(target.reservationId)
      : await readEvent(target.eventId);
  if (!found) {
    const what =
      'reservationId' in target ? `reservation ${target.reservationId}` : `event ${target.eventId}`;
    throw new DomainError('NOT_FOUND', `${what} does not exist`);
  }
  return found.tenant;
}
