import {
  type Actor,
  type AuditContext,
  operatorActor,
  type TENANT_CLOSED_CASCADE,
} from '../domain/audit.js';
import type { BudgetWriter, Credential } from '../domain/caller.js';
import { requireOwnTenant } from '../domain/caller.js';
import { parseScope, segmentText, tenantOfScope } from '../domain/scopes.js';

/** Who wrote, for the audit trail and the request it came in. */
export interface WriteContext {
  readonly now: number;
  readonly requestId: string;
  /** Who the change is by; the bootstrap admin key when absent. */
  readonly actor?: Actor | undefined;
  /** Recorded in every audit record the change writes (a bulk action names itself there). */
  readonly detail?: Readonly<Record<string, unknown>> | undefined;
  /** The change is part of a tenant's close (the `*_via_tenant_cascade` events). */
  readonly cascade?: typeof TENANT_CLOSED_CASCADE | undefined;
}

/** The actor a credential writes as: its operator credential or key, or the admin key. */
export const actorOf = (credential: Credential): Actor =>
  credential.kind === 'admin'
    ? operatorActor(credential.operator)
    : { kind: 'key', keyId: credential.keyId };

/** The operator's change of one tenant's records, in this request: who it is by, for the trail. */
export const byOperator = (
  tenant: string,
  { now, requestId, actor, detail, cascade }: WriteContext,
): AuditContext => ({
  tenant,
  actor: actor ?? { kind: 'admin' },
  requestId,
  atMs: now,
  ...((detail || cascade) && { detail: { ...detail, ...(cascade && { cascade }) } }),
});

/**
 * A scope in canonical form: any tenant's for the operator, the key's own tenant's otherwise;
 * and `by`, who writes it in which request, for the audit records of its changes.
 */
export function writableScope(writer: BudgetWriter, scope: string, context?: WriteContext) {
  const segments = parseScope(scope);
  const tenant = tenantOfScope(segments);
  if (writer.kind === 'tenant') requireOwnTenant(writer, tenant, `scope ${scope}`, { scope });
  const by: AuditContext = {
    tenant,
    actor: actorOf(writer),
    requestId: context?.requestId ?? '',
    atMs: context?.now ?? 0,
    ...(context?.detail && { detail: context.detail }),
  };
  // Stored and looked up in canonical form (standard values lowercase: domain/scopes.ts).
  return { segments, tenant, by, scope: segments.map(segmentText).join('/') };
}
