import type { Caller } from '../domain/caller.js';
import { callerScopes, type DerivedScopes, NO_DIMENSIONS, type Subject } from '../domain/scopes.js';
import { requireOpenForNewWork } from '../domain/tenant.js';
import { tenantState } from '../store/tenants.js';

export interface NewWorkScopes extends DerivedScopes {
  /**
   * Throws unless the tenant takes new work (SUSPENDED: 403, CLOSED: 409 TENANT_CLOSED). Called
   * once the operation is known not to be a replay: a replay answers what was done before.
   */
  readonly requireTenantOpen: () => void;
}

/**
 * The scopes new work (a reservation, a decide, an event) of a caller affects. Dimension keys are
 * budget levels only where a budget of the tenant names them. The tenant's record is read at most
 * once per TENANT_STATE_TTL_MS per process (store/tenants.ts).
 */
export async function affectedScopes(
  caller: Caller,
  subject: Subject,
  now: number,
): Promise<NewWorkScopes> {
  const state = await tenantState(caller.tenant, now);
  const named = Object.keys(subject.dimensions ?? {}).length > 0;
  return {
    ...callerScopes(caller, subject, named ? state.dimensionKeys : NO_DIMENSIONS),
    requireTenantOpen: () => requireOpenForNewWork(caller.tenant, state.status),
  };
}
