import type { Amount } from '../domain/amounts.js';
import { TENANT_CLOSED_CASCADE } from '../domain/audit.js';
import type { Budgets, Ledger } from '../domain/budget.js';
import { type Caller, requireOwnTenant } from '../domain/caller.js';
import {
  chargeIntoParent,
  releaseIntoParent,
  requireNoActiveChildren,
  settlesIntoParent,
} from '../domain/delegation.js';
import { DomainError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import type { LedgerChange } from '../domain/ledger.js';
import { ledgersAfter, presentLedgers } from '../domain/ledger.js';
import type { RequestCount } from '../domain/rate-limits.js';
import {
  affectedScopes,
  expiredError,
  heldAmount,
  type Reservation,
  releaseChanges,
  transition,
} from '../domain/reservation.js';
import { commitChanges, uncharged, withDebtOf } from '../domain/settlement.js';
import { tenantClosed } from '../domain/tenant.js';
import type { IdempotencyScope } from '../store/entities/idempotency.js';
import type { OutcomeToStore } from '../store/entities/outcome.js';
import { queryReservations, readReservation } from '../store/reservation-queries.js';
import {
  type IntoParent,
  moveReservationExpiry,
  settleReservation,
} from '../store/reservation-writes.js';
import { getTenant, tenantState } from '../store/tenants.js';
import type { WriteOutcome } from '../store/write.js';
import { recordMetric } from '../telemetry/invocation.js';
import { type SettlingSnapshot, settlingSource } from './budget-reader.js';
import { byOperator, type WriteContext } from './context.js';
import { expireReservation } from './expiry.js';
import { guardedWrite, type Plan } from './guarded-write.js';
import { outcomeToStore, type ResultCodec } from './outcomes.js';
import { type Lease, leaseAt } from './reservations.js';
import { countedRead } from './settling-rates.js';

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

/** A settlement's result, stored on its reservation: the balances; the reservation, the rest. */
const settledCodec = <R>(expand: (r: Reservation) => Omit<R, 'balances'>): ResultCodec<R> => ({
  compact: (result) => ({ balances: (result as { balances: readonly Ledger[] }).balances }),
  expand: ({ balances }, { reservation }) => {
    if (!reservation) throw new Error('a settlement outcome off its reservation');
    return { ...expand(reservation), balances } as R;
  },
});

export const committedCodec = settledCodec<Committed>((r) => {
  const { unit, amount: estimate } = r.reserved;
  const charged = r.committed?.amount ?? 0;
  return {
    status: 'COMMITTED',
    charged: { unit, amount: charged },
    released: { unit, amount: Math.max(0, estimate - charged) },
  };
});

/** A release returns what was left of the hold: the record keeps it (`held`) as it was. */
export const releasedCodec = settledCodec<Released>((r) => ({
  status: 'RELEASED',
  released: heldAmount(r),
}));

/**
 * POST /v1/reservations/{id}/commit: SPEC § commit math, docs/ledger-math.md. `actual` is the
 * whole actual: what earlier charges took is part of it (domain/settlement.ts commitChanges).
 */
export function commitReservation(
  caller: Caller,
  reservationId: string,
  request: CommitRequest,
  now: number,
  rate?: RequestCount,
): Promise<Committed> {
  return changeReservation(caller, reservationId, 'commit', request, now, {
    rate,
    codec: committedCodec,
    settled: (r) => ({ ...r, status: 'COMMITTED', committed: request.actual }),
    decide: (r, budgets, parent) => {
      requireNoActiveChildren(r);
      const { unit, amount: held } = heldAmount(r);
      const rest = uncharged(r, request.actual);
      const { changes, into } = settlesIntoParent(r, parent)
        ? intoParent(parent, chargeIntoParent(r, parent, rest, true, budgets))
        : { changes: commitChanges(r, request.actual, budgets), into: undefined };
      const result: Committed = {
        status: 'COMMITTED',
        charged: request.actual,
        released: { unit, amount: Math.max(0, held - rest) },
        balances: ledgersAfter(budgets, changes),
      };
      return { result, changes, into };
    },
    onWritten: (r) => {
      recordMetric('Commits', 1, {}, r.tenant);
      const overage = request.actual.amount - r.reserved.amount;
      if (overage > 0) recordMetric('OverageCharged', overage, { Unit: r.reserved.unit }, r.tenant);
    },
    write: (r, { changes, into }, idempotency, budgets) =>
      settleReservation({
        reservation: r,
        parent: into,
        budgets,
        to: 'COMMITTED',
        now,
        changes,
        committed: request.actual,
        // The debt the commit ran up, beside that of the charges: a refund returns it first.
        holds: withDebtOf(r.holds, changes),
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
  forcedBy?: WriteContext,
): Promise<Released> {
  return changeReservation(caller, reservationId, 'release', request, now, {
    // The close cascade's own release: its tenant's close does not refuse it.
    cascade: forcedBy?.cascade !== undefined,
    // An operator's release (a close's among them) releases the children as the operator's too.
    releaseChildrenFirst: (parent) =>
      releaseChildren(caller, parent, request.idempotencyKey, now, forcedBy),
    codec: releasedCodec,
    settled: (r) => ({ ...r, status: 'RELEASED' }),
    decide: (r, budgets, parent) => {
      const { changes, into } = settlesIntoParent(r, parent)
        ? intoParent(parent, releaseIntoParent(r, parent, budgets))
        : { changes: releaseChanges(r, budgets), into: undefined };
      const result: Released = {
        status: 'RELEASED',
        released: heldAmount(r),
        balances: ledgersAfter(budgets, changes),
      };
      return { result, changes, into };
    },
    onWritten: (r) => recordMetric('Releases', 1, {}, r.tenant),
    write: (r, { changes, into }, idempotency, budgets) =>
      settleReservation({
        reservation: r,
        parent: into,
        budgets,
        to: 'RELEASED',
        now,
        changes,
        detail: request.reason === undefined ? undefined : { reason: request.reason },
        idempotency,
        audit: forcedBy && {
          ...byOperator(r.tenant, forcedBy),
          action: 'reservation.release',
          reservationId,
          // What the release gave back, for its event (reservation.released_via_tenant_cascade).
          detail: {
            ...(request.reason !== undefined && { reason: request.reason }),
            ...(forcedBy.cascade && { cascade: forcedBy.cascade }),
            scope: r.scopePath,
            unit: r.reserved.unit,
            released: heldAmount(r).amount,
          },
        },
      }),
  });
}

const partition = <T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] => [
  items.filter(test),
  items.filter((item) => !test(item)),
];

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
  context: WriteContext,
): Promise<Released> {
  const r = await readReservation(reservationId);
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  return releaseReservation(operatorOf(r.tenant), reservationId, request, context.now, context);
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
    // Children before parents: a parent's release waits on its ACTIVE children (releasing them
    // itself), so the page's leaves go first, concurrently, then the parents one at a time.
    const [parents, leaves] = partition(page.reservations, (r) => !!r.activeChildren?.length);
    await Promise.all(leaves.map(release));
    for (const r of parents) await release(r);
  }

  function release(r: Reservation): Promise<unknown> {
    return forceReleaseReservation(
      r.reservationId,
      { idempotencyKey: `tenant-close:${r.reservationId}`, reason },
      // Marks the release as the close's own (WriteContext.cascade), if the caller did not.
      { ...context, cascade: context.cascade ?? TENANT_CLOSED_CASCADE },
    ).catch((error: unknown) => {
      // Settled or expired meanwhile (a parent's release took it): nothing left to release.
      if (error instanceof DomainError) return;
      throw error;
    });
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
    decide: (r, budgets, parent) => {
      requireExtensionLeft(r);
      return {
        result: {
          status: 'ACTIVE' as const,
          // A child never outlives its parent: its expiry goes no further than the parent's.
          expiresAtMs: settlesIntoParent(r, parent)
            ? Math.max(
                r.expiresAtMs,
                Math.min(r.expiresAtMs + request.extendByMs, parent.expiresAtMs),
              )
            : r.expiresAtMs + request.extendByMs,
          balances: presentLedgers(affectedScopes(r), r.reserved.unit, budgets),
        },
      };
    },
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

/**
 * The reference's closed-tenant rule: once its tenant is CLOSED, a fresh commit, charge, release
 * or extend is 409 TENANT_CLOSED, before any reservation-state error (a replay answered first, by
 * the loop). The close closes every budget before the tenant's record (use-cases/tenants.ts), so
 * an ACTIVE reservation's budgets, read anyway, show it at once; a reservation that is gone or no
 * longer ACTIVE (about to be refused) has its tenant read afresh; otherwise the tenant's state
 * (cached, store/tenants.ts) tells.
 */
async function requireTenantNotClosed(
  tenant: string,
  snapshot: SettlingSnapshot,
  now: number,
): Promise<void> {
  const r = snapshot.reservation;
  const budgetClosed = [...snapshot.budgets.values()].some((b) => b.status === 'CLOSED');
  const status = budgetClosed
    ? 'CLOSED'
    : r?.status !== 'ACTIVE' || r.tenant !== tenant
      ? (await getTenant(tenant))?.status
      : (await tenantState(tenant, now)).status;
  if (status === 'CLOSED') throw tenantClosed(tenant);
}

/** A reservation that has had as many extensions as its tenant or a policy allows: 409. */
function requireExtensionLeft(r: Reservation): void {
  if (r.maxExtensions === undefined || (r.extensions ?? 0) < r.maxExtensions) return;
  throw new DomainError(
    'MAX_EXTENSIONS_EXCEEDED',
    `reservation ${r.reservationId} has had ${r.maxExtensions} extensions, the most it may have`,
    { reservation_id: r.reservationId, max_extensions: r.maxExtensions },
  );
}

/**
 * What commit, charge, release and extend each state: the decision on an ACTIVE reservation, and
 * its write.
 */
export interface ReservationChange<P extends Plan<unknown>> {
  /** A commit's or charge's rate count: its policies' counters join it (settling-rates.ts). */
  readonly rate?: RequestCount | undefined;
  /** How the result is stored compactly on the reservation (commit, release). */
  readonly codec?: ResultCodec<P['result']>;
  /** The reservation as the write leaves it: the record its compact result is rebuilt from. */
  settled?(r: Reservation): Reservation;
  /** Told when the answer is a replay (GuardedWrite.onReplay). */
  onReplay?(snapshot: { readonly reservation?: Reservation | undefined } | undefined): void;
  /** Told once the change was written (GuardedWrite.onWritten). */
  onWritten?(r: Reservation): void;
  /** Scopes beyond the reservation's whose budgets `decide` needs (a delegation's own). */
  moreScopes?(r: Reservation): readonly string[];
  /** The close cascade's own release: the closed-tenant guard does not apply to it. */
  readonly cascade?: boolean | undefined;
  /** A release's: its ACTIVE children released first, each into it (then read again). */
  releaseChildrenFirst?(parent: Reservation): Promise<void>;
  /**
   * `budgets`: those its holds settle on, as read (a closed period's where it has one);
   * `parent`: a child reservation's parent, as read.
   */
  decide(r: Reservation, budgets: Budgets, parent: Reservation | undefined): P;
  write(
    r: Reservation,
    plan: P,
    idempotency: { readonly scope: IdempotencyScope; readonly outcome: OutcomeToStore },
    budgets: Budgets,
  ): Promise<WriteOutcome>;
}

/** The triggers of a change to an ACTIVE reservation by its tenant (the sweeper expires). */
type ChangeTrigger = 'commit' | 'charge' | 'delegate' | 'release' | 'extend';

/**
 * Commit, charge, release and extend share the read (record, reservation, budgets), the
 * ownership check, SPEC's transition (a reservation past its deadline expired first), and an
 * idempotency record written with the change.
 */
export function changeReservation<P extends Plan<unknown>>(
  caller: Caller,
  reservationId: string,
  trigger: ChangeTrigger,
  request: { readonly idempotencyKey: string },
  now: number,
  change: ReservationChange<P>,
): Promise<P['result']> {
  const idempotency = { tenant: caller.tenant, operation: trigger, key: request.idempotencyKey };
  const print = fingerprint({ reservationId, ...request });
  // A commit's or release's outcome is kept on the reservation it settles (settleTransaction).
  const onReservation = trigger === 'commit' || trigger === 'release';
  const source = settlingSource(
    caller,
    reservationId,
    idempotency,
    now,
    change.moreScopes,
    onReservation,
  );
  const transitionOf = (r: Reservation | undefined) =>
    settleable(caller, reservationId, r, trigger, now);
  type Settling = P & { readonly reservation: Reservation; readonly budgets: Budgets };
  return guardedWrite<SettlingSnapshot, Settling>({
    name: trigger,
    fingerprint: print,
    codec: change.codec,
    recheckReplayBeforeRefusing: true,
    read: countedRead(caller, reservationId, change.rate, now, source.read),
    // Only our own expiry proves that it expired: if something settled or extended it first,
    // read again.
    repair: async (snapshot) => {
      if (!change.cascade) await requireTenantNotClosed(caller.tenant, snapshot, now);
      const t = transitionOf(snapshot.reservation);
      if (t.kind === 'settle') {
        // A parent's release releases its ACTIVE children first, each into it.
        if (!change.releaseChildrenFirst || !t.reservation.activeChildren?.length) {
          return source.repair(snapshot);
        }
        await change.releaseChildrenFirst(t.reservation);
        return true;
      }
      if (await expireReservation(t.reservation, now)) throw expiredError(t.reservation);
      return true;
    },
    decide: ({ reservation, budgets, parent }) => {
      const t = transitionOf(reservation);
      if (t.kind === 'expire') throw expiredError(t.reservation);
      const plan = change.decide(t.reservation, budgets, parent);
      return { ...plan, reservation: t.reservation, budgets };
    },
    write: (plan) => {
      const record = change.settled && { reservation: change.settled(plan.reservation) };
      const outcome = outcomeToStore(print, plan.result, change.codec, record);
      return change.write(plan.reservation, plan, { scope: idempotency, outcome }, plan.budgets);
    },
    onReplay: (snapshot) => change.onReplay?.(snapshot),
    onWritten: (plan) => change.onWritten?.(plan.reservation),
  });
}

/**
 * Ownership and SPEC's transition for a commit, release or extend: the reservation to settle, or
 * one past its deadline, to expire first and then refuse with 410.
 */
function settleable(
  caller: Caller,
  reservationId: string,
  r: Reservation | undefined,
  trigger: ChangeTrigger,
  now: number,
): { readonly kind: 'settle' | 'expire'; readonly reservation: Reservation } {
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  requireOwnTenant(caller, r.tenant, `reservation ${reservationId}`);
  const t = transition(r, trigger, now);
  if (t.kind === 'refuse') throw t.error;
  return { kind: t.kind === 'expireThenRefuse' ? 'expire' : 'settle', reservation: r };
}

/** The changes of a child settling into its parent, and the parent's update. */
function intoParent(
  parent: Reservation,
  into: { readonly changes: LedgerChange[]; readonly parentHeld: number },
): { readonly changes: LedgerChange[]; readonly into: IntoParent } {
  const after = { ...parent, held: { unit: parent.reserved.unit, amount: into.parentHeld } };
  return { changes: into.changes, into: { reservation: parent, after } };
}

/**
 * A parent's release releases its ACTIVE children first (each into it, its own children first),
 * one key per child derived from the parent's, so a repeated release replays instead.
 */
async function releaseChildren(
  caller: Caller,
  parent: Reservation,
  idempotencyKey: string,
  now: number,
  forcedBy: WriteContext | undefined,
): Promise<void> {
  for (const childId of parent.activeChildren ?? []) {
    const key = derivedId('cascade', parent.reservationId, idempotencyKey, childId);
    await releaseReservation(
      caller,
      childId,
      { idempotencyKey: key, reason: 'parent released' },
      now,
      forcedBy,
    ).catch((error: unknown) => {
      // Settled or expired meanwhile: it gave its hold back already.
      if (!(error instanceof DomainError)) throw error;
    });
  }
}
