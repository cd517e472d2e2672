import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../domain/audit.js';
import type { Policy } from '../domain/policies.js';
import type { Tenant, TenantSettings, TenantStatus } from '../domain/tenant.js';
import { TtlCache } from '../ttl-cache.js';
import { documentClient, tableName } from './client.js';
import { isPolicyItem, policyOf } from './entities/policy.js';
import {
  dimensionKeysOf,
  isTenantItem,
  optionalTenantAttributes,
  type ShardedBudgets,
  shardedBudgetsOf,
  tenantExists,
  tenantItem,
  tenantNotClosed,
  tenantOf,
  tenantOpen,
} from './entities/tenant.js';
import {
  and,
  attr,
  type Item,
  putIfAbsent,
  queryExpressions,
  type TransactItem,
  update,
} from './expressions.js';
import { directory, keys } from './keys.js';
import { countersDelta } from './overview.js';
import { queryPage } from './pages.js';
import { getItems } from './transact.js';
import { writeAudited } from './write.js';

export type { ShardedBudgets };

/** The tenant record, only if no tenant has that id; counted in the overview's counters. */
export const newTenantPut = (t: Tenant): TransactItem =>
  putIfAbsent({ ...tenantItem(t), counted: true });

/** The tenant, the overview's count of it, and its audit record; nothing when the id is taken. */
export async function insertTenant(
  t: Tenant,
  audit: AuditEntry,
): Promise<'inserted' | 'duplicate'> {
  const items = [newTenantPut(t), countersDelta({ [`tenants_${t.status}`]: 1 })];
  return (await writeAudited(items, audit)) === 'written' ? 'inserted' : 'duplicate';
}

/** The tenant item, strongly consistent; undefined when there is none. */
async function readTenantItem(tenant: string): Promise<Item | undefined> {
  const key = keys.tenant(tenant);
  const item = (await getItems([key])).get(key.pk);
  return isTenantItem(item) ? item : undefined;
}

export async function getTenant(tenant: string): Promise<Tenant | undefined> {
  const item = await readTenantItem(tenant);
  return item && tenantOf(item);
}

/** Tenants by id, optionally of one status and matching a predicate (the directory index). */
export async function queryTenants(q: {
  readonly status?: TenantStatus | undefined;
  readonly matches?: ((t: Tenant) => boolean) | undefined;
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
    matches: (item) =>
      (q.status === undefined || item.status === q.status) && (q.matches?.(tenantOf(item)) ?? true),
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
  const optional = Object.entries(optionalTenantAttributes(after));
  const moved = before.status !== after.status;
  // A status change moves the tenant between the overview's counts. A tenant made before they
  // existed is not counted yet: its first change counts it (in its new status).
  const attempt = (counted: boolean) =>
    writeAudited(
      [
        update(
          keys.tenant(after.tenantId),
          {
            set: {
              status: after.status,
              name: after.name,
              ...Object.fromEntries(optional.filter(([, v]) => v !== undefined)),
              // The directory attributes too: a tenant made before the listing existed joins it.
              dir_pk: directory.tenants.pk,
              dir_sk: directory.tenants.sk(after.tenantId),
              ...(moved && { counted: true }),
            },
            remove: optional.filter(([, v]) => v === undefined).map(([a]) => a),
          },
          {
            condition: and(
              attr('status').eq(before.status),
              attr('name').eq(before.name),
              before.updatedAt === undefined
                ? attr('updated_at').notExists()
                : attr('updated_at').eq(before.updatedAt),
              moved && (counted ? attr('counted').exists() : attr('counted').notExists()),
            ),
          },
        ),
        ...(moved
          ? [
              countersDelta({
                ...(counted && { [`tenants_${before.status}`]: -1 }),
                [`tenants_${after.status}`]: 1,
              }),
            ]
          : []),
      ],
      audit,
    );
  if ((await attempt(true)) === 'written') return 'updated';
  return moved && (await attempt(false)) === 'written' ? 'updated' : 'stale';
}

/**
 * How long a process may answer from a tenant's record it read: a suspension, a close, or a
 * budget on a new dimension key takes effect for new work within this bound
 * (docs/decisions.md § Control plane). Server time, so tests move past it instead of waiting.
 */
export const TENANT_STATE_TTL_MS = 5_000;

/**
 * What new work needs of its tenant: whether it may start, its budgeted dimension keys, its
 * settings (defaults, limits, how unbudgeted scopes count) and its policies.
 */
export interface TenantState {
  /** Undefined when no tenant record exists (nothing to enforce). */
  readonly status?: TenantStatus | undefined;
  readonly dimensionKeys: ReadonlySet<string>;
  readonly settings: TenantSettings;
  readonly policies: readonly Policy[];
}
const states = new TtlCache<TenantState>(() => TENANT_STATE_TTL_MS);

/**
 * The tenant's state: one strongly consistent Query of its partition (its record and its
 * policies live there), then cached for TENANT_STATE_TTL_MS.
 */
export async function tenantState(tenant: string, now: number): Promise<TenantState> {
  const seen = states.get(tenant, now);
  if (seen) return seen.value;
  const items = await tenantPartition(tenant);
  const item = items.find(isTenantItem);
  const record = item && tenantOf(item);
  const state: TenantState = {
    status: record?.status,
    dimensionKeys: dimensionKeysOf(item),
    settings: record?.settings ?? {},
    policies: items.filter(isPolicyItem).map(policyOf),
  };
  states.set(tenant, state, now);
  return state;
}

/** Every item of the tenant's partition: its record, its policies and their name locks. */
async function tenantPartition(tenant: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        ...queryExpressions(attr('pk').eq(keys.tenant(tenant).pk)),
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((page.Items ?? []) as Item[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** The tenant's sharded budgets, strongly consistent; undefined when there is no tenant. */
export async function getShardedBudgets(tenant: string): Promise<ShardedBudgets | undefined> {
  const item = await readTenantItem(tenant);
  return item && shardedBudgetsOf(item);
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
  /** A new budget: the tenant must not be CLOSED either (the reference's Rule 2). */
  open = false,
): TransactItem {
  if (dimensionKeysOfScope.length === 0 && !join) {
    return open ? tenantOpen(tenant) : tenantExists(tenant);
  }
  const { byUnit, version } = join?.read ?? { byUnit: {}, version: 0 };
  return update(
    keys.tenant(tenant),
    {
      ...(join && {
        set: {
          sharded_budgets: {
            ...byUnit,
            [join.unit]: { ...byUnit[join.unit], [join.scope]: join.shards },
          },
          sharded_version: version + 1,
        },
      }),
      ...(dimensionKeysOfScope.length > 0 && {
        addToSet: { dimension_keys: new Set(dimensionKeysOfScope) },
      }),
    },
    {
      condition: and(
        attr('pk').exists(),
        open && tenantNotClosed,
        join &&
          (version === 0
            ? attr('sharded_version').notExists()
            : attr('sharded_version').eq(version)),
      ),
      returnOld: true,
    },
  );
}
