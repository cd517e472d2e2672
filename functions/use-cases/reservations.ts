import type { Amount } from '../domain/amounts.js';
import { type Budgets, budgetAt, type Ledger } from '../domain/budget.js';
import type { Caller } from '../domain/caller.js';
import type { Caps } from '../domain/caps.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import {
  holdChange,
  inPeriodsOf,
  ledgersAfter,
  type OveragePolicy,
  presentLedgers,
} from '../domain/ledger.js';
import { DEFAULT_OVERAGE_POLICY, DEFAULT_TTL_MS, type Terms } from '../domain/policies.js';
import type { RequestCount } from '../domain/rate-limits.js';
import { isRefusal, type ReasonCode, refusalError } from '../domain/refusals.js';
import { type Action, affectedScopes, type Reservation } from '../domain/reservation.js';
import { reservationIdOf } from '../domain/reservation-id.js';
import type { Subject } from '../domain/scopes.js';
import { insertReservation } from '../store/reservation-writes.js';
import { recordMetric } from '../telemetry/invocation.js';
import { type Admission, admit, denyReason } from './admission.js';
import { decideOnRead, guardedWrite } from './guarded-write.js';
import { outcomeToStore, type ResultCodec } from './outcomes.js';

export interface ReservationRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly estimate: Amount;
  /** Absent: a policy's default, the tenant's, else 60 s (domain/policies.ts termsOf). */
  readonly ttlMs?: number | undefined;
  readonly gracePeriodMs: number;
  /** Absent: a policy's default, the tenant's, else REJECT. */
  readonly overagePolicy?: OveragePolicy | undefined;
  readonly dryRun: boolean;
  readonly metadata?: Record<string, unknown> | undefined;
}

/** Where a live reservation or a dry run applies, and the balances as it leaves them. */
interface Placement {
  readonly affectedScopes: readonly string[];
  readonly scopePath: string;
  readonly reserved: Amount;
  readonly balances: readonly Ledger[];
  /** Present: ALLOW_WITH_CAPS, the caps of the affected budgets merged (domain/caps.ts). */
  readonly caps?: Caps;
}
export interface Reserved extends Placement {
  readonly kind: 'reserved';
  readonly reservationId: string;
  readonly expiresAtMs: number;
}
export interface DryRun extends Placement {
  readonly kind: 'dryRun';
  readonly refusal?: ReasonCode | undefined;
}

/**
 * The time a live reservation has left, observed as the answer is made: volatile, never
 * stored with a result, recomputed on a replay and 0 once the reservation is no longer ACTIVE
 * (the reference's `remaining_ttl_ms`; the SDK schedules its heartbeat from it).
 */
export interface Lease {
  readonly remainingTtlMs: number;
}

/** POST /v1/reservations: one read of the budgets, then one transaction of scopes + 1 items. */
export async function createReservation(
  caller: Caller,
  request: ReservationRequest,
  now: number,
  requestId?: string,
  rate?: RequestCount,
): Promise<(Reserved & Lease) | DryRun> {
  const work = { ...request, amount: request.estimate };
  const admission = await admit(caller, work, now, requestId, rate);
  if (request.dryRun) return dryRun(admission, request);
  const reservationId = derivedId('rsv', caller.tenant, request.idempotencyKey);
  // Of what was sent, SPEC's defaults filled in: a retry matches whatever the tenant's settings
  // or policies became meanwhile (and fingerprints stay those of requests made before them).
  const print = fingerprint({
    ...request,
    ttlMs: request.ttlMs ?? DEFAULT_TTL_MS,
    overagePolicy: request.overagePolicy ?? DEFAULT_OVERAGE_POLICY,
  });
  const terms = admission.terms(request);
  const lease = leaseAt(now);
  let reads = 0;
  let recordRead = false;
  const reserved = await guardedWrite({
    name: 'reservation',
    fingerprint: print,
    codec: reservedCodec,
    // The first read is of the budgets alone: a retry's record is met by the write (its Put
    // fails, returning it) or, before a refusal, read then (docs/decisions.md § One read per
    // operation). Every later read looks for it too.
    read: (atomic) => {
      recordRead = reads++ > 0;
      return admission.read(recordRead ? { reservationId } : {}, atomic);
    },
    recheckReplayBeforeRefusing: true,
    // A repair that writes (a period rolled over, expired holds freed) waits for the record's
    // read: a replay writes nothing.
    repair: async (snapshot) =>
      (!recordRead && !admission.repairsNothing(snapshot)) || admission.repair(snapshot),
    decide: (snapshot) => {
      const { caps, scopes } = admission.allow(snapshot);
      const { budgets } = snapshot;
      const placed = { ...request, ...terms };
      const reservation = newReservation(
        caller,
        placed,
        // Its id names its budgets, so its settlement reads them with it (domain/reservation-id.ts).
        reservationIdOf(reservationId, caller.tenant, scopes.at(-1) ?? '', request.estimate.unit),
        admission,
        scopes,
        budgets,
        now,
      );
      const { unit, amount } = request.estimate;
      // A hold on a rolling budget is conditioned on its period still being the one read.
      const holds = inPeriodsOf(
        scopes.map((scope) => holdChange(scope, unit, amount)),
        budgets,
      );
      const result: Reserved = {
        kind: 'reserved',
        ...placementOf(admission, scopes, request, ledgersAfter(budgets, holds)),
        reservationId: reservation.reservationId,
        expiresAtMs: reservation.expiresAtMs,
        // Stored with the result, so a replay answers the same decision and caps.
        ...(caps && { caps }),
      };
      return { result, reservation, holds, budgets, scopes };
    },
    write: ({ result, reservation, holds, budgets }) =>
      insertReservation({
        reservation,
        holds,
        budgets,
        outcome: outcomeToStore(print, result, reservedCodec, { reservation }),
      }),
    // The budgets changed since the read: the condition that failed names the scope.
    refusalOf: (refused, plan) => admission.refusalOnWrite(refused, plan.scopes),
    onReplay: (snapshot, written) => lease.onReplay(snapshot, written),
    onWritten: ({ result }) =>
      recordMetric('Reservations', 1, { Decision: result.caps ? 'ALLOW_WITH_CAPS' : 'ALLOW' }),
  }).catch(async (error: unknown) => {
    if (isRefusal(error)) recordMetric('Reservations', 1, { Decision: 'DENY' });
    await admission.report(error);
    throw error;
  });
  return { ...reserved, ...lease.of(reserved.expiresAtMs) };
}

