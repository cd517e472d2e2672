import type { Unit } from '../domain/amounts.js';
import { budgetKey } from '../domain/budget.js';
import { reservationKeyId } from '../domain/reservation-id.js';
import type { Level } from '../domain/scopes.js';

/** Every key format of the table lives here (docs/table-design.md). */
const SK = '-';
export const POLICY_PREFIX = 'POLICY#';
/** The partitions of request counters (rateWindow): the rate limiter's IAM grant names them. */
export const RATE_PREFIX = 'RATE#';
export const DUE_SHARDS = 16;

const pad = (n: number): string => String(Math.max(0, Math.trunc(n))).padStart(15, '0');

export const keys = {
  tenant: (tenant: string) => ({ pk: `TENANT#${tenant}`, sk: SK }),
  /**
   * A policy lives in its tenant's partition, so a tenant's state and policies are one Query
   * (tenantState) and the listing is a strongly consistent Query too.
   */
  policy: (tenant: string, policyId: string) => ({
    pk: `TENANT#${tenant}`,
    sk: `${POLICY_PREFIX}${policyId}`,
  }),
  /** Holds a policy's name, so no two policies of a tenant share one (409 DUPLICATE_RESOURCE). */
  policyName: (tenant: string, name: string) => ({
    pk: `TENANT#${tenant}`,
    sk: `POLICYNAME#${name}`,
  }),
  /** Points from a policy id to its tenant (GET and PATCH by id). */
  policyId: (policyId: string) => ({ pk: `POLICYID#${policyId}`, sk: SK }),
  apiKey: (secretHash: string) => ({ pk: `APIKEY#${secretHash}`, sk: SK }),
  /** Points from a key id to its key item (keys are stored under the hash of their secret). */
  apiKeyId: (keyId: string) => ({ pk: `APIKEYID#${keyId}`, sk: SK }),
  /**
   * The request counters of a tenant and its keys in one minute (store/rate-counters.ts): a
   * partition of its own per tenant and window, so counting never touches a budget's items.
   */
  rateWindow: (tenant: string, windowStart: number) => ({
    pk: `${RATE_PREFIX}${tenant}#${windowStart}`,
    sk: SK,
  }),
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
  /**
   * The budget of a ledger item's or a shard's pk, undefined for any other: parsed from the end,
   * where the unit (which holds no '#') and a shard's number are, so a scope may hold '#'.
   */
  budgetOfLedgerPk: (pk: string): { scope: string; unit: Unit } | undefined => {
    if (!pk.startsWith('LEDGER#')) return undefined;
    const parts = pk.slice('LEDGER#'.length).split('#');
    if (/^\d+$/.test(parts[parts.length - 1] ?? '')) parts.pop();
    const unit = parts.pop();
    return unit && parts.length > 0 ? { scope: parts.join('#'), unit: unit as Unit } : undefined;
  },
  /** Every key of a reservation's is by its record's key id: an id's hint is no part of them. */
  reservation: (reservationId: string) => ({
    pk: `RESERVATION#${reservationKeyId(reservationId)}`,
    sk: SK,
  }),
  /** The key id of a reservation item's pk (domain/reservation-id.ts adds the hint). */
  reservationKeyIdOfPk: (pk: string) => pk.slice('RESERVATION#'.length),
  /** A reservation's charges (POST …/charges) in the order they were made: one Query lists them. */
  charge: (reservationId: string, sequence: number) => ({
    pk: chargesPartition(reservationId),
    sk: pad(sequence),
  }),
  /** A reservation's delegations (its children) in the order they were made: one Query. */
  delegation: (parentId: string, sequence: number) => ({
    pk: `DELEGATIONS#${reservationKeyId(parentId)}`,
    sk: pad(sequence),
  }),
  event: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: SK }),
  /**
   * An emitted event (the protocol's Event: budget state, lifecycle, …), kept for the retention.
   * Not `EVENT#`: those are the usage events clients record (POST /v1/events).
   */
  loggedEvent: (eventId: string) => ({ pk: `EVT#${eventId}`, sk: SK }),
  webhook: (subscriptionId: string) => ({ pk: `WEBHOOK#${subscriptionId}`, sk: SK }),
  /** A subscription's deliveries, newest last: its delivery log is one Query. */
  delivery: (subscriptionId: string, createdAtMs: number, deliveryId: string) => ({
    pk: deliveryPartition(subscriptionId),
    sk: `${pad(createdAtMs)}#${deliveryId}`,
  }),
  /** The operator's webhook security settings (one item; the defaults while absent). */
  webhookSecurity: () => ({ pk: 'CONFIG#webhook-security', sk: SK }),
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
export const deliveryPartition = (subscriptionId: string): string =>
  `WHDELIVERIES#${subscriptionId}`;

/** The sort key bounds of a time range [from, to] (either open) of keys led by 15-digit ms. */
export const timeRange = (fromMs = 0, toMs = 999_999_999_999_999) => ({
  from: pad(fromMs),
  to: `${pad(toMs)}#~`,
});

