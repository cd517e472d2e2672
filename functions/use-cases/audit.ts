import type { AuditRecord, AuditSortKey } from '../domain/audit.js';
import { type BudgetWriter, requireOwnTenant } from '../domain/caller.js';
import { type AuditQuery, queryAudit } from '../store/audit.js';
import {
  allOf,
  type Page,
  type PageRequest,
  paged,
  type SortDirection,
  type SortKey,
  sortedPage,
} from './pages.js';

/** The listing's filters: the trail's own (store/audit.ts), named as the wire names them. */
export interface AuditFilters
  extends PageRequest,
    Pick<AuditQuery, 'operation' | 'resourceType' | 'resourceId'> {
  readonly tenantId?: string | undefined;
  readonly keyId?: string | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly sortBy?: AuditSortKey | undefined;
  readonly sortDir?: SortDirection | undefined;
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
  const { cursor: _cursor, limit: _limit, sortBy, sortDir, ...filters } = q;
  const binding = { route: 'audit', ...filters, tenantId: tenant };
  const walk = async (after: string | undefined, limit: number, oldestFirst = false) => {
    const page = await queryAudit({
      tenant,
      actor: q.keyId,
      operation: q.operation,
      resourceType: q.resourceType,
      resourceId: q.resourceId,
      fromMs: q.from,
      toMs: q.to,
      oldestFirst,
      after,
      limit,
    });
    return { items: page.records, nextPosition: page.nextPosition };
  };
  // Newest first is the index's order, oldest first its reverse: no sort in memory for either.
  if (sortBy === undefined || sortBy === 'timestamp') {
    const oldestFirst = sortBy === 'timestamp' && sortDir === 'asc';
    return paged({ ...binding, oldestFirst }, q, (after) => walk(after, q.limit, oldestFirst));
  }
  const keyOf = (r: AuditRecord): SortKey => [
    {
      operation: r.operation,
      resource_type: r.resourceType,
      tenant_id: r.tenant,
      key_id: r.actor,
      status: r.operation.startsWith('create') ? 201 : 200,
    }[sortBy],
    r.logId,
  ];
  return sortedPage(
    { ...binding, sortBy },
    { ...q, direction: sortDir ?? 'desc' },
    () => allOf((after) => walk(after, 1_000), 'audit entries'),
    keyOf,
  );
}
