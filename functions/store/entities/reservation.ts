import type { Amount, Unit } from '../../domain/amounts.js';
import { exactJson, parseExactJson } from '../../domain/json.js';
import {
  affectedScopes,
  chargeCount,
  type Hold,
  heldAmount,
  type Reservation,
  type ReservationStatus,
  settleDeadline,
} from '../../domain/reservation.js';
import { reservationIdOf, reservationKeyId } from '../../domain/reservation-id.js';
import { canonicalValue, LEVELS } from '../../domain/scopes.js';
import {
  and,
  attr,
  type Condition,
  type Item,
  or,
  type TransactItem,
  totalAsRead,
  update,
} from '../expressions.js';
import {
  directory,
  dueShard,
  dueSortKey,
  keys,
  listPartitions,
  listSortKey,
  listSpreadOf,
} from '../keys.js';
import { type OutcomeToStore, outcomeAttributes, settledOutcomeAttributes } from './outcome.js';

// The reservation family: one item per reservation, keyed by its id (derived from tenant and
// idempotency key, so it is also the reserve's idempotency record), carrying its listing and
// due-index keys while ACTIVE and, once settled, the commit's or release's outcome.

/** Written on every reservation item from this version on (absent: written before). */
export const RESERVATION_VERSION = 1;

export const isReservationItem = (item: Item | undefined): item is Item =>
  item?.type === 'reservation';

// ---- encode -----------------------------------------------------------------------------------

/**
 * The listing index keys: one per filter GET /v1/reservations can pick an index by. None for
 * the tenant: a tenant's whole listing is its four status partitions merged (store/
 * reservation-queries.ts), which saves an index write per reservation (docs/table-design.md).
 */
function listAttributes(r: Reservation): Item {
  const spread = listSpreadOf(r.reservationId);
  const attributes: Item = {
    status_pk: listPartitions.status(r.tenant, r.status, spread),
    list_sk: listSortKey(r.createdAtMs, r.reservationId),
  };
  for (const level of LEVELS.slice(1)) {
    const value = r.subject[level];
    if (value !== undefined)
      attributes[`${level}_pk`] = listPartitions.level(
        r.tenant,
        level,
        canonicalValue(level, value),
        spread,
      );
  }
  return attributes;
}

/**
 * A new reservation's item, with the reserve's outcome. The id is only in pk and the scope path
 * is the last scope: neither is stored twice, so a typical 3-scope reservation stays under 1 KB
 * (2 write units per transactional write). The shards its holds took are set by the write
 * (`holdShardsAttribute`), which picks them.
 */
export function reservationItem(r: Reservation, outcome: OutcomeToStore): Item {
  const record: Item = {
    ...keys.reservation(r.reservationId),
    type: 'reservation',
    v: RESERVATION_VERSION,
    tenant: r.tenant,
    status: r.status,
    idempotency_key: r.idempotencyKey,
    subject: r.subject,
    action: r.action,
    unit: r.reserved.unit,
    estimate: r.reserved.amount,
    created_at_ms: r.createdAtMs,
    expires_at_ms: r.expiresAtMs,
    // The first expiry stays derivable after extends move expires_at_ms (the replay needs it).
    ttl_ms: r.ttlMs,
    grace_period_ms: r.gracePeriodMs,
    deadline_ms: settleDeadline(r),
    scopes: affectedScopes(r),
    // Only when the path goes below the last scope held (a tenant that skips unbudgeted scopes).
    ...(r.scopePath !== affectedScopes(r).at(-1) && { scope_path: r.scopePath }),
    ...(r.maxExtensions !== undefined && { max_extensions: r.maxExtensions }),
    overage_policy: r.overagePolicy,
    // The period each hold was taken in, 0 where the budget does not roll over: only if any does.
    ...(r.holds.some((h) => h.periodStart) && {
      held_in: r.holds.map((h) => h.periodStart ?? 0),
    }),
    // As JSON text: exact numbers and any keys survive (DynamoDB maps would refuse them).
    ...(r.metadata !== undefined && { metadata_json: exactJson(r.metadata) }),
    ...(r.delegation && {
      parent_id: reservationKeyId(r.delegation.parentId),
      depth: r.delegation.depth,
      inherited: r.delegation.inherited,
    }),
    ...listAttributes(r),
    due_pk: dueShard(r.reservationId),
    due_sk: dueSortKey(settleDeadline(r), r.tenant, r.reservationId),
  };
  return {
    ...record,
    ...outcomeAttributes(outcome, { scopes: affectedScopes(r), unit: r.reserved.unit }),
  };
}

