import type { Unit } from '../domain/amounts.js';
import type { ApiKey } from '../domain/api-keys.js';
import { type Budget, type BudgetStatus, type Counters, SINGLE } from '../domain/budget.js';
import { normalThresholds, type Refusal } from '../domain/budget-events.js';
import type { BudgetCaps, Caps } from '../domain/caps.js';
import { parseExactJson } from '../domain/json.js';
import type { LedgerPeriod, PeriodKind } from '../domain/period.js';
import { effectivePermissions, type Permission } from '../domain/permissions.js';
import type { RefusalCode } from '../domain/refusals.js';
import type { Hold, Reservation, ReservationStatus } from '../domain/reservation.js';
import { keys } from './keys.js';
import type { Item } from './transact.js';

// Items → domain values. Nothing above the store sees a raw item.

export const isLedgerItem = (item: Item | undefined): item is Item => item?.type === 'ledger';
export const isReservationItem = (item: Item | undefined): item is Item =>
  item?.type === 'reservation';

/** The counters of a ledger, shard or closed-period item. */
export const countersOf = (item: Item): Counters => ({
  allocated: Number(item.allocated),
  spent: Number(item.spent),
  reserved: Number(item.reserved),
  debt: Number(item.debt),
  remaining: Number(item.remaining),
});

/** A status on the item; absent: ACTIVE. */
const statusOf = (item: Item): BudgetStatus =>
  item.status === 'FROZEN' || item.status === 'CLOSED' ? item.status : 'ACTIVE';

/**
 * The budget one ledger item (or a closed period's) holds: the whole budget when unsharded.
 * `layout`, for a sharded budget: its shards, whose sums are its counters.
 */
export function budgetOfItem(item: Item, layout: Budget['layout'] = SINGLE): Budget {
  return {
    ref: { scope: String(item.scope), unit: item.unit as Unit },
    counters: countersOf(item),
    status: statusOf(item),
    overdraftLimit: Number(item.overdraft_limit),
    caps: budgetCapsOf(item),
    period: ledgerPeriodOf(item),
    thresholds: thresholdsOf(item),
    layout,
  };
}

/**
 * A budget's caps, on its ledger item (shard 0 of a sharded budget): `caps` as JSON text (one
 * attribute, not a map of lists, to keep the hot item small) and `caps_bps` for a soft landing.
 */
export const budgetCapsAttributes = (b: BudgetCaps): Item => ({
  caps: JSON.stringify(b.caps),
  ...(b.belowRemainingBps !== undefined && { caps_bps: b.belowRemainingBps }),
});

export function budgetCapsOf(item: Item): BudgetCaps | undefined {
  if (typeof item.caps !== 'string') return undefined;
  return {
    caps: JSON.parse(item.caps) as Caps,
    ...(item.caps_bps !== undefined && { belowRemainingBps: Number(item.caps_bps) }),
  };
}

export function reservationOf(item: Item): Reservation {
  const unit = item.unit as Unit;
  const createdAtMs = Number(item.created_at_ms);
  const expiresAtMs = Number(item.expires_at_ms);
  return {
    reservationId: reservationIdOf(item),
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
    scopePath: scopePathOf(item),
    holds: holdsOf(item),
    overagePolicy: item.overage_policy as Reservation['overagePolicy'],
    metadata: metadataOf(item),
    ttlMs: item.ttl_ms === undefined ? expiresAtMs - createdAtMs : Number(item.ttl_ms),
  };
}

/**
 * The holds, one per scope in `scopes` order: `hold_shards` (absent when every hold is on shard
 * 0) and `held_in` (absent when no budget rolls over; 0 for a scope whose budget does not).
 */
function holdsOf(item: Item): Hold[] {
  const shards = Array.isArray(item.hold_shards) ? item.hold_shards.map(Number) : [];
  const starts = Array.isArray(item.held_in) ? item.held_in.map(Number) : [];
  return (item.scopes as string[]).map((scope, i) => {
    const periodStart = starts[i] ?? 0;
    return { scope, shard: shards[i] ?? 0, ...(periodStart !== 0 && { periodStart }) };
  });
}

