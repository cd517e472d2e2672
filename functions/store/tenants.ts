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

/** The tenant item, strongly consistent; undefined when there is none. */
async function readTenantItem(tenant: string): Promise<Item | undefined> {
  const key = keys.tenant(tenant);
  const item = (await getItems([key])).get(key.pk);
  return item?.type === 'tenant' ? item : undefined;
}

export async function getTenant(tenant: string): Promise<Tenant | undefined> {
  const item = await readTenantItem(tenant);
  return item && tenantOf(item);
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
  const item = await readTenantItem(tenant);
  const stored = item?.dimension_keys;
  const state: TenantState = {
    status: item && (String(item.status) as TenantStatus),
    dimensionKeys: new Set<string>(stored instanceof Set ? [...stored].map(String) : []),
  };
  if (states.size >= STATES_MAX) states.clear();
  states.set(tenant, { state, at: now });
  return state;
}

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

/** The tenant's sharded budgets, strongly consistent; undefined when there is no tenant. */
export async function getShardedBudgets(tenant: string): Promise<ShardedBudgets | undefined> {
  const item = await readTenantItem(tenant);
  if (!item) return undefined;
  return {
    byUnit: (item.sharded_budgets ?? {}) as ShardedBudgets['byUnit'],
    version: Number(item.sharded_version ?? 0),
  };
}

/** A sharded budget joining the tenant's map: written only if the map is still as read. */
export interface ShardedBudgetJoin {
  readonly read: ShardedBudgets;
  readonly scope: string;
  readonly unit: string;
  readonly shards: number;
}

/**
 * Inside a budget's creation: the tenant must exist, and the dimension keys its scope names
 * become budget levels of the tenant (a string set on the tenant item). A sharded budget also
 * joins the tenant's map of sharded budgets, on the condition that no other joined since it was
 * read (ALL_OLD tells that apart from a missing tenant).
 */
export function tenantWithDimensions(
  tenant: string,
  dimensionKeysOfScope: readonly string[],
  join?: ShardedBudgetJoin,
): TransactItem {
  if (dimensionKeysOfScope.length === 0 && !join) return tenantExists(tenant);
  const names: Record<string, string> = { '#pk': 'pk' };
  const values: Record<string, unknown> = {};
  const clauses: string[] = [];
  const conditions = ['attribute_exists(#pk)'];
  if (join) {
    const { byUnit, version } = join.read;
    Object.assign(names, { '#sharded': 'sharded_budgets', '#version': 'sharded_version' });
    values[':sharded'] = {
      ...byUnit,
      [join.unit]: { ...byUnit[join.unit], [join.scope]: join.shards },
    };
    values[':next'] = version + 1;
    clauses.push('SET #sharded = :sharded, #version = :next');
    if (version === 0) conditions.push('attribute_not_exists(#version)');
    else {
      values[':version'] = version;
      conditions.push('#version = :version');
    }
  }
  if (dimensionKeysOfScope.length > 0) {
    names['#keys'] = 'dimension_keys';
    values[':keys'] = new Set(dimensionKeysOfScope);
    clauses.push('ADD #keys :keys');
  }
  return {
    Update: {
      TableName: tableName(),
      Key: keys.tenant(tenant),
      UpdateExpression: clauses.join(' '),
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}