/** The shard each hold took, per scope: recorded only when one is not shard 0. */
export const holdShardsAttribute = (shards: readonly number[]): Item =>
  shards.some((k) => k !== 0) ? { hold_shards: [...shards] } : {};

/** What a settlement records: the commit's or release's outcome, and its detail. */
export interface SettlementRecord {
  readonly committed?: Amount | undefined;
  readonly detail?: Record<string, unknown> | undefined;
  readonly outcome?: { readonly key: string; readonly stored: OutcomeToStore } | undefined;
  /** The holds with the debt the commit ran up added (a refund returns it first). */
  readonly holds?: readonly Hold[] | undefined;
}

/** The debt run up on each scope, in `scopes` order: recorded only when any was. */
const holdDebtAttribute = (holds: readonly Hold[]): Item =>
  holds.some((h) => (h.debtIncurred ?? 0) > 0)
    ? { hold_debt: holds.map((h) => h.debtIncurred ?? 0) }
    : {};

/**
 * The reservation has had exactly the charges read: every charge, settlement and refund is
 * conditioned on it, so a charge racing a commit (or the sweeper) is decided on what it found.
 */
const chargesAsRead = (r: Reservation): Condition =>
  and(totalAsRead('charge_count', chargeCount(r)), heldAsRead(r));

/**
 * The hold as read: a delegation carves from it and a child gives back to it without a charge,
 * so every write that decides on the hold is conditioned on it too.
 */
const heldAsRead = (r: Reservation): Condition =>
  r.held === undefined ? attr('held').notExists() : attr('held').eq(r.held.amount);

/**
 * Refunds need to know where the charges landed (the shard and period of each hold) once the
 * reservation is settled: kept when it spent anything, dropped otherwise (the item stays small).
 */
const keepsHolds = (r: Reservation, to: 'COMMITTED' | 'RELEASED' | 'EXPIRED') =>
  to === 'COMMITTED' || chargeCount(r) > 0;

/**
 * The reservation's own update of a settle: conditioned on ACTIVE, the tenant and the deadline
 * (an expiry: after it; a commit or release: before it). What only an ACTIVE reservation needs
 * goes (the due-index keys, the deadline its conditions compare, the shards and periods of its
 * holds), so the item settled stays under 1 KB.
 */
export function settlementUpdate(
  r: Reservation,
  to: 'COMMITTED' | 'RELEASED' | 'EXPIRED',
  now: number,
  s: SettlementRecord = {},
): TransactItem {
  // An empty detail (a commit without metrics or metadata) records nothing: no "{}" to store.
  const detail = s.detail && Object.keys(s.detail).length > 0 ? s.detail : undefined;
  const record = { scopes: affectedScopes(r), unit: r.reserved.unit };
  return update(
    keys.reservation(r.reservationId),
    {
      set: {
        status: to,
        // Listings read every spread, so an item listed before spreads existed may move to one.
        status_pk: listPartitions.status(r.tenant, to, listSpreadOf(r.reservationId)),
        finalized_at_ms: now,
        committed: s.committed?.amount,
        ...(detail && { [`${to.toLowerCase()}_detail_json`]: exactJson(detail) }),
        ...(s.outcome && settledOutcomeAttributes(s.outcome.stored, s.outcome.key, record)),
        // An expiry joins the overview's recent expiries (keys.ts directory.expiries).
        ...(to === 'EXPIRED' && {
          dir_pk: directory.expiries.pk(r.reservationId),
          dir_sk: directory.expiries.sk(now, r.tenant, r.reservationId),
        }),
        ...(s.holds && holdDebtAttribute(s.holds)),
      },
      remove: [
        'due_pk',
        'due_sk',
        'deadline_ms',
        ...(keepsHolds(r, to) ? [] : ['hold_shards', 'held_in']),
      ],
    },
    {
      condition: and(
        attr('status').eq('ACTIVE'),
        attr('tenant').eq(r.tenant),
        to === 'EXPIRED' ? attr('deadline_ms').lte(now) : attr('deadline_ms').gt(now),
        chargesAsRead(r),
        // A parent settles only once its children have (docs/decisions.md § Delegations).
        attr('active_children').notExists(),
      ),
      returnOld: true,
    },
  );
}