/** JSON text, exact; a map in items written before 0.2 (which could not hold every value). */
function metadataOf(item: Item): Reservation['metadata'] {
  if (typeof item.metadata_json === 'string') {
    return parseExactJson(item.metadata_json)?.value as Reservation['metadata'];
  }
  return item.metadata as Reservation['metadata'];
}

export function apiKeyOf(item: Item): ApiKey {
  return {
    keyId: String(item.key_id),
    keyPrefix: String(item.key_prefix),
    tenant: String(item.tenant),
    name: String(item.name),
    description: item.description as string | undefined,
    // Keys stored before budgets:write existed keep the rights they were made with.
    permissions: effectivePermissions(item.permissions as Permission[]),
    createdAt: String(item.created_at),
    expiresAt: item.expires_at as string | undefined,
    // Keys stored before revocation existed carry no status: they are live.
    status: item.status === 'REVOKED' ? 'REVOKED' : 'ACTIVE',
    updatedAt: item.updated_at as string | undefined,
    revokedAt: item.revoked_at as string | undefined,
    revokedReason: item.revoked_reason as string | undefined,
  };
}

/** Items since 0.3 keep the id only in pk, and the scope path only as the last scope. */
export const reservationIdOf = (item: Item): string =>
  typeof item.reservation_id === 'string'
    ? item.reservation_id
    : keys.reservationIdOfPk(String(item.pk));

export const scopePathOf = (item: Item): string =>
  typeof item.scope_path === 'string'
    ? item.scope_path
    : String((item.scopes as string[] | undefined)?.at(-1) ?? '');

/**
 * A budget's event thresholds (domain/budget-events.ts), on its ledger item only when not the
 * default: JSON text, like the caps, so a change can be conditioned on the value read.
 */
export const thresholdsAttribute = (percents: readonly number[]): string =>
  JSON.stringify(normalThresholds(percents));

export function thresholdsOf(item: Item): number[] | undefined {
  if (typeof item.thresholds !== 'string') return undefined;
  return (JSON.parse(item.thresholds) as unknown[]).map(Number);
}

export function refusalOf(item: Item): Refusal {
  return {
    refusalId: String(item.refusal_id),
    tenant: String(item.tenant),
    atMs: Number(item.at_ms),
    code: item.reason_code as RefusalCode,
    scope: String(item.scope),
    unit: item.unit as Unit,
    requested: Number(item.requested),
    remaining: Number(item.remaining),
    subject: item.subject as Refusal['subject'],
    action: item.action as Refusal['action'],
    keyId: item.key_id === undefined ? undefined : String(item.key_id),
    requestId: item.request_id === undefined ? undefined : String(item.request_id),
    suppressed: Number(item.suppressed ?? 0),
  };
}

/** A rolling budget's period, as its ledger item (or a closed period's item) carries it. */
export function ledgerPeriodOf(item: Item): LedgerPeriod | undefined {
  if (typeof item.period_kind !== 'string') return undefined;
  return {
    start: Number(item.period_start),
    end: Number(item.period_end),
    spec: {
      kind: item.period_kind as PeriodKind,
      ...(item.period_anchor !== undefined && { anchorDay: Number(item.period_anchor) }),
    },
    amount: Number(item.period_amount),
    ...(item.type === 'ledger-period' && { closed: true as const }),
  };
}

/** The attributes that make a ledger item roll over (domain/period.ts). */
export const ledgerPeriodAttributes = (p: LedgerPeriod): Item => ({
  period_kind: p.spec.kind,
  ...(p.spec.anchorDay !== undefined && { period_anchor: p.spec.anchorDay }),
  period_amount: p.amount,
  period_start: p.start,
  period_end: p.end,
});
