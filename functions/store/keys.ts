import type { Unit } from '../domain/amounts.js';
import type { Level } from '../domain/scopes.js';

/** Every key format of the table lives here (docs/table-design.md). */
const SK = '-';
export const DUE_SHARDS = 16;

const pad = (n: number): string => String(Math.max(0, Math.trunc(n))).padStart(15, '0');

export const keys = {
  tenant: (tenant: string) => ({ pk: `TENANT#${tenant}`, sk: SK }),
  apiKey: (secretHash: string) => ({ pk: `APIKEY#${secretHash}`, sk: SK }),
  ledger: (scope: string, unit: Unit) => ({ pk: `LEDGER#${scope}#${unit}`, sk: SK }),
  /** One entry per segment of a ledger's path, so a balance filter is one Query. */
  ledgerIndex: (tenant: string, segment: string, scope: string, unit: Unit) => ({
    pk: ledgerIndexPartition(tenant, segment),
    sk: `${scope}#${unit}`,
  }),
  reservation: (reservationId: string) => ({ pk: `RESERVATION#${reservationId}`, sk: SK }),
  event: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: SK }),
  idempotency: (tenant: string, operation: string, key: string) => ({
    pk: `IDEMPOTENCY#${tenant}#${operation}#${key}`,
    sk: SK,
  }),
};

export const ledgerIndexPartition = (tenant: string, segment: string): string =>
  `LEDGERINDEX#${tenant}#${segment}`;

/** Listing sort key: creation time, then id, so pages are stable while items are added. */
export const listSortKey = (createdAtMs: number, reservationId: string): string =>
  `${pad(createdAtMs)}#${reservationId}`;

export const reservationIdOfListKey = (listSk: string): string => listSk.slice(16);

export const listPartitions = {
  tenant: (tenant: string) => `T#${tenant}`,
  status: (tenant: string, status: string) => `T#${tenant}#${status}`,
  level: (tenant: string, level: Level, value: string) => `T#${tenant}#${level}#${value}`,
};

export const duePartition = (shard: number): string => `DUE#${shard}`;

export function dueShard(reservationId: string): string {
  let h = 0;
  for (const c of reservationId) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return duePartition(h % DUE_SHARDS);
}

export const dueSortKey = (deadlineMs: number, reservationId: string): string =>
  `${pad(deadlineMs)}#${reservationId}`;

/** Every due key strictly before this bound is due at `now`. */
export const dueBound = (now: number): string => `${pad(now)}#~`;