/**
 * A reserve's result, stored beside its reservation: the balances and caps; the reservation
 * holds the rest (its scopes, estimate, id and first expiry).
 */
export const reservedCodec: ResultCodec<Reserved> = {
  compact: ({ balances, caps }) => ({ balances, ...(caps && { caps }) }),
  expand: ({ balances, caps }, { reservation: r }) => {
    if (!r) throw new Error('a reserve outcome off its reservation');
    return {
      kind: 'reserved',
      affectedScopes: affectedScopes(r),
      scopePath: r.scopePath,
      reserved: r.reserved,
      reservationId: r.reservationId,
      expiresAtMs: r.createdAtMs + r.ttlMs,
      balances,
      ...(caps !== undefined && { caps: caps as Caps }),
    };
  },
};

/**
 * SPEC rule 3: evaluated like a live reservation; nothing persisted, no id or expiry. A closed
 * tenant is a DENY with reason TENANT_CLOSED, never 409 (the reference's closed-tenant rule).
 */
async function dryRun(admission: Admission, request: ReservationRequest): Promise<DryRun> {
  admission.requireNotSuspended();
  const { budgets, judgement } = await decideOnRead({
    read: (atomic) => admission.read({}, atomic),
    repair: admission.repair,
    decide: (snapshot) => ({ budgets: snapshot.budgets, judgement: admission.judge(snapshot) }),
  });
  const { refusal, caps, scopes } = judgement;
  // A DENY is a denial as a live reserve's 409 is (reservation.denied; the reference's too).
  if (refusal) await admission.report(refusalError(refusal));
  const balances = presentLedgers(scopes, admission.unit, budgets);
  return {
    kind: 'dryRun',
    ...placementOf(admission, scopes, request, balances),
    refusal: denyReason(judgement),
    ...(caps && { caps }),
  };
}

/** `scopes`: those the work lands on, the affected_scopes answered. */
const placementOf = (
  admission: Admission,
  scopes: readonly string[],
  request: ReservationRequest,
  balances: readonly Ledger[],
): Omit<Placement, 'caps'> => ({
  affectedScopes: scopes,
  scopePath: admission.scopePath,
  reserved: request.estimate,
  balances,
});

/**
 * The reservation a reserve writes, on its terms (TTL, overage policy, extension limit); each
 * hold's shard is the one the store places it on.
 */
function newReservation(
  caller: Caller,
  request: ReservationRequest & Terms,
  reservationId: string,
  admission: Admission,
  scopes: readonly string[],
  budgets: Budgets,
  now: number,
): Reservation {
  const { unit } = request.estimate;
  return {
    reservationId,
    tenant: caller.tenant,
    status: 'ACTIVE',
    idempotencyKey: request.idempotencyKey,
    subject: request.subject,
    action: request.action,
    reserved: request.estimate,
    createdAtMs: now,
    expiresAtMs: now + request.ttlMs,
    gracePeriodMs: request.gracePeriodMs,
    scopePath: admission.scopePath,
    holds: scopes.map((scope) => {
      const period = budgetAt(budgets, scope, unit)?.period;
      return { scope, shard: 0, ...(period && { periodStart: period.start }) };
    }),
    overagePolicy: request.overagePolicy,
    metadata: request.metadata,
    ttlMs: request.ttlMs,
    ...(request.maxExtensions !== undefined && { maxExtensions: request.maxExtensions }),
  };
}

/** Tracks whether a replayed answer's reservation is still ACTIVE, for its Lease. */
export function leaseAt(now: number) {
  let active = true;
  return {
    onReplay: (
      snapshot: { readonly reservation?: Reservation | undefined } | undefined,
      written?: Reservation,
    ) => {
      // The record as the read found it, or as the write that met it did.
      const r = snapshot?.reservation ?? written;
      if (r) active = r.status === 'ACTIVE';
    },
    of: (expiresAtMs: number): Lease => ({
      remainingTtlMs: active ? Math.max(0, expiresAtMs - now) : 0,
    }),
  };
}