/** Positions of time-ordered listings (events, deliveries): `<ms>#<id>`. */
export const isTimePosition = (position: string): boolean =>
  /^\d{15}#[A-Za-z0-9_.-]+$/.test(position);

/** `<ms, 15 digits>#<id>`: what events and deliveries are ordered by. */
export const timeKey = (atMs: number, id: string): string => `${pad(atMs)}#${id}`;

export const chargesPartition = (reservationId: string): string =>
  `CHARGES#${reservationKeyId(reservationId)}`;
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
  /** One tenant's events by time (`timeKey`); all tenants' are in `eventSpreads` instead. */
  events: { pk: (tenant: string) => `EVENTS#${tenant}` },
  /** Webhook subscriptions by owner (a tenant, or `__system__`), then id. */
  webhooks: {
    pk: 'WEBHOOKS',
    sk: (tenant: string, subscriptionId: string) => `${tenant}#${subscriptionId}`,
    ownerPrefix: (tenant: string) => `${tenant}#`,
  },
  /**
   * The recent refusals and expiries the operator's overview lists, by time (then tenant and
   * id), each spread over RECENT_SPREAD partitions: written per (sampled) refusal and per expiry.
   */
  denials: {
    pk: (id: string) => `DENIALS#${hashOf(id) % RECENT_SPREAD}`,
    sk: (atMs: number, tenant: string, id: string) => `${pad(atMs)}#${tenant}#${id}`,
  },
  expiries: {
    pk: (id: string) => `EXPIRIES#${hashOf(id) % RECENT_SPREAD}`,
    sk: (atMs: number, tenant: string, id: string) => `${pad(atMs)}#${tenant}#${id}`,
  },
} as const;

/**
 * Every tenant's events, by time, on the `byStatus` index (`status_pk` / `list_sk`, keys only,
 * beside the reservations' `T#…` partitions),
 * spread over EVENT_SPREAD partitions by event id: a busy deployment's events do not meet one
 * index partition's 1,000 writes/s; the operator's listing queries all and merges.
 */
export const EVENT_SPREAD = 4;
export const eventSpreads = (): string[] =>
  Array.from({ length: EVENT_SPREAD }, (_, k) => `EVENTS~${k}`);
export const eventSpreadOf = (eventId: string): string =>
  `EVENTS~${hashOf(eventId) % EVENT_SPREAD}`;

/**
 * Unfinished webhook deliveries on the sparse due index (`due_pk` / `due_sk`, beside the
 * reservations' `DUE#k`), by when they are next due: the local worker resumes them at start,
 * and in AWS a delivery whose message was lost stays findable. Spread like the events.
 */
export const DELIVERY_DUE_SPREAD = 4;
export const deliveryDuePartitions = (): string[] =>
  Array.from({ length: DELIVERY_DUE_SPREAD }, (_, k) => `WEBHOOKDUE#${k}`);
export const deliveryDuePartition = (deliveryId: string): string =>
  `WEBHOOKDUE#${hashOf(deliveryId) % DELIVERY_DUE_SPREAD}`;

/** Partitions each recent-activity listing of the directory is spread over. */
export const RECENT_SPREAD = 4;

/** The operator overview's counters, spread so that concurrent admin changes rarely meet. */
export const COUNTER_SPREAD = 8;
export const counterKey = (k: number) => ({ pk: `OVERVIEW#${k}`, sk: SK });

/** The lowest directory sort key at or after `atMs` (a time window's start). */
export const directoryTimeFloor = (atMs: number): string => pad(atMs);

export const ledgerIndexPartition = (tenant: string, segment: string): string =>
  `LEDGERINDEX#${tenant}#${segment}`;

/** Listing sort key: creation time, then id, so pages are stable while items are added. */
export const listSortKey = (createdAtMs: number, reservationId: string): string =>
  `${pad(createdAtMs)}#${reservationKeyId(reservationId)}`;

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
export const listSpreadOf = (reservationId: string): number =>
  hashOf(reservationKeyId(reservationId)) % LIST_SPREAD;

export const listPartitions = {
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
  duePartition(hashOf(reservationKeyId(reservationId)) % DUE_SHARDS);

/**
 * Due-index sort key: deadline first (the sweeper's range), then the tenant, so a tenant's due
 * reservations can be picked from the keys alone (tenant ids hold no '#').
 */
export const dueSortKey = (deadlineMs: number, tenant: string, reservationId: string): string =>
  `${pad(deadlineMs)}#${tenant}#${reservationKeyId(reservationId)}`;

export const deadlineOfDueKey = (dueSk: string): number => Number(dueSk.slice(0, 15));

/** The tenant of a due key; undefined for keys written before it carried one. */
export const tenantOfDueKey = (dueSk: string): string | undefined => {
  const parts = dueSk.split('#');
  return parts.length === 3 ? parts[1] : undefined;
};

/** Every due key strictly before this bound is due at `now`. */
export const dueBound = (now: number): string => `${pad(now)}#~`;
