import {
  type ApiKey,
  type ApiKeyChange,
  generateKeyId,
  generateKeySecret,
  hashKeySecret,
  isExpired,
  keyPrefixOf,
  keyStatus,
} from '../domain/api-keys.js';
import type { Caller, Credential } from '../domain/caller.js';
import {
  adminCapabilities,
  type Capabilities,
  tenantCapabilities,
} from '../domain/capabilities.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { effectivePermissions, type Permission } from '../domain/permissions.js';
import {
  getApiKeyByHash,
  getApiKeyById,
  insertApiKey,
  queryApiKeys,
  updateApiKey,
} from '../store/api-keys.js';
import { byOperator, type WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import { type Page, type PageRequest, paged } from './pages.js';

export interface ApiKeyRequest {
  readonly tenantId: string;
  readonly name: string;
  readonly description?: string | undefined;
  readonly permissions: readonly Permission[];
  readonly expiresAt?: string | undefined;
}
export interface CreatedApiKey {
  readonly key: ApiKey;
  /** In this result and nowhere else: only its hash is stored. */
  readonly secret: string;
}

/** POST /v1/admin/api-keys: a new key of an existing tenant; audited. */
export async function createApiKey(
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
    permissions: effectivePermissions(request.permissions),
    createdAt: new Date(context.now).toISOString(),
    expiresAt:
      request.expiresAt === undefined ? undefined : new Date(request.expiresAt).toISOString(),
    status: 'ACTIVE',
  };
  const inserted = await insertApiKey(hashKeySecret(secret), key, {
    ...byOperator(key.tenant, context),
    action: 'api_key.create',
    after: key,
  });
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

/** GET /v1/admin/api-keys: one tenant's keys or every tenant's, by tenant then id. */
export function listApiKeys(
  q: PageRequest & {
    readonly tenantId?: string | undefined;
    readonly status?: KeyStatus | undefined;
  },
  now: number,
): Promise<Page<ApiKey>> {
  const binding = { route: 'api-keys', tenant: q.tenantId, status: q.status };
  return paged(binding, q, async (after) => {
    const page = await queryApiKeys({
      tenant: q.tenantId,
      after,
      limit: q.limit,
      matches: (key) => q.status === undefined || keyStatus(key, now) === q.status,
    });
    return { items: page.keys, nextPosition: page.nextPosition };
  });
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

/** PATCH /v1/admin/api-keys/{key_id}: name, description, permissions of a live key. */
export function updateApiKeyDetails(
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
          permissions: effectivePermissions(request.permissions),
        }),
        updatedAt: new Date(context.now).toISOString(),
      };
    },
    context,
  );
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
  | { readonly authType: 'admin'; readonly capabilities: Capabilities }
  | TenantIntrospection;

/**
 * GET /v1/auth/introspect: who the credential is and what it may do. Authentication has already
 * read the key, so this reads nothing.
 */
export function introspectAuth(credential: Credential & { kind: 'tenant' }): TenantIntrospection;
export function introspectAuth(credential: Credential): Introspection;
export function introspectAuth(credential: Credential): Introspection {
  if (credential.kind === 'admin') return { authType: 'admin', capabilities: adminCapabilities() };
  const { kind: _, ...key } = credential;
  return { authType: 'tenant', key, capabilities: tenantCapabilities(key.permissions) };
}
