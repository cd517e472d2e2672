import type { Caller } from '../domain/caller.js';
import { callerScopes, type DerivedScopes, NO_DIMENSIONS, type Subject } from '../domain/scopes.js';
import { budgetedDimensionKeys } from '../store/tenants.js';

/**
 * The scopes a caller's subject affects. Dimension keys are budget levels only where a budget of
 * the tenant names them; the tenant's keys are read only when the subject has dimensions.
 */
export async function affectedScopes(
  caller: Caller,
  subject: Subject,
  now: number,
): Promise<DerivedScopes> {
  const named = Object.keys(subject.dimensions ?? {}).length > 0;
  const budgeted = named ? await budgetedDimensionKeys(caller.tenant, now) : NO_DIMENSIONS;
  return callerScopes(caller, subject, budgeted);
}
