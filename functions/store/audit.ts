import { auditRecordOf } from './entities/audit.js';
import type { Item } from './expressions.js';
import { auditPartition, auditRange, directory } from './keys.js';
import { queryPage } from './pages.js';

export interface AuditQuery {
  /** One tenant's trail (strongly consistent), or every tenant's (the directory index). */
  readonly tenant?: string | undefined;
  readonly actor?: string | undefined;
  readonly operation?: string | undefined;
  readonly resourceType?: string | undefined;
  readonly resourceId?: string | undefined;
  readonly fromMs?: number | undefined;
  readonly toMs?: number | undefined;
  /** Oldest first; newest first by default. */
  readonly oldestFirst?: boolean | undefined;
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
    newestFirst: q.oldestFirst !== true,
    after: q.after,
    limit: q.limit,
    matches,
  });
  return { records: page.items.map(auditRecordOf), nextPosition: page.nextPosition };
}
