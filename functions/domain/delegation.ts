import type { Amount } from './amounts.js';
import { type Budgets, balanceOf, budgetAt, emptyLedger } from './budget.js';
import { DomainError, invalidRequest } from './errors.js';
import { chargeAll, holdChange, inPeriodsOf, type LedgerChange, releaseChange } from './ledger.js';
import { admissionRefusal, refusalError } from './refusals.js';
import { expiredError, type Hold, heldAmount, onHolds, type Reservation } from './reservation.js';
import { reservationIdOf, reservationKeyId } from './reservation-id.js';
import { LEVELS, type Level, parseScope, type Subject } from './scopes.js';

// Delegations (docs/decisions.md § Delegations): an ACTIVE reservation hands part of what it
// holds to a child reservation. On the parent's scopes the budget is moved, not taken again:
// the parent's `held` falls and the child's rises, `reserved` and `remaining` stay. A deeper
// level named for the child is a scope of the child alone: held there like any reserve.

/** How deep delegations go: a child of a root is at depth 1. */
export const MAX_DELEGATION_DEPTH = 4;
/**
 * ACTIVE children one reservation may have at once: what a parent's release or expiry settles
 * before its own, and what keeps a runaway agent from forking without end.
 */
export const MAX_ACTIVE_DELEGATIONS = 8;

type ChildLevel = Exclude<Level, 'tenant'>;

export interface DelegationRequest {
  readonly idempotencyKey: string;
  readonly amount: Amount;
  /** Absent: as long as the parent has left (never longer). */
  readonly ttlMs?: number | undefined;
  /** Deeper subject levels for the child (below the parent's deepest). */
  readonly subject?: Partial<Record<ChildLevel, string>> | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}

const delegationsActive = (parent: Reservation, message: string) =>
  new DomainError('DELEGATIONS_ACTIVE', message, {
    reservation_id: parent.reservationId,
    active_delegations: [...(parent.activeChildren ?? [])],
    max_active_delegations: MAX_ACTIVE_DELEGATIONS,
  });

/** A parent is committed only once its children are settled: their spend is part of its work. */
export function requireNoActiveChildren(r: Reservation): void {
  if ((r.activeChildren?.length ?? 0) === 0) return;
  throw delegationsActive(
    r,
    `reservation ${r.reservationId} has ACTIVE delegations: commit or release them first`,
  );
}

/** The child's own scopes: the parent's path extended by the deeper levels named. */
export function childScopes(parent: Reservation, request: DelegationRequest): string[] {
  const named = (LEVELS.slice(1) as ChildLevel[]).filter((l) => request.subject?.[l] !== undefined);
  if (named.length === 0) return [];
  const parentLevels = parseScope(parent.scopePath).map((s) => s.kind);
  if (parentLevels.includes('dimensions')) {
    throw invalidRequest('a delegation names no deeper level under a path with dimensions', {
      field: 'subject',
    });
  }
  const deepest = Math.max(...parentLevels.map((k) => LEVELS.indexOf(k as Level)));
  const scopes: string[] = [];
  let path = parent.scopePath;
  for (const level of named) {
    if (LEVELS.indexOf(level) <= deepest) {
      throw invalidRequest(`subject.${level} is not deeper than the parent's scope path`, {
        field: `subject.${level}`,
      });
    }
    path = `${path}/${level}:${request.subject?.[level]}`;
    // parseScope refuses a non-canonical value (case, characters) as a reserve's subject would.
    parseScope(path);
    scopes.push(path);
  }
  return scopes;
}

export interface Delegated {
  /** The parent as the delegation leaves it. */
  readonly parent: Reservation;
  readonly child: Reservation;
  /** The holds on the child's own scopes (none on the parent's: those are moved). */
  readonly holds: LedgerChange[];
}

/**
 * A delegation of `request.amount` out of `parent`'s hold (pure): refused unless the parent is
 * ACTIVE before its expiry, holds that much, is not at the depth or children limits, and every
 * scope of the child's own has a budget admitting it.
 */
