import { adminApiKeys } from '../config/secrets.js';
import { config } from '../config/settings.js';
import type { ApiKey } from '../domain/api-keys.js';
import { hashKeySecret, isExpired, secretsEqual } from '../domain/api-keys.js';
import type { Caller } from '../domain/caller.js';
import { DomainError } from '../domain/errors.js';
import type { Permission } from '../domain/permissions.js';
import type { Auth } from '../routes.js';
import { getApiKeyByHash } from '../store/api-keys.js';
import { isKeyShaped, UnknownKeys } from './unknown-keys.js';

/** A tenant key's caller is the domain's Caller; admin and anonymous callers never reach a use case that needs one. */
export interface TenantCaller extends Caller {
  readonly kind: 'tenant';
}
export type RouteCaller =
  | TenantCaller
  | { readonly kind: 'admin' }
  | { readonly kind: 'anonymous' };

type Headers = Record<string, string | undefined>;

const unauthorized = (message: string) => new DomainError('UNAUTHORIZED', message);

/** Resolves the caller a route requires from the request headers (names lower-cased). */
export async function authenticate(
  headers: Headers,
  auth: Auth,
  now: number,
): Promise<RouteCaller> {
  switch (auth.kind) {
    case 'none':
      return { kind: 'anonymous' };
    case 'admin':
      return authenticateAdmin(headers['x-admin-api-key']);
    case 'tenantOrAdmin':
      if (headers['x-admin-api-key'] !== undefined)
        return authenticateAdmin(headers['x-admin-api-key']);
      return authenticateTenant(headers, auth.permission, now);
    case 'tenant':
      return authenticateTenant(headers, auth.permission, now);
  }
}

async function authenticateTenant(
  headers: Headers,
  permission: Permission | undefined,
  now: number,
): Promise<TenantCaller> {
  const caller = await authenticateKey(
    headers['x-service-api-key'] ?? headers['x-cycles-api-key'],
    now,
  );
  if (permission && !caller.permissions.includes(permission)) {
    throw new DomainError('FORBIDDEN', `API key lacks permission ${permission}`, {
      missing_permission: permission,
    });
  }
  return caller;
}

/**
 * The current admin key, or the previous one during a rotation window (both audited as admin).
 * A key neither cached value knows is checked once more against a fresh read of the secret: it
 * may have been rotated in since this container last read it.
 */
async function authenticateAdmin(given: string | undefined): Promise<RouteCaller> {
  const accepted = await adminApiKeys();
  if (accepted.length === 0) {
    throw unauthorized('admin operations are disabled: ADMIN_API_KEY is not set');
  }
  if (!given) throw unauthorized('X-Admin-API-Key header is required');
  const matches = (keys: readonly string[]) => keys.some((key) => secretsEqual(given, key));
  if (!matches(accepted) && !matches(await adminApiKeys({ fresh: true }))) {
    throw unauthorized('X-Admin-API-Key is not valid');
  }
  return { kind: 'admin' };
}

async function authenticateKey(secret: string | undefined, now: number): Promise<TenantCaller> {
  if (!secret) throw unauthorized('X-Service-API-Key header is required');
  // Not of our shape: no key could match, so no table read (http/unknown-keys.ts).
  const key = isKeyShaped(secret) ? await findKey(secret, now) : undefined;
  // Lookup is by SHA-256 of the secret, so response time does not depend on how much of it matched.
  if (!key) throw unauthorized('API key is not valid');
  if (key.status === 'REVOKED') throw unauthorized('API key has been revoked');
  if (isExpired(key, now)) throw unauthorized('API key has expired');
  return {
    kind: 'tenant',
    tenant: key.tenant,
    keyId: key.keyId,
    permissions: key.permissions,
    keyExpiresAt: key.expiresAt,
  };
}

// A short positive cache per container saves a read on almost every request. It is what bounds
// revocation: a revoked or changed key is seen by every process within API_KEY_CACHE_TTL_MS
// (at most 5 s; docs/decisions.md § Control plane). Expiry is still checked on each use. Ages
// are on the server clock, so tests move past the bound instead of waiting for it.
const cache = new Map<string, { key: ApiKey; at: number }>();
const CACHE_MAX = 10_000;
const unknownKeys = new UnknownKeys(CACHE_MAX, () => config.API_KEY_CACHE_TTL_MS);

export async function findKey(secret: string, now: number): Promise<ApiKey | undefined> {
  const hash = hashKeySecret(secret);
  const hit = cache.get(hash);
  if (hit && now >= hit.at && now - hit.at < config.API_KEY_CACHE_TTL_MS) return hit.key;
  if (unknownKeys.has(hash, now)) return undefined;
  const key = await getApiKeyByHash(hash);
  if (!key) unknownKeys.add(hash, now);
  if (key && config.API_KEY_CACHE_TTL_MS > 0) {
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(hash, { key, at: now });
  }
  return key;
}
