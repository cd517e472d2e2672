import {
  type ApiKey,
  generateKeyId,
  generateKeySecret,
  hashKeySecret,
  isExpired,
  keyPrefixOf,
} from '../domain/api-keys.js';
import type { Caller, Credential } from '../domain/caller.js';
import {
  adminCapabilities,
  type Capabilities,
  tenantCapabilities,
} from '../domain/capabilities.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { effectivePermissions, type Permission } from '../domain/permissions.js';
import { getApiKeyByHash, insertApiKey } from '../store/api-keys.js';

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

/** POST /v1/admin/api-keys: a new key of an existing tenant. */
export async function createApiKey(request: ApiKeyRequest, now: number): Promise<CreatedApiKey> {
  if (request.expiresAt !== undefined && Date.parse(request.expiresAt) <= now) {
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
    createdAt: new Date(now).toISOString(),
    expiresAt:
      request.expiresAt === undefined ? undefined : new Date(request.expiresAt).toISOString(),
  };
  if ((await insertApiKey(hashKeySecret(secret), key)) === 'noTenant') {
    throw new DomainError('NOT_FOUND', `tenant ${request.tenantId} does not exist`, {
      tenant_id: request.tenantId,
    });
  }
  return { key, secret };
}

export type KeyValidation =
  | { readonly valid: false; readonly reason: 'KEY_NOT_FOUND' | 'KEY_EXPIRED' }
  | { readonly valid: true; readonly key: ApiKey };

/** POST /v1/auth/validate: never an error; `valid: false` with a reason for unknown or expired keys. */
export async function validateKey(secret: string, now: number): Promise<KeyValidation> {
  const key = await getApiKeyByHash(hashKeySecret(secret));
  if (!key) return { valid: false, reason: 'KEY_NOT_FOUND' };
  if (isExpired(key, now)) return { valid: false, reason: 'KEY_EXPIRED' };
  return { valid: true, key };
}

export type Introspection =
  | { readonly authType: 'admin'; readonly capabilities: Capabilities }
  | { readonly authType: 'tenant'; readonly key: Caller; readonly capabilities: Capabilities };

/**
 * GET /v1/auth/introspect: who the credential is and what it may do. Authentication has already
 * read the key, so this reads nothing.
 */
export function introspectAuth(credential: Credential): Introspection {
  if (credential.kind === 'admin') return { authType: 'admin', capabilities: adminCapabilities() };
  const { kind: _, ...key } = credential;
  return { authType: 'tenant', key, capabilities: tenantCapabilities(key.permissions) };
}
