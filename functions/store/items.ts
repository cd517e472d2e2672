import type { Unit } from '../domain/amounts.js';
import type { ApiKey } from '../domain/api-keys.js';
import type { BudgetCaps, Caps } from '../domain/caps.js';
import { parseExactJson } from '../domain/json.js';
import type { Ledger } from '../domain/ledger.js';
import type { LedgerPeriod, PeriodKind } from '../domain/period.js';
import { effectivePermissions, type Permission } from '../domain/permissions.js';
import type { Reservation, ReservationStatus } from '../domain/reservation.js';
import { keys } from './keys.js';
import type { Item } from './transact.js';

// Items → domain values. Nothing above the store sees a raw item.

export const isLedgerItem = (item: Item | undefined): item is Item => item?.type === 'ledger';
export const isReservationItem = (item: Item | undefined): item is Item =>
  item?.type === 'reservation';

export function ledgerOf(item: Item): Ledger {
  return {
    scope: String(item.scope),
    unit: item.unit as Unit,
    allocated: Number(item.allocated),
    spent: Number(item.spent),
    reserved: Number(item.reserved),
    debt: Number(item.debt),
    overdraftLimit: Number(item.overdraft_limit),
    remaining: Number(item.remaining),
    ...((item.status === 'FROZEN' || item.status === 'CLOSED') && { status: item.status }),
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
  return {
    reservationId: reservationIdOf(item),
    tenant: String(item.tenant),
    status: item.status as ReservationStatus,
    idempotencyKey: String(item.idempotency_key),
    subject: item.subject as Reservation['subject'],
    action: item.action as Reservation['action'],
    reserved: { unit, amount: Number(item.estimate) },
    committed: item.committed === undefined ? undefined : { unit, amount: Number(item.committed) },
    createdAtMs: Number(item.created_at_ms),
    expiresAtMs: Number(item.expires_at_ms),
    gracePeriodMs: Number(item.grace_period_ms),
    finalizedAtMs: item.finalized_at_ms === undefined ? undefined : Number(item.finalized_at_ms),
    scopePath: scopePathOf(item),
    affectedScopes: item.scopes as string[],
    overagePolicy: item.overage_policy as Reservation['overagePolicy'],
    metadata: metadataOf(item),
    holdShards: Array.isArray(item.hold_shards) ? item.hold_shards.map(Number) : undefined,
    heldIn: Array.isArray(item.held_in) ? item.held_in.map(Number) : undefined,
  };
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
