import type { AuditEntry } from '../domain/audit.js';
import { actorName } from '../domain/audit.js';
import type { Ledger } from '../domain/ledger.js';
import { keys } from './keys.js';
import { putIfAbsent, type TransactItem } from './transact.js';

const ledgerAttributes = (l: Ledger) => ({
  allocated: l.allocated,
  spent: l.spent,
  reserved: l.reserved,
  debt: l.debt,
  overdraft_limit: l.overdraftLimit,
  remaining: l.remaining,
});

/** The audit record of one change, written in the change's own transaction. */
export function auditPut(e: AuditEntry): TransactItem {
  return putIfAbsent({
    ...keys.audit(e.tenant, e.atMs, e.requestId),
    type: 'audit',
    tenant: e.tenant,
    at_ms: e.atMs,
    actor: actorName(e.actor),
    request_id: e.requestId,
    action: e.action,
    scope: e.scope,
    unit: e.unit,
    ...(e.before && { before: ledgerAttributes(e.before) }),
    after: ledgerAttributes(e.after),
    ...(e.detail && { detail: e.detail }),
  });
}
