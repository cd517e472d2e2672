import type { Actor } from '../domain/audit.js';
import type { BudgetWriter } from '../domain/caller.js';
import { requireOwnTenant } from '../domain/caller.js';
import { parseScope, segmentText, tenantOfScope } from '../domain/scopes.js';

/** Who wrote, for the audit trail and the request it came in. */
export interface WriteContext {
  readonly now: number;
  readonly requestId: string;
}

/** A scope in canonical form: any tenant's for the operator, the key's own tenant's otherwise. */
export function writableScope(writer: BudgetWriter, scope: string) {
  const segments = parseScope(scope);
  const tenant = tenantOfScope(segments);
  if (writer.kind === 'tenant') requireOwnTenant(writer, tenant, `scope ${scope}`, { scope });
  const actor: Actor =
    writer.kind === 'admin' ? { kind: 'admin' } : { kind: 'key', keyId: writer.keyId };
  // Stored and looked up in canonical form (standard values lowercase: domain/scopes.ts).
  return { segments, tenant, actor, scope: segments.map(segmentText).join('/') };
}
