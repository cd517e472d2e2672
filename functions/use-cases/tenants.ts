import { config } from '../config/settings.js';
import { TENANT_CLOSED_CASCADE } from '../domain/audit.js';
import { DomainError } from '../domain/errors.js';
import {
  changedTenant,
  type Tenant,
  type TenantChange,
  type TenantSettings,
  type TenantSortKey,
  type TenantStatus,
} from '../domain/tenant.js';
import { getTenant, insertTenant, queryTenants, updateTenant } from '../store/tenants.js';
import { revokeKeysOfTenant } from './api-keys.js';
import { closeBudgetsOfTenant } from './budget-settings.js';
import { byOperator, type WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import {
  allOf,
  type Page,
  type PageRequest,
  paged,
  type SortDirection,
  type SortKey,
  sortedPage,
} from './pages.js';
import { releaseOpenReservations } from './settlements.js';
import { disableSubscriptionsOfTenant } from './webhooks.js';

export interface TenantRequest {
  readonly tenantId: string;
  readonly name: string;
  readonly parentTenantId?: string | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  readonly settings?: TenantSettings | undefined;
}

/** POST /v1/admin/tenants; an existing id → 409 DUPLICATE_RESOURCE. Audited. */
export async function createTenant(request: TenantRequest, context: WriteContext): Promise<Tenant> {
  // The deployment's default for how unbudgeted scopes count, where the request names none.
  const settings: TenantSettings = {
    ...(config.UNBUDGETED_SCOPES_DEFAULT === 'SKIP' && { unbudgetedScopes: 'SKIP' }),
    ...request.settings,
  };
  const tenant: Tenant = {
    tenantId: request.tenantId,
    name: request.name,
    status: 'ACTIVE',
    ...(request.parentTenantId !== undefined && { parentTenantId: request.parentTenantId }),
    ...(request.metadata !== undefined && { metadata: request.metadata }),
    ...(Object.keys(settings).length > 0 && { settings }),
    createdAt: new Date(context.now).toISOString(),
  };
  const audit = { ...byOperator(tenant.tenantId, context), action: 'tenant.create' as const };
  if ((await insertTenant(tenant, { ...audit, after: tenant })) === 'duplicate') {
    throw new DomainError('DUPLICATE_RESOURCE', `tenant ${tenant.tenantId} already exists`, {
      tenant_id: tenant.tenantId,
    });
  }
  return tenant;
}

const notFound = (tenantId: string) =>
  new DomainError('NOT_FOUND', `tenant ${tenantId} does not exist`, { tenant_id: tenantId });

/** GET /v1/admin/tenants/{tenant_id}. */
export async function readTenant(tenantId: string): Promise<Tenant> {
  const tenant = await getTenant(tenantId);
  if (!tenant) throw notFound(tenantId);
  return tenant;
}

export interface TenantFilters extends PageRequest {
  readonly status?: TenantStatus | undefined;
  readonly parentTenantId?: string | undefined;
  /** Case-insensitive substring of the id or the name. */
  readonly search?: string | undefined;
  readonly sortBy?: TenantSortKey | undefined;
  readonly sortDir?: SortDirection | undefined;
}

const sortKeyOf =
  (by: TenantSortKey) =>
  (t: Tenant): SortKey => {
    const value = {
      tenant_id: t.tenantId,
      name: t.name,
      status: t.status,
      created_at: t.createdAt,
    }[by];
    return [value, t.tenantId];
  };

/**
 * GET /v1/admin/tenants: by id (the directory index), filtered; sorted on another key as the
 * reference sorts (in memory, over at most MAX_SORT_CANDIDATES matches).
 */
export function listTenants(q: TenantFilters): Promise<Page<Tenant>> {
  const needle = q.search?.toLowerCase();
  const matches = (t: Tenant) =>
    (q.parentTenantId === undefined || t.parentTenantId === q.parentTenantId) &&
    (needle === undefined ||
      t.tenantId.toLowerCase().includes(needle) ||
      t.name.toLowerCase().includes(needle));
  const { cursor: _c, limit: _l, sortBy, sortDir, ...filters } = q;
  const binding = { route: 'tenants', ...filters };
  const walk = async (after: string | undefined, limit: number) => {
    const page = await queryTenants({ status: q.status, matches, after, limit });
    return { items: page.tenants, nextPosition: page.nextPosition };
  };
  if (sortBy === undefined) return paged(binding, q, (after) => walk(after, q.limit));
  return sortedPage(
    { ...binding, sortBy },
    { ...q, direction: sortDir ?? 'desc' },
    () => allOf((after) => walk(after, 1_000), 'tenants'),
    sortKeyOf(sortBy),
  );
}

/**
 * PATCH /v1/admin/tenants/{tenant_id}: name, status (ACTIVE ↔ SUSPENDED, → CLOSED), metadata and
 * settings, audited. A close is driven to completion by every close request, the first or a
 * repeat, so a crash in the middle is finished by the next try (docs/decisions.md § Closed
 * tenants).
 */
export async function changeTenant(
  tenantId: string,
  change: TenantChange,
  context: WriteContext,
): Promise<Tenant> {
  const closing = change.status === 'CLOSED';
  // Every budget closed before the record flips: from the moment the tenant reads CLOSED, no
  // write of its work can land (each hold and charge requires its budget ACTIVE), on any
  // process, whatever its cached state says (the reference's Mode B, invariant (a)).
  if (closing) {
    const cascade = { ...context, cascade: TENANT_CLOSED_CASCADE };
    await closeBudgetsOfTenant((await readTenant(tenantId)).tenantId, cascade);
  }
  const changed = await whileStale(async () => {
    const before = await readTenant(tenantId);
    const after = changedTenant(before, change, new Date(context.now).toISOString());
    if (after === before) return after;
    const audit = { ...byOperator(tenantId, context), action: 'tenant.update' as const };
    const written = await updateTenant(before, after, { ...audit, before, after });
    return written === 'stale' ? readAgain : after;
  });
  if (changed.status === 'CLOSED') await closeCascade(tenantId, context);
  return changed;
}

/**
 * What a closed tenant must not keep, once its record reads CLOSED: open reservations (released),
 * live keys (revoked), any budget created while it was being closed, live webhooks. Idempotent.
 * Each change is audited as part of the cascade (its `*_via_tenant_cascade` event).
 */
async function closeCascade(tenantId: string, context: WriteContext): Promise<void> {
  const cascade = { ...context, cascade: TENANT_CLOSED_CASCADE };
  await releaseOpenReservations(tenantId, 'tenant closed', cascade);
  await revokeKeysOfTenant(tenantId, 'tenant closed', cascade);
  await closeBudgetsOfTenant(tenantId, cascade);
  await disableSubscriptionsOfTenant(tenantId, cascade);
}
