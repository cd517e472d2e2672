import type { Unit } from '../domain/amounts.js';
import { budgetKey } from '../domain/budget.js';
import type { Level } from '../domain/scopes.js';

/** Every key format of the table lives here (docs/table-design.md). */
const SK = '-';
export const DUE_SHARDS = 16;

const pad = (n: number): string => String(Math.max(0, Math.trunc(n))).padStart(15, '0');

export const keys = {
  tenant: (tenant: string) => ({ pk: `TENANT#${tenant}`, sk: SK }),
  apiKey: (secretHash: string) => ({ pk: `APIKEY#${secretHash}`, sk: SK }),
  /** Points from a key id to its key item (keys are stored under the hash of their secret). */
  apiKeyId: (keyId: string) => ({ pk: `APIKEYID#${keyId}`, sk: SK }),
  ledger: (scope: string, unit: Unit) => ({ pk: `LEDGER#${budgetKey({ scope, unit })}`, sk: SK }),
  /** Escrow shard k ≥ 1 of a sharded budget (shard 0 is the ledger item): its own partition. */
  ledgerShard: (scope: string, unit: Unit, k: number) => ({
    pk: `LEDGER#${budgetKey({ scope, unit })}#${k}`,
    sk: SK,
  }),
  /**
   * The ledger of one closed period of a rolling budget: every period of a budget in one
   * partition, by start, so its history is one Query.
   */
  ledgerPeriod: (scope: string, unit: Unit, start: number) => ({
    pk: `LEDGERPERIOD#${budgetKey({ scope, unit })}`,
    sk: pad(start),
  }),
  /** One entry per segment of a ledger's path, so a balance filter is one Query. */
  ledgerIndex: (tenant: string, segment: string, scope: string, unit: Unit) => ({
    pk: ledgerIndexPartition(tenant, segment),
    sk: budgetKey({ scope, unit }),
  }),
  reservation: (reservationId: string) => ({ pk: `RESERVATION#${reservationId}`, sk: SK }),
  /** The reservation id of a reservation item's pk. */
  reservationIdOfPk: (pk: string) => pk.slice('RESERVATION#'.length),
  /** A reservation's charges (POST …/charges) in the order they were made: one Query lists them. */
  charge: (reservationId: string, sequence: number) => ({
    pk: chargesPartition(reservationId),
    sk: pad(sequence),
  }),
  /** A reservation's delegations (its children) in the order they were made: one Query. */
  delegation: (parentId: string, sequence: number) => ({
    pk: `DELEGATIONS#${parentId}`,
    sk: pad(sequence),
  }),
  event: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: SK }),
  /** A refused reservation, kept a day for the stream to turn into reservation.denied. */
  refusal: (refusalId: string) => ({ pk: `REFUSAL#${refusalId}`, sk: SK }),
  /**
   * A tenant's audit trail in time order. The request id keeps same-millisecond entries apart,
   * and the hash of what was changed the several entries of one request (a close cascade).
   */
  audit: (tenant: string, atMs: number, requestId: string, target: string) => ({
    pk: auditPartition(tenant),
    sk: `${pad(atMs)}#${requestId}#${hashOf(target).toString(36)}`,
  }),
  /**
   * A budget's estimate accuracy (domain/accuracy.ts), one partition per budget (`budgetKey`):
   * its tracked kinds (`KINDS`), one item per tracked kind, and `OTHER`. One Query reads it all.
   */
  accuracy: (budget: string, part: 'KINDS' | 'OTHER' | { readonly kind: string }) => ({
    pk: `ACCURACY#${budget}`,
    sk: typeof part === 'string' ? part : `KIND#${part.kind}`,
  }),
  idempotency: (tenant: string, operation: string, key: string) => ({
    pk: `IDEMPOTENCY#${tenant}#${operation}#${key}`,
    sk: SK,
  }),
};

export const auditPartition = (tenant: string): string => `AUDIT#${tenant}`;
export const chargesPartition = (reservationId: string): string => `CHARGES#${reservationId}`;
export const reservationIdOfCharges = (pk: string): string => pk.slice('CHARGES#'.length);
/** A charge's position in its listing (its sequence, as the sort key holds it). */
export const isChargePosition = (position: string): boolean => /^\d{15}$/.test(position);

