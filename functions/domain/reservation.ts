import type { Amount } from './amounts.js';
import { DomainError } from './errors.js';
import { type LedgerChange, type OveragePolicy, releaseChange } from './ledger.js';
import type { ChangePeriod } from './period.js';
import type { Subject } from './scopes.js';

export type ReservationStatus = 'ACTIVE' | 'COMMITTED' | 'RELEASED' | 'EXPIRED';
export type Trigger = 'commit' | 'release' | 'extend' | 'expire';

export interface Action {
  readonly kind: string;
  readonly name: string;
  readonly tags?: readonly string[] | undefined;
}

export interface Reservation {
  readonly reservationId: string;
  readonly tenant: string;
  readonly status: ReservationStatus;
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly reserved: Amount;
  readonly committed?: Amount | undefined;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
  readonly gracePeriodMs: number;
  readonly finalizedAtMs?: number | undefined;
  readonly scopePath: string;
  readonly affectedScopes: readonly string[];
  readonly overagePolicy: OveragePolicy;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
  /**
   * Per affected scope, the escrow shard the hold was taken on (domain/escrow.ts), where its
   * settlement lands; absent when no scope's budget is sharded (shard 0 everywhere).
   */
  readonly holdShards?: readonly number[] | undefined;
  /**
   * Per affected scope, the start of the period of its rolling budget the hold was taken in (0
   * for a scope whose budget does not roll over); absent when none does. A hold belongs to that
   * period: it settles there even after the budget rolled over (docs/decisions.md).
   */
  readonly heldIn?: readonly number[] | undefined;
}

/** Commit and release stay possible through the grace period; extend does not (SPEC § Limits). */
export const settleDeadline = (r: Pick<Reservation, 'expiresAtMs' | 'gracePeriodMs'>): number =>
  r.expiresAtMs + r.gracePeriodMs;

/**
 * Past its deadline a reservation is expired for every purpose, whether or not the sweeper has
 * written EXPIRED yet: reads answer 410 and settles finalize it first.
 */
export const isEffectivelyExpired = (r: Reservation, now: number): boolean =>
  r.status === 'EXPIRED' || (r.status === 'ACTIVE' && now >= settleDeadline(r));

/** Every scope gets the whole hold back: release, and expiry alike. */
export const releaseChanges = (r: Reservation): LedgerChange[] =>
  pinToHolds(
    r,
    r.affectedScopes.map((s) => releaseChange(s, r.reserved.unit, r.reserved.amount)),
  );

/**
 * Changes in scope order, each pinned to the shard its scope's hold was taken on: always, since
 * a settlement must land where its hold is (shard 0 when the reservation names none).
 */
export const pinToHolds = (r: Reservation, changes: readonly LedgerChange[]): LedgerChange[] =>
  changes.map((c, i) => ({ ...c, shard: r.holdShards?.[i] ?? 0 }));

/**
 * The sweeper's transition (SPEC: ACTIVE, TTL plus grace elapsed → EXPIRED): the ledger changes
 * that return the hold, or undefined when the reservation is not (or no longer) due.
 */
export function expiryChanges(r: Reservation, now: number): LedgerChange[] | undefined {
  const t = transition(r, 'expire', now);
  return t.kind === 'to' ? releaseChanges(r) : undefined;
}

export type Transition =
  | { readonly kind: 'to'; readonly status: ReservationStatus }
  /** The reservation is past its deadline but still ACTIVE: finalize it as EXPIRED, then refuse. */
  | { readonly kind: 'expireThenRefuse' }
  | { readonly kind: 'refuse'; readonly error: DomainError };

const finalized = (r: Reservation) =>
  new DomainError(
    'RESERVATION_FINALIZED',
    `reservation ${r.reservationId} is already ${r.status}`,
    {
      reservation_id: r.reservationId,
      status: r.status,
    },
  );

export const expiredError = (r: Reservation) =>
  new DomainError('RESERVATION_EXPIRED', `reservation ${r.reservationId} has expired`, {
    reservation_id: r.reservationId,
    expires_at_ms: r.expiresAtMs,
  });

/** A read of an expired reservation: 410, with the reservation itself in the error's details. */
export class ReservationExpiredError extends DomainError {
  constructor(readonly reservation: Reservation) {
    super('RESERVATION_EXPIRED', `reservation ${reservation.reservationId} has expired`);
  }
}

/** SPEC § States and transitions, row by row. `now` is server time. */
export function transition(r: Reservation, trigger: Trigger, now: number): Transition {
  const pastDeadline = now >= settleDeadline(r);
  switch (r.status) {
    case 'COMMITTED':
    case 'RELEASED':
      return { kind: 'refuse', error: finalized(r) };
    case 'EXPIRED':
      return { kind: 'refuse', error: expiredError(r) };
    case 'ACTIVE':
      if (trigger === 'expire') {
        return pastDeadline
          ? { kind: 'to', status: 'EXPIRED' }
          : { kind: 'refuse', error: notDue(r) };
      }
      if (pastDeadline) return { kind: 'expireThenRefuse' };
      if (trigger === 'extend') {
        return now >= r.expiresAtMs
          ? { kind: 'refuse', error: expiredError(r) }
          : { kind: 'to', status: 'ACTIVE' };
      }
      return { kind: 'to', status: trigger === 'commit' ? 'COMMITTED' : 'RELEASED' };
  }
}

const notDue = (r: Reservation) =>
  new DomainError('INVALID_REQUEST', `reservation ${r.reservationId} is not due for expiry`);

/**
 * The period each of a reservation's holds settles in, given the current periods of its rolling
 * budgets: the period it was taken in, closed once the budget has moved past it.
 */
export function heldPeriods(
  r: Reservation,
  current: ReadonlyMap<string, { readonly start: number }>,
): Map<string, ChangePeriod> {
  const held = new Map<string, ChangePeriod>();
  r.affectedScopes.forEach((scope, i) => {
    const start = r.heldIn?.[i] ?? 0;
    if (start === 0) return;
    held.set(scope, { start, closed: current.get(scope)?.start !== start });
  });
  return held;
}
