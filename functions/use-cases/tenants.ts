import { TENANT_CLOSED_CASCADE } from '../domain/audit.js';
import { DomainError } from '../domain/errors.js';
import {
  changedTenant,
  type Tenant,
  type TenantChange,
  type TenantStatus,
} from '../domain/tenant.js';
import { getTenant, insertTenant, queryTenants, updateTenant } from '../store/tenants.js';
import { revokeKeysOfTenant } from './api-keys.js';
import { closeBudgetsOfTenant } from './budget-settings.js';
import { byOperator, type WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import { type Page, type PageRequest, paged } from './pages.js';
import { releaseOpenReservations } from './settlements.js';
import { disableSubscriptionsOfTenant } from './webhooks.js';

export interface TenantRequest {
  readonly tenantId: string;
  readonly name: string;
}

/** POST /v1/admin/tenants; an existing id → 409 DUPLICATE_RESOURCE. Audited. */
export async function createTenant(request: TenantRequest, context: WriteContext): Promise<Tenant> {
  const tenant: Tenant = {
    tenantId: request.tenantId,
    name: request.name,
    status: 'ACTIVE',
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

/** GET /v1/admin/tenants: by id, optionally of one status. */
export function listTenants(
  q: PageRequest & { readonly status?: TenantStatus | undefined },
): Promise<Page<Tenant>> {
  return paged({ route: 'tenants', status: q.status }, q, async (after) => {
    const page = await queryTenants({ status: q.status, after, limit: q.limit });
    return { items: page.tenants, nextPosition: page.nextPosition };
  });
}

/**
 * PATCH /v1/admin/tenants/{tenant_id}: name and status (ACTIVE ↔ SUSPENDED, → CLOSED), audited.
 * Closing flips the status first, then drives the cascade (keys revoked, open reservations
 * released); every close request, the first or a repeat, drives it to completion, so a crash
 * in the middle is finished by the next try (docs/decisions.md § Control plane).
 */
export async function changeTenant(
  tenantId: string,
  change: TenantChange,
  context: WriteContext,
): Promise<Tenant> {
  return whileStale(async () => {
    const before = await readTenant(tenantId);
    const after = changedTenant(before, change, new Date(context.now).toISOString());
    if (after !== before) {
      const audit = { ...byOperator(tenantId, context), action: 'tenant.update' as const };
      if ((await updateTenant(before, after, { ...audit, before, after })) === 'stale')
        return readAgain;
    }
    if (after.status === 'CLOSED') await closeCascade(tenantId, context);
    return after;
  });
}

/**
 * What a closed tenant must not keep: live keys, held budget, open budgets, live webhooks.
 * Idempotent. Each change is audited as part of the cascade (its `*_via_tenant_cascade` event).
 */
async function closeCascade(tenantId: string, context: WriteContext): Promise<void> {
  const cascade = { ...context, cascade: TENANT_CLOSED_CASCADE };
  await revokeKeysOfTenant(tenantId, 'tenant closed', cascade);
  await releaseOpenReservations(tenantId, 'tenant closed', cascade);
  await closeBudgetsOfTenant(tenantId, cascade);
  await disableSubscriptionsOfTenant(tenantId, cascade);
}