/** The audit sort key bounds of a time range [from, to] (either open). */
export const auditRange = (fromMs = 0, toMs = 999_999_999_999_999) => ({
  from: pad(fromMs),
  to: `${pad(toMs)}#~`,
});

/**
 * Partitions of the `directory` index: the operator's listings. Tenants by id, keys by tenant
 * then id, the audit trail across tenants by time (then tenant). Rare writes only.
 */
export const directory = {
  tenants: { pk: 'TENANTS', sk: (tenant: string) => tenant },
  apiKeys: {
    pk: 'APIKEYS',
    sk: (tenant: string, keyId: string) => `${tenant}#${keyId}`,
    tenantPrefix: (tenant: string) => `${tenant}#`,
  },
  audit: {
    pk: 'AUDIT',
    sk: (tenant: string, auditSk: string) =>
      `${auditSk.slice(0, 15)}#${tenant}#${auditSk.slice(16)}`,
  },
} as const;

export const ledgerIndexPartition = (tenant: string, segment: string): string =>
  `LEDGERINDEX#${tenant}#${segment}`;

/** Listing sort key: creation time, then id, so pages are stable while items are added. */
export const listSortKey = (createdAtMs: number, reservationId: string): string =>
  `${pad(createdAtMs)}#${reservationId}`;

/** Positions in cursors are signed, but checked anyway: DynamoDB must never see a bad key. */
export const isListPosition = (position: string): boolean =>
  /^\d{15}#[A-Za-z0-9_]+$/.test(position);
export const isLedgerIndexPosition = (position: string): boolean =>
  /^tenant:[^#]+#[A-Z_]+$/.test(position);

export const reservationIdOfListKey = (listSk: string): string => listSk.slice(16);

/**
 * Each listing partition of a tenant is spread over LIST_SPREAD partition keys, so a busy
 * tenant's index writes (2 per reserve→commit pair on `…#ACTIVE`) do not meet one GSI partition's
 * 1,000 writes/s; a listing reads all of them and merges (docs/scaling.md). Spread 0 is the key
 * without a suffix, the one every reservation had before, so older items stay listed.
 */
export const LIST_SPREAD = 4;

const spreadKey = (key: string, spread: number) => (spread === 0 ? key : `${key}~${spread}`);

/** The listing spread of a reservation: fixed by its id, so a status change keeps it. */
export const listSpreadOf = (reservationId: string): number => hashOf(reservationId) % LIST_SPREAD;

export const listPartitions = {
  tenant: (tenant: string, spread = 0) => spreadKey(`T#${tenant}`, spread),
  status: (tenant: string, status: string, spread = 0) =>
    spreadKey(`T#${tenant}#${status}`, spread),
  level: (tenant: string, level: Level, value: string, spread = 0) =>
    spreadKey(`T#${tenant}#${level}#${value}`, spread),
};

export const duePartition = (shard: number): string => `DUE#${shard}`;

/** A stable 32-bit hash of an id: spreads, shards and seeds derive from it. */
export function hashOf(id: string): number {
  let h = 0;
  for (const c of id) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h;
}

export const dueShard = (reservationId: string): string =>
  duePartition(hashOf(reservationId) % DUE_SHARDS);

/**
 * Due-index sort key: deadline first (the sweeper's range), then the tenant, so a tenant's due
 * reservations can be picked from the keys alone (tenant ids hold no '#').
 */
export const dueSortKey = (deadlineMs: number, tenant: string, reservationId: string): string =>
  `${pad(deadlineMs)}#${tenant}#${reservationId}`;

export const deadlineOfDueKey = (dueSk: string): number => Number(dueSk.slice(0, 15));

/** The tenant of a due key; undefined for keys written before it carried one. */
export const tenantOfDueKey = (dueSk: string): string | undefined => {
  const parts = dueSk.split('#');
  return parts.length === 3 ? parts[1] : undefined;
};

/** Every due key strictly before this bound is due at `now`. */
export const dueBound = (now: number): string => `${pad(now)}#~`;