/**
 * A parent's update by a delegation or by a child settling into it (`after`: the parent as it
 * leaves it): its hold, its ACTIVE children; conditioned on ACTIVE, its tenant and its hold and
 * charges as read, so delegations, children and the parent's own writes land one at a time.
 */
export function parentUpdate(
  r: Reservation,
  after: Reservation,
  child: { readonly id: string; readonly change: 'delegated' | 'charged' | 'settled' },
): TransactItem {
  // Its id as the child's record gives it; a child delegated before ids carried a hint
  // (domain/reservation-id.ts) is in the set by its key id.
  const ids = new Set([child.id, reservationKeyId(child.id)]);
  return update(
    keys.reservation(r.reservationId),
    {
      set: { held: heldAmount(after).amount, delegation_count: after.delegations },
      ...(child.change === 'delegated' && { addToSet: { active_children: new Set([child.id]) } }),
      ...(child.change === 'settled' && { deleteFromSet: { active_children: ids } }),
    },
    {
      condition: and(
        attr('status').eq('ACTIVE'),
        attr('tenant').eq(r.tenant),
        chargesAsRead(r),
        child.change !== 'delegated' &&
          or(...[...ids].map((id) => attr('active_children').contains(id))),
      ),
      returnOld: true,
    },
  );
}

/**
 * A charge's update of its reservation (`charged`: as the charge leaves it): the hold left, the
 * charges' totals, the debt they ran up; conditioned on ACTIVE before its deadline (as a commit is) and on the charges read, so
 * concurrent charges and a commit are applied one at a time, each on what the last left.
 */
export function chargeUpdate(r: Reservation, charged: Reservation, now: number): TransactItem {
  return update(
    keys.reservation(r.reservationId),
    {
      set: {
        held: heldAmount(charged).amount,
        charged: charged.charges?.total.amount,
        charge_count: charged.charges?.count,
        ...holdDebtAttribute(charged.holds),
      },
    },
    {
      condition: and(
        attr('status').eq('ACTIVE'),
        attr('tenant').eq(r.tenant),
        attr('deadline_ms').gt(now),
        chargesAsRead(r),
      ),
      returnOld: true,
    },
  );
}

/**
 * A refund's update of its reservation: what refunds gave back so far; conditioned on the
 * reservation being as read (status, charges, refunds), so refunds never pass what was charged.
 */
export function reservationRefundUpdate(r: Reservation, refunded: number): TransactItem {
  return update(
    keys.reservation(r.reservationId),
    { set: { refunded } },
    {
      condition: and(
        attr('status').eq(r.status),
        chargesAsRead(r),
        totalAsRead('refunded', r.refunded?.amount ?? 0),
      ),
      returnOld: true,
    },
  );
}

/** Expiry (and the sweeper's due key) moved forward, conditioned on the expiry that was read. */
export function extensionUpdate(
  r: Reservation,
  newExpiresAtMs: number,
  now: number,
  metadata?: Record<string, unknown>,
): TransactItem {
  const newDeadline = newExpiresAtMs + r.gracePeriodMs;
  return update(
    keys.reservation(r.reservationId),
    {
      set: {
        expires_at_ms: newExpiresAtMs,
        deadline_ms: newDeadline,
        due_sk: dueSortKey(newDeadline, r.tenant, r.reservationId),
        extend_metadata_json: metadata && exactJson(metadata),
      },
      // Counted only where it is limited (the condition on expires_at_ms serializes extends).
      ...(r.maxExtensions !== undefined && { increment: { extensions: 1 } }),
    },
    {
      condition: and(
        attr('status').eq('ACTIVE'),
        attr('tenant').eq(r.tenant),
        attr('expires_at_ms').eq(r.expiresAtMs),
        attr('expires_at_ms').gt(now),
      ),
      returnOld: true,
    },
  );
}

// ---- decode -----------------------------------------------------------------------------------

