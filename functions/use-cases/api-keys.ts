import {
  type ApiKey,
  type ApiKeyChange,
  generateKeyId,
  generateKeySecret,
  hashKeySecret,
  isExpired,
  type KeySortKey,
  keyPrefixOf,
  keyStatus,
  OPERATORS,
} from '../domain/api-keys.js';
import type { Caller, Credential, Operator } from '../domain/caller.js';
import {
  adminCapabilities,
  type Capabilities,
  operatorCapabilities,
  tenantCapabilities,
} from '../domain/capabilities.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import {
  DEFAULT_PERMISSIONS,
  effectivePermissions,
  grants,
  isAdminPermission,
  type Permission,
} from '../domain/permissions.js';
import type { RequestRateLimits } from '../domain/rate-limits.js';
import { tenantClosed } from '../domain/tenant.js';
import {
  getApiKeyByHash,
  getApiKeyById,
  insertApiKey,
  queryApiKeys,
  updateApiKey,
} from '../store/api-keys.js';
import { byOperator, type WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import {
  allOf,
  type Page,
  type PageRequest,
  paged,
  type SortDirection,
  type SortKey,
  sortedPage,
} from './pages.js';

export interface ApiKeyRequest {
  /** A tenant's id, or OPERATORS for a named operator credential. */
  readonly tenantId: string;
  readonly name: string;
  readonly description?: string | undefined;
  /** DEFAULT_PERMISSIONS for a tenant key when absent; an operator credential must name its own. */
  readonly permissions?: readonly Permission[] | undefined;
  readonly expiresAt?: string | undefined;
  /** Its own request-rate limits, narrowing its tenant's (docs/decisions.md § Rate limits). */
  readonly rateLimits?: RequestRateLimits | undefined;
}

/**
 * The permissions a key of `owner` may be given by `granter`: an operator credential holds only
 * `admin:*` permissions and must name them; and no credential grants an `admin:*` permission it
 * does not hold itself (the bootstrap admin key holds them all), so an operator cannot widen its
 * own reach by minting or changing a key (docs/decisions.md § Operators).
 */
function permissionsFor(
  owner: string,
  given: readonly Permission[] | undefined,
  granter: Credential,
): Permission[] {
  const operator = owner === OPERATORS;
  if (operator && (given === undefined || given.length === 0)) {
    throw invalidRequest(
      'permissions: an operator credential needs its admin permissions, e.g. ["admin:read","admin:write"]',
      { field: 'permissions' },
    );
  }
  const permissions = given ?? DEFAULT_PERMISSIONS;
  const foreign = permissions.find((p) => !isAdminPermission(p));
  if (operator && foreign !== undefined) {
    throw invalidRequest(
      `permissions: an operator credential holds admin:* permissions only, not ${foreign}`,
      {
        field: 'permissions',
      },
    );
  }
  const held = granter.kind === 'admin' ? granter.operator?.permissions : granter.permissions;
  const beyond = held && permissions.find((p) => isAdminPermission(p) && !grants(held, p));
  if (beyond) {
    throw new DomainError(
      'FORBIDDEN',
      `a credential cannot grant ${beyond}, which it does not hold`,
      {
        missing_permission: beyond,
      },
    );
  }
  return operator ? [...new Set(permissions)] : effectivePermissions(permissions);
}
export interface CreatedApiKey {
  readonly key: ApiKey;
  /** In this result and nowhere else: only its hash is stored. */
  readonly secret: string;
}

/**
 * POST /v1/admin/api-keys: a new key of an existing tenant, or a named operator credential
 * (`tenant_id: OPERATORS`); audited.
 */
export async function createApiKey(
  creator: Credential,
  request: ApiKeyRequest,
  context: WriteContext,
): Promise<CreatedApiKey> {
  if (request.expiresAt !== undefined && Date.parse(request.expiresAt) <= context.now) {
    throw invalidRequest('expires_at: must be in the future', { field: 'expires_at' });
  }
  const secret = generateKeySecret();
  const key: ApiKey = {
    keyId: generateKeyId(),
    keyPrefix: keyPrefixOf(secret),
    tenant: request.tenantId,
    name: request.name,
    description: request.description,
    permissions: permissionsFor(request.tenantId, request.permissions, creator),
    createdAt: new Date(context.now).toISOString(),
    expiresAt:
      request.expiresAt === undefined ? undefined : new Date(request.expiresAt).toISOString(),
    status: 'ACTIVE',
    rateLimits: rateLimitsFor(request.tenantId, request.rateLimits),
  };
  const inserted = await insertApiKey(hashKeySecret(secret), key, {
    ...byOperator(key.tenant, context),
    action: 'api_key.create',
    after: key,
  });
  if (inserted === 'tenantClosed') throw tenantClosed(request.tenantId);
  if (inserted === 'noTenant') {
    throw new DomainError('NOT_FOUND', `tenant ${request.tenantId} does not exist`, {
      tenant_id: request.tenantId,
    });
  }
  return { key, secret };
}

export type KeyValidation =
  | { readonly valid: false; readonly reason: 'KEY_NOT_FOUND' | 'KEY_EXPIRED' | 'KEY_REVOKED' }
  | { readonly valid: true; readonly key: ApiKey };

/** POST /v1/auth/validate: never an error; `valid: false` with a reason for unknown or expired keys. */
export async function validateKey(secret: string, now: number): Promise<KeyValidation> {
  const key = await getApiKeyByHash(hashKeySecret(secret));
  if (!key) return { valid: false, reason: 'KEY_NOT_FOUND' };
  if (key.status === 'REVOKED') return { valid: false, reason: 'KEY_REVOKED' };
  if (isExpired(key, now)) return { valid: false, reason: 'KEY_EXPIRED' };
  return { valid: true, key };
}

const keyNotFound = (keyId: string) =>
  new DomainError('NOT_FOUND', `API key ${keyId} does not exist`, { key_id: keyId });

/** GET /v1/admin/api-keys/{key_id}: never the secret, only its prefix. */
export async function readApiKey(keyId: string): Promise<ApiKey> {
  const found = await getApiKeyById(keyId);
  if (!found) throw keyNotFound(keyId);
  return found.key;
}

export type KeyStatus = 'ACTIVE' | 'REVOKED' | 'EXPIRED';

export interface KeyFilters extends PageRequest {
  readonly tenantId?: string | undefined;
  readonly status?: KeyStatus | undefined;
  /** Case-insensitive substring of the key id or the name. */
  readonly search?: string | undefined;
  readonly sortBy?: KeySortKey | undefined;
  readonly sortDir?: SortDirection | undefined;
}

/**
 * GET /v1/admin/api-keys: one tenant's keys or every tenant's, by tenant then id; sorted on
 * another key in memory (at most MAX_SORT_CANDIDATES matches), as the reference sorts.
 */
export function listApiKeys(q: KeyFilters, now: number): Promise<Page<ApiKey>> {
  const needle = q.search?.toLowerCase();
  const matches = (key: ApiKey) =>
    (q.status === undefined || keyStatus(key, now) === q.status) &&
    (needle === undefined ||
      key.keyId.toLowerCase().includes(needle) ||
      key.name.toLowerCase().includes(needle));
  const binding = { route: 'api-keys', tenant: q.tenantId, status: q.status, search: q.search };
  const walk = async (after: string | undefined, limit: number) => {
    const page = await queryApiKeys({ tenant: q.tenantId, after, limit, matches });
    return { items: page.keys, nextPosition: page.nextPosition };
  };
  const { sortBy } = q;
  if (sortBy === undefined) return paged(binding, q, (after) => walk(after, q.limit));
  const keyOf = (k: ApiKey): SortKey => [
    {
      key_id: k.keyId,
      name: k.name,
      tenant_id: k.tenant,
      status: keyStatus(k, now),
      created_at: k.createdAt,
      expires_at: k.expiresAt ?? '',
    }[sortBy],
    k.keyId,
  ];
  return sortedPage(
    { ...binding, sortBy },
    { ...q, direction: q.sortDir ?? 'desc' },
    () => allOf((after) => walk(after, 1_000), 'keys'),
    keyOf,
  );
}

/**
 * One audited change to a live key, retried when another change came between read and write.
 * `change` returns the key after, or the key itself when there is nothing to do.
 */
async function changeKey(
  keyId: string,
  action: 'api_key.update' | 'api_key.revoke',
  change: (key: ApiKey) => ApiKey,
  context: WriteContext,
): Promise<ApiKey> {
  return whileStale(async () => {
    const found = await getApiKeyById(keyId);
    if (!found) throw keyNotFound(keyId);
    const before = found.key;
    const after = change(before);
    if (after === before) return before;
    const audit = { ...byOperator(before.tenant, context), action, before, after };
    const written = await updateApiKey(found.secretHash, before, after, audit);
    return written === 'updated' ? after : readAgain;
  });
}

/** PATCH /v1/admin/api-keys/{key_id}: name, description, permissions, rate limits of a live key. */
export function updateApiKeyDetails(
  changer: Credential,
  keyId: string,
  request: ApiKeyChange,
  context: WriteContext,
): Promise<ApiKey> {
  return changeKey(
    keyId,
    'api_key.update',
    (key) => {
      if (key.status === 'REVOKED') {
        throw new DomainError('KEY_REVOKED', `API key ${keyId} is revoked`, { key_id: keyId });
      }
      return {
        ...key,
        ...(request.name !== undefined && { name: request.name }),
        ...(request.description !== undefined && { description: request.description }),
        ...(request.permissions !== undefined && {
          permissions: permissionsFor(key.tenant, request.permissions, changer),
        }),
        ...(request.rateLimits !== undefined && {
          rateLimits: rateLimitsFor(key.tenant, request.rateLimits ?? undefined),
        }),
        updatedAt: new Date(context.now).toISOString(),
      };
    },
    context,
  );
}

/**
 * A key's limits as stored: none when none is set. An operator credential has none: it calls
 * the admin plane, which the limits do not cover.
 */
function rateLimitsFor(owner: string, limits: RequestRateLimits | undefined) {
  if (!limits || Object.keys(limits).length === 0) return undefined;
  if (owner === OPERATORS) {
    throw invalidRequest('rate_limits: an operator credential has no rate limits', {
      field: 'rate_limits',
    });
  }
  return limits;
}

/**
 * DELETE /v1/admin/api-keys/{key_id}: permanent. Revoking a revoked key answers it as it is, so
 * a retry is safe. Every process refuses the key within API_KEY_CACHE_TTL_MS (http/auth.ts).
 */
export function revokeApiKey(
  keyId: string,
  reason: string | undefined,
  context: WriteContext,
): Promise<ApiKey> {
  return changeKey(
    keyId,
    'api_key.revoke',
    (key) => {
      if (key.status === 'REVOKED') return key;
      const at = new Date(context.now).toISOString();
      return {
        ...key,
        status: 'REVOKED',
        revokedAt: at,
        updatedAt: at,
        ...(reason !== undefined && { revokedReason: reason }),
      };
    },
    context,
  );
}

/** Part of a tenant's close: every key of the tenant revoked (those already revoked stay so). */
export async function revokeKeysOfTenant(
  tenantId: string,
  reason: string,
  context: WriteContext,
): Promise<void> {
  for (let after: string | undefined; ; ) {
    const page = await queryApiKeys({
      tenant: tenantId,
      after,
      limit: 100,
      matches: (key) => key.status !== 'REVOKED',
    });
    for (const key of page.keys) await revokeApiKey(key.keyId, reason, context);
    if (page.nextPosition === undefined) return;
    after = page.nextPosition;
  }
}

export type TenantIntrospection = {
  readonly authType: 'tenant';
  readonly key: Caller;
  readonly capabilities: Capabilities;
};
export type Introspection =
  | {
      readonly authType: 'admin';
      /** A named operator credential; absent for the bootstrap admin key. */
      readonly operator?: Operator | undefined;
      readonly capabilities: Capabilities;
    }
  | TenantIntrospection;

/**
 * GET /v1/auth/introspect: who the credential is and what it may do. Authentication has already
 * read the key, so this reads nothing.
 */
export function introspectAuth(credential: Credential & { kind: 'tenant' }): TenantIntrospection;
export function introspectAuth(credential: Credential): Introspection;
export function introspectAuth(credential: Credential): Introspection {
  if (credential.kind === 'admin') {
    const { operator } = credential;
    return operator
      ? { authType: 'admin', operator, capabilities: operatorCapabilities(operator.permissions) }
      : { authType: 'admin', capabilities: adminCapabilities() };
  }
  const { kind: _, ...key } = credential;
  return { authType: 'tenant', key, capabilities: tenantCapabilities(key.permissions) };
}
