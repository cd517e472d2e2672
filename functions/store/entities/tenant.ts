import { rateLimitsFrom } from '../../domain/rate-limits.js';
import type { Tenant, TenantSettings, TenantStatus } from '../../domain/tenant.js';
import { and, attr, conditionCheck, type Item, type TransactItem } from '../expressions.js';
import { directory, keys } from '../keys.js';
import type { TransactOutcome } from '../transact.js';

// The tenant family: one item per tenant, which also carries the dimension keys its budgets
// name (budget levels: domain/scopes.ts) and its map of sharded budgets (domain/escrow.ts).

/** Written on every tenant item from this version on (absent: written before). */
export const TENANT_VERSION = 1;

export const isTenantItem = (item: Item | undefined): item is Item => item?.type === 'tenant';

/** A tenant's settings, each its own attribute (absent: at its default). */
const SETTING_ATTRIBUTES = {
  defaultCommitOveragePolicy: 'default_overage_policy',
  defaultReservationTtlMs: 'default_ttl_ms',
  maxReservationTtlMs: 'max_ttl_ms',
  maxReservationExtensions: 'max_extensions',
  reservationExpiryPolicy: 'expiry_policy',
  unbudgetedScopes: 'unbudgeted_scopes',
} as const satisfies Record<keyof TenantSettings, string>;

/** Optional attributes of the record: every one written, absent ones as undefined (removed). */
export const optionalTenantAttributes = (t: Tenant): Item => ({
  updated_at: t.updatedAt,
  parent_tenant_id: t.parentTenantId,
  metadata: t.metadata,
  suspended_at: t.suspendedAt,
  closed_at: t.closedAt,
  rate_limits: t.rateLimits && { ...t.rateLimits },
  ...Object.fromEntries(
    Object.entries(SETTING_ATTRIBUTES).map(([k, a]) => [
      a,
      t.settings?.[k as keyof TenantSettings],
    ]),
  ),
});

/** The record, with the `directory` index attributes (the operator's listing). */
export const tenantAttributes = (t: Tenant): Item => ({
  type: 'tenant',
  tenant_id: t.tenantId,
  name: t.name,
  status: t.status,
  created_at: t.createdAt,
  ...Object.fromEntries(
    Object.entries(optionalTenantAttributes(t)).filter(([, v]) => v !== undefined),
  ),
  dir_pk: directory.tenants.pk,
  dir_sk: directory.tenants.sk(t.tenantId),
});

export const tenantItem = (t: Tenant): Item => ({
  ...keys.tenant(t.tenantId),
  ...tenantAttributes(t),
  v: TENANT_VERSION,
});

/** A ConditionCheck that the tenant record exists. */
export const tenantExists = (tenant: string): TransactItem =>
  conditionCheck(keys.tenant(tenant), attr('pk').exists());

/** A tenant is no longer open to changes of what it owns once CLOSED (the reference's Rule 2). */
export const tenantNotClosed = attr('status').ne('CLOSED');

/**
 * A ConditionCheck that the tenant exists and is not CLOSED; on failure the tenant as it was
 * comes back (ALL_OLD), so a closed tenant (409 TENANT_CLOSED) is told from a missing one.
 */
export const tenantOpen = (tenant: string): TransactItem =>
  conditionCheck(keys.tenant(tenant), and(attr('pk').exists(), tenantNotClosed), {
    returnOld: true,
  });

/** Whether a cancelled transaction failed on a CLOSED tenant's record. */
export const closedTenantIn = (outcome: TransactOutcome): boolean =>
  outcome.kind === 'cancelled' &&
  outcome.reasons.some((r) => r.item?.type === 'tenant' && r.item.status === 'CLOSED');

/**
 * No older format: tenants made before the directory listing existed lack `dir_pk` (they are
 * listed once their first change writes it) but read as any other.
 */
export function tenantOf(item: Item): Tenant {
  const text = (a: string) => (item[a] === undefined ? undefined : String(item[a]));
  const settings = Object.fromEntries(
    Object.entries(SETTING_ATTRIBUTES).flatMap(([k, a]) =>
      item[a] === undefined ? [] : [[k, typeof item[a] === 'number' ? item[a] : String(item[a])]],
    ),
  ) as TenantSettings;
  return {
    tenantId: String(item.tenant_id),
    name: String(item.name),
    status: String(item.status) as TenantStatus,
    createdAt: String(item.created_at),
    updatedAt: text('updated_at'),
    parentTenantId: text('parent_tenant_id'),
    metadata: item.metadata as Tenant['metadata'],
    settings: Object.keys(settings).length > 0 ? settings : undefined,
    rateLimits: rateLimitsFrom(item.rate_limits),
    suspendedAt: text('suspended_at'),
    closedAt: text('closed_at'),
  };
}

/** The dimension keys a tenant's budgets name: budget levels, the rest are tags. */
export const dimensionKeysOf = (item: Item | undefined): ReadonlySet<string> => {
  const stored = item?.dimension_keys;
  return new Set<string>(stored instanceof Set ? [...stored].map(String) : []);
};

/**
 * The sharded budgets of a tenant, by unit then scope (their shard counts), kept on the tenant
 * item so that a new sharded budget can be checked against every path it joins
 * (domain/escrow.ts heaviestPathExtra) without reading the tenant's budgets; `version` orders
 * concurrent creations.
 */
export interface ShardedBudgets {
  readonly byUnit: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly version: number;
}

export const shardedBudgetsOf = (item: Item): ShardedBudgets => ({
  byUnit: (item.sharded_budgets ?? {}) as ShardedBudgets['byUnit'],
  version: Number(item.sharded_version ?? 0),
});
