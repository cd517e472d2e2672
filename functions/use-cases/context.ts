import type { Actor, AuditContext, TENANT_CLOSED_CASCADE } from '../domain/audit.js';
import type { BudgetWriter } from '../domain/caller.js';
import { requireOwnTenant } from '../domain/caller.js';
import { parseScope, segmentText, tenantOfScope } from '../domain/scopes.js';

/** Who wrote, for the audit trail and the request it came in. */
export interface WriteContext {
  readonly now: number;
  readonly requestId: string;
  /** The change is part of a tenant's close (the `*_via_tenant_cascade` events). */
  readonly cascade?: typeof TENANT_CLOSED_CASCADE | undefined;
}

/** The operator's change of one tenant's records, in this request: who it is by, for the trail. */
export const byOperator = (
  tenant: string,
  { now, requestId, cascade }: WriteContext,
): AuditContext & { readonly detail?: Readonly<Record<string, unknown>> } => ({
  tenant,
  actor: { kind: 'admin' },
  requestId,
  atMs: now,
  ...(cascade && { detail: { cascade } }),
});

/**
 * A scope in canonical form: any tenant's for the operator, the key's own tenant's otherwise;
 * and `by`, who writes it in which request, for the audit records of its changes.
 */
export function writableScope(writer: BudgetWriter, scope: string, context?: WriteContext) {
  const segments = parseScope(scope);
  const tenant = tenantOfScope(segments);
  if (writer.kind === 'tenant') requireOwnTenant(writer, tenant, `scope ${scope}`, { scope });
  const actor: Actor =
    writer.kind === 'admin' ? { kind: 'admin' } : { kind: 'key', keyId: writer.keyId };
  const by: AuditContext = {
    tenant,
    actor,
    requestId: context?.requestId ?? '',
    atMs: context?.now ?? 0,
  };
  // Stored and looked up in canonical form (standard values lowercase: domain/scopes.ts).
  return { segments, tenant, by, scope: segments.map(segmentText).join('/') };
}
