import { DomainError } from './errors.js';
import type { Permission } from './permissions.js';

/** Who is asking: the tenant an API key belongs to, the key, and what it may do. */
export interface Caller {
  readonly tenant: string;
  readonly keyId: string;
  readonly permissions: readonly Permission[];
  /** When the key stops authenticating (ISO 8601); absent for a key that never expires. */
  readonly keyExpiresAt?: string | undefined;
}

/**
 * A named operator credential (docs/decisions.md § Operators): an admin-plane key of the
 * reserved owner OPERATORS, holding `admin:*` permissions, sent as `X-Admin-API-Key`.
 */
export interface Operator {
  readonly keyId: string;
  readonly name: string;
  readonly permissions: readonly Permission[];
  readonly keyExpiresAt?: string | undefined;
}

/**
 * Whoever authenticated a request: the operator (the bootstrap admin key, or a named operator
 * credential), or a tenant's API key.
 */
export type Credential =
  | { readonly kind: 'admin'; readonly operator?: Operator | undefined }
  | (Caller & { readonly kind: 'tenant' });

/** Who may write budgets: the operator (any tenant's) or a tenant key (its own only). */
export type BudgetWriter = Credential;

/**
 * The one ownership rule: a key reads and changes only its own tenant's data. `what` names the
 * thing in the 403 message ("reservation rsv_…", "scope tenant:…").
 */
export function requireOwnTenant(
  caller: Caller,
  tenant: string,
  what: string,
  details?: Record<string, unknown>,
): void {
  if (tenant !== caller.tenant) {
    throw new DomainError('FORBIDDEN', `${what} belongs to another tenant`, details);
  }
}
