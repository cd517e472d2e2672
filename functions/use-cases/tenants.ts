import { DomainError } from '../domain/errors.js';
import type { Tenant } from '../domain/tenant.js';
import { insertTenant } from '../store/tenants.js';

export interface TenantRequest {
  readonly tenantId: string;
  readonly name: string;
}

/** POST /v1/admin/tenants; an existing id → 409 DUPLICATE_RESOURCE. */
export async function createTenant(request: TenantRequest, now: number): Promise<Tenant> {
  const tenant: Tenant = {
    tenantId: request.tenantId,
    name: request.name,
    status: 'ACTIVE',
    createdAt: new Date(now).toISOString(),
  };
  if ((await insertTenant(tenant)) === 'duplicate') {
    throw new DomainError('DUPLICATE_RESOURCE', `tenant ${tenant.tenantId} already exists`, {
      tenant_id: tenant.tenantId,
    });
  }
  return tenant;
}
