import type { Amount } from './amounts.js';
import { type Budgets, budgetAt } from './budget.js';
import { DomainError } from './errors.js';
import { type LedgerChange, type OveragePolicy, releaseChange } from './ledger.js';
import type { Subject } from './scopes.js';

export const RESERVATION_STATUSES = ['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** The reference's sort keys of the reservation listing. */
export const RESERVATION_SORT_KEYS = [
  'reservation_id',
  'tenant',
  'scope_path',
  'status',
  'reserved',
  'created_at_ms',
  'expires_at_ms',
] as const;
export type ReservationSortKey = (typeof RESERVATION_SORT_KEYS)[number];
/** `charge`: part of the actual, charged while the reservation stays ACTIVE (same deadline as commit). */
export type Trigger = 'commit' | 'charge' | 'delegate' | 'release' | 'extend' | 'expire';

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
  /** One per affected scope, root first: where the reservation holds budget. */
  readonly holds: readonly Hold[];
  readonly overagePolicy: OveragePolicy;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
  /** The TTL it was reserved with: its first expiry was createdAtMs + ttlMs (extends move it). */
  readonly ttlMs: number;
  /** Extensions it may have (its tenant's or a policy's limit when reserved); absent: no limit. */
  readonly maxExtensions?: number | undefined;
  /** Extensions it has had; absent: none. */
  readonly extensions?: number | undefined;
  /**
   * What it still holds on each scope (`heldAmount`): the estimate, less what its charges took
   * from it (and, later, what delegations carve out). Absent: the whole estimate.
   */
  readonly held?: Amount | undefined;
  /** What its charges (POST …/charges) spent so far, and how many there were. */
  readonly charges?: ChargeTotals | undefined;
  /** What refunds gave back so far (docs/decisions.md § Refunds). */
  readonly refunded?: Amount | undefined;
  /** Set on a child reservation (a delegation, domain/delegation.ts): where it came from. */
  readonly delegation?: DelegatedFrom | undefined;
  /** A parent's ACTIVE children, by id (at most MAX_ACTIVE_DELEGATIONS). */
  readonly activeChildren?: readonly string[] | undefined;
  /** How many delegations it made so far (each child's place in the parent's listing). */
  readonly delegations?: number | undefined;
}

/** Where a child reservation's hold was carved from (docs/decisions.md § Delegations). */
export interface DelegatedFrom {
  readonly parentId: string;
  /** 1 for a child of a root reservation, 2 for a grandchild, … */
  readonly depth: number;
  /**
   * How many of its holds, root first, are carved from the parent's (the parent's scopes): on
   * those the budget's `reserved` already counts them. The holds after are its own.
   */
  readonly inherited: number;
}

/** The running totals of a reservation's charges; each charge is an item of its own. */
export interface ChargeTotals {
  readonly count: number;
  readonly total: Amount;
}

/** One charge of part of the actual while its reservation is ACTIVE (POST …/charges). */
export interface Charge {
  /** `chg_` + a hash of (tenant, reservation, idempotency key). */
  readonly chargeId: string;
  readonly reservationId: string;
  /** 1 for the first charge of the reservation, then 2, 3, … */
  readonly sequence: number;
  readonly amount: Amount;
  readonly createdAtMs: number;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

/**
 * A reservation's hold on one scope's budget, where its settlement must land: the escrow shard
 * it was taken on (domain/escrow.ts; 0 for an unsharded budget), and for a rolling budget the
 * start of the period it was taken in (domain/period.ts): it settles there even after the
 * budget rolled over (docs/decisions.md § Rolling budgets).
 */
export interface Hold {
  readonly scope: string;
  readonly shard: number;
  readonly periodStart?: number | undefined;
  /**
   * The debt the reservation's charges and commit ran up on this scope (ALLOW_WITH_OVERDRAFT):
   * a refund returns it first (domain/refunds.ts).
   */
  readonly debtIncurred?: number | undefined;
}

/** The scopes a reservation affects, root first (SPEC's affected_scopes). */
export const affectedScopes = (r: Pick<Reservation, 'holds'>): string[] =>
  r.holds.map((h) => h.scope);

/**
 * What a reservation still holds on each of its scopes: the estimate until a charge takes part
 * of it. What a release or an expiry returns, and what a commit charges against first.
 */
export const heldAmount = (r: Pick<Reservation, 'reserved' | 'held'>): Amount =>
  r.held ?? r.reserved;

/** What its charges spent so far (0 before the first). */
export const chargedSoFar = (r: Pick<Reservation, 'charges'>): number =>
  r.charges?.total.amount ?? 0;

/** How many charges it took (every charge, and every settlement, is conditioned on it). */
export const chargeCount = (r: Pick<Reservation, 'charges'>): number => r.charges?.count ?? 0;

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
export const releaseChanges = (r: Reservation, budgets?: Budgets): LedgerChange[] => {
  const held = heldAmount(r);
  return onHolds(
    r,
    affectedScopes(r).map((s) => releaseChange(s, held.unit, held.amount)),
    budgets,
  );
};

/**
 * Where a charge of one scope landed: a hold, or an event's charge, whose shard nobody recorded
 * (undefined: any shard will do).
 */
export type Place = Pick<Hold, 'scope' | 'periodStart'> & {
  readonly shard?: number | undefined;
};

/**
 * Changes to a reservation's holds, each landing where its hold is: always on the hold's shard
 * (a settlement must not move reserved between shards), and for a hold on a rolling budget in
 * the period it was taken in, closed once the budget as read (`budgets`) has left it.
 */
export const onHolds = (
  r: { readonly holds: readonly Place[] },
  changes: readonly LedgerChange[],
  budgets?: Budgets,
): LedgerChange[] =>
  changes.map((c) => {
    const hold = r.holds.find((h) => h.scope === c.scope);
    const start = hold?.periodStart;
    const pinned = { ...c, shard: hold ? hold.shard : 0 };
    if (!start || !budgets) return pinned;
    const current = budgetAt(budgets, c.scope, c.unit)?.period;
    const open = current !== undefined && !current.closed && current.start === start;
    return { ...pinned, period: { start, closed: !open } };
  });

/**
 * The sweeper's transition (SPEC: ACTIVE, TTL plus grace elapsed → EXPIRED): the ledger changes
 * that return the hold, or undefined when the reservation is not (or no longer) due. `budgets`:
 * the current periods of its rolling budgets, if it holds on any.
 */
export function expiryChanges(
  r: Reservation,
  now: number,
  budgets?: Budgets,
): LedgerChange[] | undefined {
  const t = transition(r, 'expire', now);
  return t.kind === 'to' ? releaseChanges(r, budgets) : undefined;
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
      if (trigger === 'charge' || trigger === 'delegate') return { kind: 'to', status: 'ACTIVE' };
      return { kind: 'to', status: trigger === 'commit' ? 'COMMITTED' : 'RELEASED' };
  }
}

const notDue = (r: Reservation) =>
  new DomainError('INVALID_REQUEST', `reservation ${r.reservationId} is not due for expiry`);
