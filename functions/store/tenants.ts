import type { AuditEntry } from '../domain/audit.js';
import type { Tenant, TenantStatus } from '../domain/tenant.js';
import { auditPut } from './audit.js';
import { tableName } from './client.js';
import { directory, keys } from './keys.js';
import { queryPage } from './pages.js';
import {
  getItems,
  type Item,
  putIfAbsent,
  type TransactItem,
  tenantExists,
  transact,
} from './transact.js';

const tenantAttributes = (t: Tenant) => ({
  type: 'tenant',
  tenant_id: t.tenantId,
  name: t.name,
  status: t.status,
  created_at: t.createdAt,
  ...(t.updatedAt !== undefined && { updated_at: t.updatedAt }),
  dir_pk: directory.tenants.pk,
  dir_sk: directory.tenants.sk(t.tenantId),
});

/** The tenant record, only if no tenant has that id. */
export const newTenantPut = (t: Tenant): TransactItem =>
  putIfAbsent({ ...keys.tenant(t.tenantId), ...tenantAttributes(t) });

/** The tenant and its audit record, or nothing when the id is taken. */
export async function insertTenant(
  t: Tenant,
  audit: AuditEntry,
): Promise<'inserted' | 'duplicate'> {
  const outcome = await transact([newTenantPut(t), auditPut(audit)]);
  return outcome.kind === 'committed' ? 'inserted' : 'duplicate';
}

export function tenantOf(item: Item): Tenant {
  return {
    tenantId: String(item.tenant_id),
    name: String(item.name),
    status: String(item.status) as TenantStatus,
    createdAt: String(item.created_at),
    updatedAt: item.updated_at === undefined ? undefined : String(item.updated_at),
  };
}

export async function getTenant(tenant: string): Promise<Tenant | undefined> {
  const key = keys.tenant(tenant);
  const item = (await getItems([key])).get(key.pk);
  return item?.type === 'tenant' ? tenantOf(item) : undefined;
}

/** Tenants by id, optionally of one status (the directory index). */
export async function queryTenants(q: {
  readonly status?: TenantStatus | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
}) {
  const page = await queryPage({
    index: 'directory',
    partitionKey: 'dir_pk',
    partition: directory.tenants.pk,
    sortKey: 'dir_sk',
    lowest: '',
    highest: '~',
    newestFirst: false,
    after: q.after,
    limit: q.limit,
    matches: (item) => q.status === undefined || item.status === q.status,
  });
  return { tenants: page.items.map(tenantOf), nextPosition: page.nextPosition };
}

/**
 * A change to the tenant as it was read (name and status unchanged since), with its audit
 * record: 'stale' when another change came first.
 */
export async function updateTenant(
  before: Tenant,
  after: Tenant,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const outcome = await transact([
    {
      Update: {
        TableName: tableName(),
        Key: keys.tenant(after.tenantId),
        // The directory attributes too: a tenant made before the listing existed joins it.
        UpdateExpression:
          'SET #status = :to, #name = :name, #updated = :updated, #dir_pk = :dir_pk, #dir_sk = :dir_sk',
        ConditionExpression: '#status = :from AND #name = :was',
        ExpressionAttributeNames: {
          '#status': 'status',
          '#name': 'name',
          '#updated': 'updated_at',
          '#dir_pk': 'dir_pk',
          '#dir_sk': 'dir_sk',
        },
        ExpressionAttributeValues: {
          ':to': after.status,
          ':name': after.name,
          ':updated': after.updatedAt ?? after.createdAt,
          ':from': before.status,
          ':was': before.name,
          ':dir_pk': directory.tenants.pk,
          ':dir_sk': directory.tenants.sk(after.tenantId),
        },
      },
    },
    auditPut(audit),
  ]);
  return outcome.kind === 'committed' ? 'updated' : 'stale';
}

/**
 * How long a process may answer from a tenant's record it read: a suspension, a close, or a
 * budget on a new dimension key takes effect for new work within this bound
 * (docs/decisions.md § Control plane). Server time, so tests move past it instead of waiting.
 */
export const TENANT_STATE_TTL_MS = 5_000;

/** What new work needs of its tenant: whether it may start, and its budgeted dimension keys. */
export interface TenantState {
  /** Undefined when no tenant record exists (nothing to enforce). */
  readonly status?: TenantStatus | undefined;
  readonly dimensionKeys: ReadonlySet<string>;
}
const states = new Map<string, { readonly state: TenantState; readonly at: number }>();
const STATES_MAX = 10_000;

/** The tenant's state (strongly consistent read, then cached for TENANT_STATE_TTL_MS). */
export async function tenantState(tenant: string, now: number): Promise<TenantState> {
  const seen = states.get(tenant);
  if (seen && now >= seen.at && now - seen.at < TENANT_STATE_TTL_MS) return seen.state;
  const key = keys.tenant(tenant);
  const item = (await getItems([key])).get(key.pk);
  const stored = item?.dimension_keys;
  const state: TenantState = {
    status: item?.type === 'tenant' ? (String(item.status) as TenantStatus) : undefined,
    dimensionKeys: new Set<string>(stored instanceof Set ? [...stored].map(String) : []),
  };
  if (states.size >= STATES_MAX) states.clear();
  states.set(tenant, { state, at: now });
  return state;
}

/**
 * Inside a budget's creation: the tenant must exist, and the dimension keys its scope names
 * become budget levels of the tenant (a string set on the tenant item).
 */
export function tenantWithDimensions(tenant: string, dimensionKeysOfScope: readonly string[]) {
  if (dimensionKeysOfScope.length === 0) return tenantExists(tenant);
  return {
    Update: {
      TableName: tableName(),
      Key: keys.tenant(tenant),
      UpdateExpression: 'ADD #keys :keys',
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#keys': 'dimension_keys', '#pk': 'pk' },
      ExpressionAttributeValues: { ':keys': new Set(dimensionKeysOfScope) },
    },
  };
}