export function reservationOf(stored: Item): Reservation {
  const item = stored.v === undefined ? reservationOfUnversioned(stored) : stored;
  const unit = item.unit as Unit;
  const createdAtMs = Number(item.created_at_ms);
  const expiresAtMs = Number(item.expires_at_ms);
  const scopes = item.scopes as string[];
  return {
    reservationId: reservationIdOf(
      keys.reservationKeyIdOfPk(String(item.pk)),
      String(item.tenant),
      scopes.at(-1) ?? '',
      unit,
    ),
    tenant: String(item.tenant),
    status: item.status as ReservationStatus,
    idempotencyKey: String(item.idempotency_key),
    subject: item.subject as Reservation['subject'],
    action: item.action as Reservation['action'],
    reserved: { unit, amount: Number(item.estimate) },
    committed: item.committed === undefined ? undefined : { unit, amount: Number(item.committed) },
    createdAtMs,
    expiresAtMs,
    gracePeriodMs: Number(item.grace_period_ms),
    finalizedAtMs: item.finalized_at_ms === undefined ? undefined : Number(item.finalized_at_ms),
    scopePath: item.scope_path === undefined ? (scopes.at(-1) ?? '') : String(item.scope_path),
    holds: holdsOf(item, scopes),
    overagePolicy: item.overage_policy as Reservation['overagePolicy'],
    metadata:
      typeof item.metadata_json === 'string'
        ? (parseExactJson(item.metadata_json)?.value as Reservation['metadata'])
        : undefined,
    ttlMs: Number(item.ttl_ms),
    maxExtensions: item.max_extensions === undefined ? undefined : Number(item.max_extensions),
    extensions: item.extensions === undefined ? undefined : Number(item.extensions),
    ...(item.held !== undefined && { held: { unit, amount: Number(item.held) } }),
    ...(item.charge_count !== undefined && {
      charges: {
        count: Number(item.charge_count),
        total: { unit, amount: Number(item.charged ?? 0) },
      },
    }),
    ...(item.refunded !== undefined && { refunded: { unit, amount: Number(item.refunded) } }),
    ...(item.parent_id !== undefined && {
      delegation: {
        parentId: String(item.parent_id),
        depth: Number(item.depth),
        inherited: Number(item.inherited),
      },
    }),
    ...(item.active_children !== undefined && {
      activeChildren: [...(item.active_children as Iterable<string>)].sort(),
    }),
    ...(item.delegation_count !== undefined && { delegations: Number(item.delegation_count) }),
  };
}

/**
 * The holds, one per scope in `scopes` order: `hold_shards` (absent when every hold is on shard
 * 0), `held_in` (absent when no budget rolls over; 0 for a scope whose budget does not) and
 * `hold_debt` (absent when no charge ran up debt).
 */
function holdsOf(item: Item, scopes: readonly string[]): Hold[] {
  const numbers = (v: unknown) => (Array.isArray(v) ? v.map(Number) : []);
  const shards = numbers(item.hold_shards);
  const starts = numbers(item.held_in);
  const debts = numbers(item.hold_debt);
  return scopes.map((scope, i) => {
    const periodStart = starts[i] ?? 0;
    const debtIncurred = debts[i] ?? 0;
    return {
      scope,
      shard: shards[i] ?? 0,
      ...(periodStart !== 0 && { periodStart }),
      ...(debtIncurred !== 0 && { debtIncurred }),
    };
  });
}

// ---- older formats ----------------------------------------------------------------------------

/**
 * Reservation items written before items carried `v`. 0.4's are in the current form. Up to 0.2
 * they also held `reservation_id` and `scope_path`, copies of what pk and the last scope hold
 * (dropped); before 0.3 they had no `ttl_ms` (their results were stored whole, so only the
 * reservation's own TTL needs it: its current one stands in); 0.1's kept `metadata` as a
 * DynamoDB map (now JSON text). Their stored outcomes are store/entities/outcome.ts's. Delete
 * once no reservation item without `v` remains: reservations are kept for good, so only after
 * a backfill has rewritten them.
 */
function reservationOfUnversioned(item: Item): Item {
  const { reservation_id: _id, scope_path: _path, metadata, ...rest } = item;
  return {
    ...rest,
    ttl_ms: item.ttl_ms ?? Number(item.expires_at_ms) - Number(item.created_at_ms),
    ...(item.metadata_json === undefined &&
      metadata !== undefined && { metadata_json: exactJson(metadata) }),
  };
}
