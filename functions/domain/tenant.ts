import { DomainError } from './errors.js';

/** ACTIVE ↔ SUSPENDED, either → CLOSED (terminal); docs/decisions.md § Control plane. */
export const TENANT_STATUSES = ['ACTIVE', 'SUSPENDED', 'CLOSED'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export interface Tenant {
  readonly tenantId: string;
  readonly name: string;
  readonly status: TenantStatus;
  readonly createdAt: string;
  /** Absent until the first change. */
  readonly updatedAt?: string | undefined;
}

export interface TenantChange {
  readonly name?: string | undefined;
  readonly status?: TenantStatus | undefined;
}

/**
 * The tenant after a change, or the reason it may not change: a CLOSED tenant stays CLOSED
 * (closing again is allowed: it resumes the close cascade), nothing else about it changes.
 */
export function changedTenant(t: Tenant, change: TenantChange, at: string): Tenant {
  if (t.status === 'CLOSED' && (change.status ?? 'CLOSED') !== 'CLOSED') {
    throw tenantClosed(t.tenantId);
  }
  if (t.status === 'CLOSED' && change.name !== undefined && change.name !== t.name) {
    throw tenantClosed(t.tenantId);
  }
  const next = { ...t, ...defined(change) };
  return next.name === t.name && next.status === t.status ? t : { ...next, updatedAt: at };
}

const defined = (c: TenantChange) => ({
  ...(c.name !== undefined && { name: c.name }),
  ...(c.status !== undefined && { status: c.status }),
});

export const tenantClosed = (tenantId: string) =>
  new DomainError('TENANT_CLOSED', `tenant ${tenantId} is closed`, { tenant_id: tenantId });

/**
 * New work (a reservation, a decide, an event) is refused for a tenant that is not ACTIVE:
 * SUSPENDED answers 403 with the reason; CLOSED answers 409 TENANT_CLOSED (the reference's
 * code). Settling what is already held is never refused here.
 */
export function requireOpenForNewWork(tenantId: string, status: TenantStatus | undefined): void {
  if (status === 'SUSPENDED') {
    throw new DomainError('FORBIDDEN', `tenant ${tenantId} is suspended`, {
      reason: 'TENANT_SUSPENDED',
      tenant_id: tenantId,
    });
  }
  if (status === 'CLOSED') throw tenantClosed(tenantId);
}
