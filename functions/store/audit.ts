import type { Unit } from '../domain/amounts.js';
import type { ApiKey } from '../domain/api-keys.js';
import {
  AUDIT_OPERATIONS,
  type AuditEntry,
  type AuditRecord,
  actorName,
  resourceIdOf,
} from '../domain/audit.js';
import { type Budget, budgetKey } from '../domain/budget.js';
import type { Tenant } from '../domain/tenant.js';
import { auditPartition, auditRange, directory, keys } from './keys.js';
import { queryPage } from './pages.js';
import { type Item, putIfAbsent, type TransactItem } from './transact.js';

/** A budget's counters and limit, and its status when not ACTIVE. */
const budgetAttributes = (b: Budget) => ({
  allocated: b.counters.allocated,
  spent: b.counters.spent,
  reserved: b.counters.reserved,
  debt: b.counters.debt,
  overdraft_limit: b.overdraftLimit,
  remaining: b.counters.remaining,
  ...(b.status !== 'ACTIVE' && { status: b.status }),
});

const tenantAttributes = (t: Tenant) => ({ name: t.name, status: t.status });

/** Never the secret or its hash: what an operator may see of a key. */
const keyAttributes = (k: ApiKey) => ({
  name: k.name,
  ...(k.description !== undefined && { description: k.description }),
  permissions: [...k.permissions],
  status: k.status,
  ...(k.revokedReason !== undefined && { revoked_reason: k.revokedReason }),
});

function recordedStates(e: AuditEntry): { before?: Item; after?: Item } {
  switch (e.action) {
    case 'budget.create':
    case 'budget.fund':
    case 'budget.update':
    case 'budget.freeze':
    case 'budget.unfreeze':
    case 'budget.close':
      return {
        ...(e.before && { before: budgetAttributes(e.before) }),
        after: budgetAttributes(e.after),
      };
    case 'tenant.create':
    case 'tenant.update':
      return {
        ...(e.before && { before: tenantAttributes(e.before) }),
        after: tenantAttributes(e.after),
      };
    case 'api_key.create':
    case 'api_key.update':
    case 'api_key.revoke':
      return {
        ...(e.before && { before: keyAttributes(e.before) }),
        after: keyAttributes(e.after),
      };
    case 'reservation.release':
      return {};
  }
}

/** The audit record of one change, written in the change's own transaction. */
export function auditPut(e: AuditEntry): TransactItem {
  const resourceId = resourceIdOf(e);
  const key = keys.audit(e.tenant, e.atMs, e.requestId, `${e.action}#${resourceId}`);
  const { operation, resourceType } = AUDIT_OPERATIONS[e.action];
  return putIfAbsent({
    ...key,
    type: 'audit',
    tenant: e.tenant,
    at_ms: e.atMs,
    actor: actorName(e.actor),
    request_id: e.requestId,
    action: e.action,
    operation,
    resource_type: resourceType,
    resource_id: resourceId,
    ...recordedStates(e),
    ...(e.detail && { detail: e.detail }),
    dir_pk: directory.audit.pk,
    dir_sk: directory.audit.sk(e.tenant, key.sk),
  });
}

export interface AuditQuery {
  /** One tenant's trail (strongly consistent), or every tenant's (the directory index). */
  readonly tenant?: string | undefined;
  readonly actor?: string | undefined;
  readonly operation?: string | undefined;
  readonly resourceType?: string | undefined;
  readonly resourceId?: string | undefined;
  readonly fromMs?: number | undefined;
  readonly toMs?: number | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
}

/** A page of the trail, newest first, filtered. */
export async function queryAudit(q: AuditQuery) {
  const range = auditRange(q.fromMs, q.toMs);
  const matches = (item: Item) => {
    const r = auditRecordOf(item);
    return (
      (q.actor === undefined || r.actor === q.actor) &&
      (q.operation === undefined || r.operation === q.operation) &&
      (q.resourceType === undefined || r.resourceType === q.resourceType) &&
      (q.resourceId === undefined || r.resourceId === q.resourceId)
    );
  };
  const where =
    q.tenant === undefined
      ? { index: 'directory' as const, partitionKey: 'dir_pk', partition: directory.audit.pk }
      : { partitionKey: 'pk', partition: auditPartition(q.tenant) };
  const page = await queryPage({
    ...where,
    sortKey: where.partitionKey === 'pk' ? 'sk' : 'dir_sk',
    lowest: range.from,
    highest: range.to,
    newestFirst: true,
    after: q.after,
    limit: q.limit,
    matches,
  });
  return { records: page.items.map(auditRecordOf), nextPosition: page.nextPosition };
}

/** Records written before the trail covered more than budgets carry scope and unit instead. */
export function auditRecordOf(item: Item): AuditRecord {
  const action = String(item.action) as keyof typeof AUDIT_OPERATIONS;
  const known = AUDIT_OPERATIONS[action];
  return {
    logId: `${String(item.pk).slice('AUDIT#'.length)}:${String(item.sk)}`,
    tenant: String(item.tenant),
    atMs: Number(item.at_ms),
    actor: String(item.actor),
    requestId: String(item.request_id),
    operation: String(item.operation ?? known?.operation ?? action),
    resourceType: String(item.resource_type ?? known?.resourceType ?? 'budget'),
    resourceId: String(
      item.resource_id ?? budgetKey({ scope: String(item.scope), unit: item.unit as Unit }),
    ),
    before: item.before as AuditRecord['before'],
    after: item.after as AuditRecord['after'],
    detail: item.detail as AuditRecord['detail'],
  };
}
