import { DomainError } from '../domain/errors.js';
import { type DerivedScopes, deriveScopes, type Subject } from '../domain/scopes.js';
import type { TenantCaller } from '../http/auth.js';

/** SPEC § Subject: subject.tenant, when given, must be the key's tenant (403 otherwise). */
export function scopesFor(caller: TenantCaller, subject: Subject): DerivedScopes {
  if (subject.tenant !== undefined && subject.tenant !== caller.tenant) {
    throw new DomainError(
      'FORBIDDEN',
      `subject.tenant '${subject.tenant}' is not the API key's tenant`,
      {
        tenant: subject.tenant,
      },
    );
  }
  return deriveScopes(caller.tenant, subject);
}
