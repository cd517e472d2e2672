import type { ApiKey } from '../../domain/api-keys.js';
import { effectivePermissions, type Permission } from '../../domain/permissions.js';
import { rateLimitsFrom } from '../../domain/rate-limits.js';
import type { Item } from '../expressions.js';
import { directory, keys } from '../keys.js';

// The API key family: a key stored under the SHA-256 of its secret (looked up by it: one
// GetItem), and a pointer from its id to that hash (the operator's get, change and revoke).

/** Written on every API key item from this version on (absent: written before). */
export const API_KEY_VERSION = 1;

export const isApiKeyItem = (item: Item | undefined): item is Item => item?.type === 'api-key';

/** What a change may set: everything but the keys, the hash and the version. */
export const keyAttributes = (key: ApiKey): Item => ({
  type: 'api-key',
  key_id: key.keyId,
  key_prefix: key.keyPrefix,
  tenant: key.tenant,
  name: key.name,
  description: key.description,
  permissions: key.permissions,
  created_at: key.createdAt,
  expires_at: key.expiresAt,
  status: key.status,
  updated_at: key.updatedAt,
  revoked_at: key.revokedAt,
  revoked_reason: key.revokedReason,
  rate_limits: key.rateLimits && { ...key.rateLimits },
  dir_pk: directory.apiKeys.pk,
  dir_sk: directory.apiKeys.sk(key.tenant, key.keyId),
});

export const apiKeyItem = (secretHash: string, key: ApiKey): Item => ({
  ...keys.apiKey(secretHash),
  ...keyAttributes(key),
  v: API_KEY_VERSION,
  secret_hash: secretHash,
});

export const apiKeyPointerItem = (secretHash: string, keyId: string): Item => ({
  ...keys.apiKeyId(keyId),
  type: 'api-key-id',
  v: API_KEY_VERSION,
  secret_hash: secretHash,
});

export function apiKeyOf(stored: Item): ApiKey {
  const item = stored.v === undefined ? apiKeyOfUnversioned(stored) : stored;
  return {
    keyId: String(item.key_id),
    keyPrefix: String(item.key_prefix),
    tenant: String(item.tenant),
    name: String(item.name),
    description: item.description as string | undefined,
    permissions: item.permissions as Permission[],
    createdAt: String(item.created_at),
    expiresAt: item.expires_at as string | undefined,
    status: item.status === 'REVOKED' ? 'REVOKED' : 'ACTIVE',
    updatedAt: item.updated_at as string | undefined,
    revokedAt: item.revoked_at as string | undefined,
    revokedReason: item.revoked_reason as string | undefined,
    rateLimits: rateLimitsFrom(item.rate_limits),
  };
}

/**
 * Keys written before items carried `v`: those stored before revocation existed carry no status
 * (they are live), and those stored before `budgets:write` existed keep the rights they were
 * made with (a key with all of SPEC's permissions holds it too: domain/permissions.ts). Keys
 * never expire by themselves, so delete this only once no key item without `v` remains (after a
 * backfill, or once every such key is revoked and its record no longer read).
 */
function apiKeyOfUnversioned(item: Item): Item {
  return {
    ...item,
    status: item.status ?? 'ACTIVE',
    permissions: effectivePermissions(item.permissions as Permission[]),
  };
}
