import type { AuditRecord } from '../domain/audit.js';
import { type BudgetWriter, requireOwnTenant } from '../domain/caller.js';
import { type AuditQuery, queryAudit } from '../store/audit.js';
import { type Page, type PageRequest, paged } from './pages.js';

/** The listing's filters: the trail's own (store/audit.ts), named as the wire names them. */
export interface AuditFilters
  extends PageRequest,
    Pick<AuditQuery, 'operation' | 'resourceType' | 'resourceId'> {
  readonly tenantId?: string | undefined;
  readonly keyId?: string | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
}

/**
 * GET /v1/admin/audit/logs, newest first: the operator reads any tenant's trail or all of them;
 * a tenant key (with budgets:write) only its own tenant's.
 */
export function listAuditLogs(reader: BudgetWriter, q: AuditFilters): Promise<Page<AuditRecord>> {
  if (reader.kind === 'tenant' && q.tenantId !== undefined) {
    requireOwnTenant(reader, q.tenantId, `tenant '${q.tenantId}'`, { tenant_id: q.tenantId });
  }
  const tenant = reader.kind === 'tenant' ? reader.tenant : q.tenantId;
  const { cursor: _cursor, limit, ...filters } = q;
  return paged({ route: 'audit', ...filters, tenantId: tenant }, q, async (after) => {
    const page = await queryAudit({
      tenant,
      actor: q.keyId,
      operation: q.operation,
      resourceType: q.resourceType,
      resourceId: q.resourceId,
      fromMs: q.from,
      toMs: q.to,
      after,
      limit,
    });
    return { items: page.records, nextPosition: page.nextPosition };
  });
}
