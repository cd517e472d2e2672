import type { Amount } from '../domain/amounts.js';
import { type Caller, requireOwnTenant } from '../domain/caller.js';
import { type Caps, capsFor } from '../domain/caps.js';
import { DomainError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import {
  admissionRefusal,
  firstRefusal,
  holdChange,
  inPeriods,
  isRefusal,
  type Ledger,
  ledgersAfter,
  type OveragePolicy,
  presentLedgers,
  type RefusalCode,
  refusalError,
  scopeRefusal,
} from '../domain/ledger.js';
import type { ChangePeriod } from '../domain/period.js';
import {
  type Action,
  expiredError,
  type Reservation,
  releaseChanges,
  transition,
} from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { commitChanges } from '../domain/settlement.js';
import type { IdempotencyScope, StoredOutcome } from '../store/idempotency.js';
import { getLedgers } from '../store/ledgers.js';
import { queryReservations, readReservation } from '../store/reservation-queries.js';
import {
  insertReservation,
  moveReservationExpiry,
  settleReservation,
} from '../store/reservation-writes.js';
import type { Layouts } from '../store/shards.js';
import { readSnapshot } from '../store/snapshot.js';
import type { WriteOutcome } from '../store/write.js';
import { recordMetric } from '../telemetry/invocation.js';
import { recordRefusal } from './budget-events.js';
import type { WriteContext } from './budgets.js';
import { expiredHoldsFreer, expireReservation } from './expiry.js';
import { atomicIfRefused, guardedWrite, type Plan, readAgain } from './guarded-write.js';
import { rollOverDue, settlementLedgers } from './periods.js';
import { affectedScopes } from './scopes.js';

export interface ReservationRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly estimate: Amount;
  readonly ttlMs: number;
  readonly gracePeriodMs: number;
  readonly overagePolicy: OveragePolicy;
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

/**
 * The time a live reservation has left, observed as the answer is made: volatile, never
 * stored with a result, recomputed on a replay and 0 once the reservation is no longer ACTIVE
 * (the reference's `remaining_ttl_ms`; the SDK schedules its heartbeat from it).
 */
export interface Lease {
  readonly remainingTtlMs: number;
}

/** Tracks whether a replayed answer's reservation is still ACTIVE, for its Lease. */
function leaseAt(now: number) {
  let active = true;
  return {
    onReplay: (snapshot: { readonly reservation?: Reservation | undefined } | undefined) => {
      // A concurrent duplicate's record (no read) was made an instant ago: still ACTIVE.
      if (snapshot?.reservation) active = snapshot.reservation.status === 'ACTIVE';
    },
    of: (expiresAtMs: number): Lease => ({
      remainingTtlMs: active ? Math.max(0, expiresAtMs - now) : 0,
    }),
  };
}
export interface DryRun extends Placement {
  readonly kind: 'dryRun';
  readonly refusal?: RefusalCode | undefined;
}

/** POST /v1/reservations: one read of the ledgers, then one transaction of scopes + 1 items. */
export async function createReservation(
  caller: Caller,
  request: ReservationRequest,
  now: number,
  requestId?: string,
): Promise<(Reserved & Lease) | DryRun> {
  const { scopes, scopePath, requireTenantOpen } = await affectedScopes(
    caller,
    request.subject,
    now,
  );
  const { unit, amount } = request.estimate;
  const placement = { affectedScopes: scopes, scopePath, reserved: request.estimate };
  const freer = expiredHoldsFreer(caller.tenant, now);
  if (request.dryRun) {
    // SPEC rule 3: evaluated like a live reservation, nothing persisted, no id or expiry.
    requireTenantOpen();
    for (;;) {
      const read = await atomicIfRefused(
        await readSnapshot({ ledgers: { scopes, unit } }),
        (s) => admissionRefusal(scopes, request.estimate, s.ledgers),
        () => readSnapshot({ ledgers: { scopes, unit }, atomic: true }),
      );
      if (await rollOverDue(read, now)) continue;
      const { ledgers, caps } = read;
      const refusal = admissionRefusal(scopes, request.estimate, ledgers);
      if (await freer.free(refusal, ledgers)) continue;
      // A DENY is a denial as a live reserve's 409 is (reservation.denied; the reference's too).
      if (refusal) await recordRefusal(refusalError(refusal), caller, request, now, requestId);
      const applied = refusal ? undefined : capsFor(scopes, amount, ledgers, caps);
      return {
        kind: 'dryRun',
        ...placement,
        refusal: refusal?.code,
        balances: presentLedgers(scopes, ledgers),
        ...(applied && { caps: applied }),
      };
    }
  }
  const reservationId = derivedId('rsv', caller.tenant, request.idempotencyKey);
  const holds = scopes.map((s) => holdChange(s, unit, amount));
  const print = fingerprint(request);
  const lease = leaseAt(now);
  const reserved = await guardedWrite({
    name: 'reservation',
    fingerprint: print,
    read: (atomic) => readSnapshot({ reservationId, ledgers: { scopes, unit }, atomic }),
    decide: async ({ ledgers, layouts, caps, periods }) => {
      requireTenantOpen();
      if (await rollOverDue({ ledgers, periods }, now)) return readAgain;
      const refusal = admissionRefusal(scopes, request.estimate, ledgers);
      if (refusal) {
        if (await freer.free(refusal, ledgers)) return readAgain;
        throw refusalError(refusal);
      }
      const reservation: Reservation = {
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
        scopePath,
        affectedScopes: scopes,
        overagePolicy: request.overagePolicy,
        metadata: request.metadata,
        heldIn: periods.size > 0 ? scopes.map((s) => periods.get(s)?.start ?? 0) : undefined,
      };
      const applied = capsFor(scopes, amount, ledgers, caps);
      const result: Reserved = {
        kind: 'reserved',
        ...placement,
        reservationId,
        expiresAtMs: reservation.expiresAtMs,
        balances: ledgersAfter(ledgers, holds),
        // Stored with the result, so a replay answers the same decision and caps.
        ...(applied && { caps: applied }),
      };
      // A hold on a rolling budget is conditioned on its period still being the one read.
      return { result, reservation, layouts, holds: inPeriods(holds, periods) };
    },
    write: ({ result, reservation, layouts, holds }) =>
      insertReservation({ reservation, holds, layouts, outcome: { fingerprint: print, result } }),
    // The ledgers changed since the read: the condition that failed names the scope.
    refusalOf: (refused) => {
      const refusal = firstRefusal(
        refused.map(({ index, ledger }) => scopeRefusal(scopes[index] ?? '', unit, ledger, amount)),
      );
      // An expired hold may be what fills the scope: free it first (read again), then refuse.
      if (refusal?.code === 'BUDGET_EXCEEDED' && !freer.tried) return undefined;
      return refusal && refusalError(refusal);
    },
    onReplay: (snapshot) => lease.onReplay(snapshot),
    onWritten: ({ result }) =>
      recordMetric('Reservations', 1, { Decision: result.caps ? 'ALLOW_WITH_CAPS' : 'ALLOW' }),
  }).catch(async (error: unknown) => {
    if (isRefusal(error)) recordMetric('Reservations', 1, { Decision: 'DENY' });
    // A refusal is recorded for reservation.denied (best effort, never failing the request).
    await recordRefusal(error, caller, request, now, requestId);
    throw error;
  });
  return { ...reserved, ...lease.of(reserved.expiresAtMs) };
}

export interface CommitRequest {
  readonly idempotencyKey: string;
  readonly actual: Amount;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface Committed {
  readonly status: 'COMMITTED';
  readonly charged: Amount;
  readonly released: Amount;
  readonly balances: readonly Ledger[];
}

/** POST /v1/reservations/{id}/commit: SPEC § commit math, docs/ledger-math.md. */
export function commitReservation(
  caller: Caller,
  reservationId: string,
  request: CommitRequest,
  now: number,
): Promise<Committed> {
  return changeReservation(caller, reservationId, 'commit', request, now, {
    decide: (r, ledgers, periods) => {
      const changes = inPeriods(commitChanges(r, request.actual, ledgers), periods);
      const { unit, amount: held } = r.reserved;
      const result: Committed = {
        status: 'COMMITTED',
        charged: request.actual,
        released: { unit, amount: Math.max(0, held - request.actual.amount) },
        balances: ledgersAfter(ledgers, changes),
      };
      return { result, changes };
    },
    onWritten: (r) => {
      recordMetric('Commits', 1, {}, r.tenant);
      const overage = request.actual.amount - r.reserved.amount;
      if (overage > 0) recordMetric('OverageCharged', overage, { Unit: r.reserved.unit }, r.tenant);
    },
    write: (r, { changes }, idempotency, layouts) =>
      settleReservation({
        reservation: r,
        layouts,
        to: 'COMMITTED',
        now,
        changes,
        committed: request.actual,
        detail: {
          ...(request.metrics && { metrics: request.metrics }),
          ...(request.metadata && { metadata: request.metadata }),
        },
        idempotency,
      }),
  });
}

export interface ReleaseRequest {
  readonly idempotencyKey: string;
  readonly reason?: string | undefined;
}
export interface Released {
  readonly status: 'RELEASED';
  readonly released: Amount;
  readonly balances: readonly Ledger[];
}

/** POST /v1/reservations/{id}/release: the whole hold returns to every scope. */
export function releaseReservation(
  caller: Caller,
  reservationId: string,
  request: ReleaseRequest,
  now: number,
  /** An operator's forced release: audited in the release's transaction. */
  forcedBy?: { readonly requestId: string },
): Promise<Released> {
  return changeReservation(caller, reservationId, 'release', request, now, {
    decide: (r, ledgers, held) => {
      const changes = inPeriods(releaseChanges(r), held);
      const result: Released = {
        status: 'RELEASED',
        released: r.reserved,
        balances: ledgersAfter(ledgers, changes),
      };
      return { result, changes };
    },
    onWritten: (r) => recordMetric('Releases', 1, {}, r.tenant),
    write: (r, { changes }, idempotency, layouts) =>
      settleReservation({
        reservation: r,
        layouts,
        to: 'RELEASED',
        now,
        changes,
        detail: request.reason === undefined ? undefined : { reason: request.reason },
        idempotency,
        audit: forcedBy && {
          tenant: r.tenant,
          atMs: now,
          actor: { kind: 'admin' },
          requestId: forcedBy.requestId,
          action: 'reservation.release',
          reservationId,
          ...(request.reason !== undefined && { detail: { reason: request.reason } }),
        },
      }),
  });
}

/** The operator acting on one tenant's reservations. */
const operatorOf = (tenant: string): Caller => ({
  tenant,
  keyId: 'admin',
  permissions: ['reservations:release'],
});

/**
 * POST /v1/reservations/{id}/release with the admin key: the operator releases any tenant's
 * ACTIVE reservation; the reason lands in the audit trail.
 */
export async function forceReleaseReservation(
  reservationId: string,
  request: ReleaseRequest,
  { now, requestId }: WriteContext,
): Promise<Released> {
  const r = await readReservation(reservationId);
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  return releaseReservation(operatorOf(r.tenant), reservationId, request, now, { requestId });
}

/**
 * Part of a tenant's close: every ACTIVE reservation released (audited, one key per
 * reservation, so a repeated close replays instead of releasing twice). Walks the tenant's
 * ACTIVE listing until it is empty.
 */
export async function releaseOpenReservations(
  tenant: string,
  reason: string,
  context: WriteContext,
): Promise<void> {
  for (let round = 0; round < 1_000; round++) {
    const page = await queryReservations({
      tenant,
      status: 'ACTIVE',
      subject: {},
      limit: 50,
      matches: (r) => r.tenant === tenant && r.status === 'ACTIVE',
    });
    if (page.reservations.length === 0) return;
    await Promise.all(
      page.reservations.map((r) =>
        forceReleaseReservation(
          r.reservationId,
          { idempotencyKey: `tenant-close:${r.reservationId}`, reason },
          context,
        ).catch((error: unknown) => {
          // Settled or expired meanwhile: nothing left to release.
          if (error instanceof DomainError) return;
          throw error;
        }),
      ),
    );
  }
}

export interface ExtendRequest {
  readonly idempotencyKey: string;
  readonly extendByMs: number;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface Extended {
  readonly status: 'ACTIVE';
  readonly expiresAtMs: number;
  readonly balances: readonly Ledger[];
}

/**
 * POST /v1/reservations/{id}/extend. Time base: the current expires_at_ms (not the request time),
 * as the reference description says; refused from expires_at_ms on, grace does not count.
 */
export async function extendReservation(
  caller: Caller,
  reservationId: string,
  request: ExtendRequest,
  now: number,
): Promise<Extended & Lease> {
  const lease = leaseAt(now);
  const extended = await changeReservation(caller, reservationId, 'extend', request, now, {
    onReplay: lease.onReplay,
    decide: (r, ledgers) => ({
      result: {
        status: 'ACTIVE' as const,
        expiresAtMs: r.expiresAtMs + request.extendByMs,
        balances: presentLedgers(r.affectedScopes, ledgers),
      },
    }),
    write: (r, { result }, idempotency) =>
      moveReservationExpiry({
        reservation: r,
        newExpiresAtMs: result.expiresAtMs,
        now,
        metadata: request.metadata,
        idempotency,
      }),
  });
  return { ...extended, ...lease.of(extended.expiresAtMs) };
}

/** What commit, release and extend each state: the decision on an ACTIVE reservation, and its write. */
interface ReservationChange<P extends Plan<unknown>> {
  /** Told when the answer is a replay (GuardedWrite.onReplay). */
  onReplay?(snapshot: { readonly reservation?: Reservation | undefined } | undefined): void;
  /** Told once the change was written (GuardedWrite.onWritten). */
  onWritten?(r: Reservation): void;
  /** `held`: the period each hold on a rolling budget settles in (stamp the changes with it). */
  decide(
    r: Reservation,
    ledgers: ReadonlyMap<string, Ledger>,
    held: ReadonlyMap<string, ChangePeriod>,
  ): P;
  write(
    r: Reservation,
    plan: P,
    idempotency: { readonly scope: IdempotencyScope; readonly outcome: StoredOutcome },
    layouts: Layouts,
  ): Promise<WriteOutcome>;
}

/**
 * Commit, release and extend share the read (record, reservation, ledgers), the ownership
 * check, SPEC's transition, and an idempotency record written with the change.
 */
function changeReservation<P extends Plan<unknown>>(
  caller: Caller,
  reservationId: string,
  trigger: 'commit' | 'release' | 'extend',
  request: { readonly idempotencyKey: string },
  now: number,
  change: ReservationChange<P>,
): Promise<P['result']> {
  const idempotency = { tenant: caller.tenant, operation: trigger, key: request.idempotencyKey };
  const print = fingerprint({ reservationId, ...request });
  return guardedWrite({
    name: trigger,
    fingerprint: print,
    recheckReplayBeforeRefusing: true,
    read: (atomic) => readForSettling(caller, reservationId, idempotency, atomic),
    decide: async ({ reservation, ledgers, layouts, periods }) => {
      const r = await settleable(caller, reservationId, reservation, trigger, now);
      if (r === readAgain || (await rollOverDue({ ledgers, periods }, now))) return readAgain;
      // A hold of a period its rolling budget has left settles on that period's ledger.
      const settling = await settlementLedgers(r, { ledgers, periods });
      return { ...change.decide(r, settling.ledgers, settling.held), reservation: r, layouts };
    },
    write: (plan) =>
      change.write(
        plan.reservation,
        plan,
        { scope: idempotency, outcome: { fingerprint: print, result: plan.result } },
        plan.layouts,
      ),
    onReplay: (snapshot) => change.onReplay?.(snapshot),
    onWritten: (plan) => change.onWritten?.(plan.reservation),
  });
}

/**
 * The idempotency record and the reservation in one batch, then the ledgers of its scopes (only
 * when it is the caller's and ACTIVE: otherwise it will be refused and they are not needed).
 */
async function readForSettling(
  caller: Caller,
  reservationId: string,
  idempotency: IdempotencyScope,
  atomic = false,
) {
  const first = await readSnapshot({ reservationId, idempotency });
  const r = first.reservation;
  if (first.replay || !r || r.tenant !== caller.tenant || r.status !== 'ACTIVE') return first;
  return { ...first, ...(await getLedgers(r.affectedScopes, r.reserved.unit, atomic)) };
}

/**
 * Ownership and SPEC's transition for a commit, release or extend. A reservation past its
 * deadline is expired first, then refused with 410; only our own expiry proves that it expired,
 * so if something settled or extended it first, read again.
 */
async function settleable(
  caller: Caller,
  reservationId: string,
  r: Reservation | undefined,
  trigger: 'commit' | 'release' | 'extend',
  now: number,
): Promise<Reservation | typeof readAgain> {
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  requireOwnTenant(caller, r.tenant, `reservation ${reservationId}`);
  const t = transition(r, trigger, now);
  if (t.kind === 'refuse') throw t.error;
  if (t.kind === 'expireThenRefuse') {
    if (!(await expireReservation(r, now))) return readAgain;
    throw expiredError(r);
  }
  return r;
}