export function delegate(
  parent: Reservation,
  request: DelegationRequest,
  childId: string,
  ownScopes: readonly string[],
  budgets: Budgets,
  now: number,
): Delegated {
  if (now >= parent.expiresAtMs) throw expiredError(parent);
  const held = heldAmount(parent);
  const { amount } = request;
  if (amount.unit !== held.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `amount is in ${amount.unit}, the parent in ${held.unit}`,
      {
        requested_unit: amount.unit,
        expected_unit: held.unit,
      },
    );
  }
  const depth = (parent.delegation?.depth ?? 0) + 1;
  if (depth > MAX_DELEGATION_DEPTH) {
    throw invalidRequest(`delegations go at most ${MAX_DELEGATION_DEPTH} levels deep`, {
      max_depth: MAX_DELEGATION_DEPTH,
    });
  }
  if ((parent.activeChildren?.length ?? 0) >= MAX_ACTIVE_DELEGATIONS) {
    throw delegationsActive(
      parent,
      `reservation ${parent.reservationId} has ${MAX_ACTIVE_DELEGATIONS} ACTIVE delegations already`,
    );
  }
  if (amount.amount > held.amount) {
    throw new DomainError(
      'BUDGET_EXCEEDED',
      `reservation ${parent.reservationId} holds ${held.amount}: a delegation cannot hold more`,
      { reservation_id: parent.reservationId, held: { ...held }, requested: { ...amount } },
    );
  }
  const refusal = admissionRefusal(ownScopes, amount, budgets);
  if (refusal) throw refusalError(refusal);
  const expiresAtMs = Math.min(
    now + (request.ttlMs ?? parent.expiresAtMs - now),
    parent.expiresAtMs,
  );
  const ownHolds: Hold[] = ownScopes.map((scope) => {
    const period = budgetAt(budgets, scope, amount.unit)?.period;
    return { scope, shard: 0, ...(period && { periodStart: period.start }) };
  });
  const holds = [
    ...parent.holds.map(({ scope, shard, periodStart }) => ({ scope, shard, periodStart })),
    ...ownHolds,
  ];
  const child: Reservation = {
    // Its id names the budgets it holds, as a reserve's does (domain/reservation-id.ts).
    reservationId: reservationIdOf(
      reservationKeyId(childId),
      parent.tenant,
      holds.at(-1)?.scope ?? '',
      amount.unit,
    ),
    tenant: parent.tenant,
    status: 'ACTIVE',
    idempotencyKey: request.idempotencyKey,
    subject: { ...parent.subject, ...request.subject } as Subject,
    action: parent.action,
    reserved: amount,
    createdAtMs: now,
    expiresAtMs,
    // Never past the parent's deadline: a parent is due no earlier than its children.
    gracePeriodMs: parent.gracePeriodMs,
    scopePath: ownScopes.at(-1) ?? parent.scopePath,
    holds,
    overagePolicy: parent.overagePolicy,
    // The parent's extension limit (its policies' and tenant's, decided at its reserve) binds
    // the child too: a sub-agent cannot extend more often than its orchestrator may.
    ...(parent.maxExtensions !== undefined && { maxExtensions: parent.maxExtensions }),
    metadata: request.metadata,
    ttlMs: expiresAtMs - now,
    delegation: { parentId: parent.reservationId, depth, inherited: parent.holds.length },
  };
  return {
    parent: {
      ...parent,
      held: { unit: held.unit, amount: held.amount - amount.amount },
      activeChildren: [...(parent.activeChildren ?? []), child.reservationId],
      delegations: (parent.delegations ?? 0) + 1,
    },
    child,
    holds: inPeriodsOf(
      ownScopes.map((s) => holdChange(s, amount.unit, amount.amount)),
      budgets,
    ),
  };
}

/** A child whose parent is ACTIVE settles into it; otherwise it settles as any reservation. */
export const settlesIntoParent = (
  child: Reservation,
  parent: Reservation | undefined,
): parent is Reservation =>
  child.delegation !== undefined &&
  parent !== undefined &&
  reservationKeyId(parent.reservationId) === reservationKeyId(child.delegation.parentId) &&
  parent.status === 'ACTIVE';

export interface IntoParent {
  readonly changes: LedgerChange[];
  /** The child's hold left (0 once settled). */
  readonly childHeld: number;
  /** The parent's hold after: less what the child's overage took, plus what it gave back. */
  readonly parentHeld: number;
}

const split = (child: Reservation) => {
  const n = child.delegation?.inherited ?? 0;
  return { inherited: child.holds.slice(0, n), own: child.holds.slice(n) };
};

/**
 * A child's charge (`settle`: false) or commit (`settle`: true) of `amount` while its parent is
 * ACTIVE. Beyond the child's hold, its overage policy applies against the parent's hold first
 * (REJECT takes none), then each budget's remaining. On the parent's scopes what the child did
 * not use stays reserved, back in the parent's hold; on its own scopes it is released.
 */
export function chargeIntoParent(
  child: Reservation,
  parent: Reservation,
  amount: number,
  settle: boolean,
  budgets: Budgets,
): IntoParent {
  const { unit, amount: held } = heldAmount(child);
  const parentHeld = heldAmount(parent).amount;
  const fromParent =
    child.overagePolicy === 'REJECT' ? 0 : Math.min(Math.max(0, amount - held), parentHeld);
  const { inherited, own } = split(child);
  const ledgers = (holds: readonly Hold[]) =>
    holds.map(({ scope }) => {
      const b = budgetAt(budgets, scope, unit);
      return b ? balanceOf(b) : emptyLedger(scope, unit);
    });
  const onParent = chargeAll(
    ledgers(inherited),
    Math.min(amount, held + fromParent),
    amount,
    child.overagePolicy,
  );
  if ('refusal' in onParent) throw refusalError(onParent.refusal);
  const onOwn = chargeAll(
    ledgers(own),
    settle ? held : Math.min(amount, held),
    amount,
    child.overagePolicy,
  );
  if ('refusal' in onOwn) throw refusalError(onOwn.refusal);
  const unused = Math.max(0, held - amount);
  return {
    changes: onHolds(child, [...onParent.changes, ...onOwn.changes], budgets),
    childHeld: settle ? 0 : held - Math.min(held, amount),
    parentHeld: parentHeld - fromParent + (settle ? unused : 0),
  };
}

/** A child's release or expiry while its parent is ACTIVE: its whole hold goes back to it. */
export function releaseIntoParent(
  child: Reservation,
  parent: Reservation,
  budgets?: Budgets,
): IntoParent {
  const { unit, amount: held } = heldAmount(child);
  const { own } = split(child);
  return {
    changes: onHolds(
      child,
      own.map(({ scope }) => releaseChange(scope, unit, held)),
      budgets,
    ),
    childHeld: 0,
    parentHeld: heldAmount(parent).amount + held,
  };
}
