import { adminApiKeys } from '../config/secrets.js';
import { config } from '../config/settings.js';
import type { ApiKey } from '../domain/api-keys.js';
import {
  hashKeySecret,
  isExpired,
  isOperatorKey,
  KEY_SECRET_PREFIX,
  secretsEqual,
} from '../domain/api-keys.js';
import type { Caller, Operator } from '../domain/caller.js';
import { DomainError } from '../domain/errors.js';
import { grants, type Permission } from '../domain/permissions.js';
import type { RequestRateLimits } from '../domain/rate-limits.js';
import type { Auth, Required } from '../routes.js';
import { getApiKeyByHash } from '../store/api-keys.js';
import { TtlCache } from '../ttl-cache.js';
import { isKeyShaped, UnknownKeys } from './unknown-keys.js';

/** A tenant key's caller is the domain's Caller; admin and anonymous callers never reach a use case that needs one. */
export interface TenantCaller extends Caller {
  readonly kind: 'tenant';
  /** The key's own request-rate limits (http/rate-limits.ts). */
  readonly rateLimits?: RequestRateLimits | undefined;
}
/** The operator: the bootstrap admin key, or a named operator credential. */
export interface AdminCaller {
  readonly kind: 'admin';
  readonly operator?: Operator | undefined;
}
export type RouteCaller = TenantCaller | AdminCaller | { readonly kind: 'anonymous' };

type Headers = Record<string, string | undefined>;

const unauthorized = (message: string) => new DomainError('UNAUTHORIZED', message);

const forbidden = (required: Permission) =>
  new DomainError('FORBIDDEN', `API key lacks permission ${required}`, {
    missing_permission: required,
  });

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
      return authenticateAdmin(headers['x-admin-api-key'], auth.operator, now);
    case 'tenantOrAdmin':
      if (headers['x-admin-api-key'] !== undefined)
        return authenticateAdmin(headers['x-admin-api-key'], auth.operator, now);
      return authenticateTenant(headers, auth.permission, now);
    case 'tenant':
      return authenticateTenant(headers, auth.permission, now);
  }
}

async function authenticateTenant(
  headers: Headers,
  permission: Required | undefined,
  now: number,
): Promise<TenantCaller> {
  const key = await liveKey(headers['x-service-api-key'] ?? headers['x-cycles-api-key'], now);
  if (isOperatorKey(key)) {
    throw unauthorized('an operator credential authenticates with X-Admin-API-Key');
  }
  const anyOf: readonly Permission[] =
    permission === undefined ? [] : typeof permission === 'string' ? [permission] : permission;
  const first = anyOf[0];
  if (first !== undefined && !anyOf.some((p) => grants(key.permissions, p))) throw forbidden(first);
  return {
    kind: 'tenant',
    tenant: key.tenant,
    keyId: key.keyId,
    permissions: key.permissions,
    keyExpiresAt: key.expiresAt,
    ...(key.rateLimits && { rateLimits: key.rateLimits }),
  };
}

/**
 * X-Admin-API-Key: the bootstrap admin key — current, or previous during a rotation window (both
 * audited as `admin`) — or a named operator credential (audited under its key id and name), which
 * must hold the route's operator permission. A value neither cached admin key knows is checked
 * once more against a fresh read of the secret: it may have been rotated in since this container
 * last read it.
 */
async function authenticateAdmin(
  given: string | undefined,
  required: Permission | undefined,
  now: number,
): Promise<AdminCaller> {
  const accepted = await adminApiKeys();
  const matches = (keys: readonly string[]) =>
    given !== undefined && keys.some((key) => secretsEqual(given, key));
  if (matches(accepted)) return { kind: 'admin' };
  if (given?.startsWith(KEY_SECRET_PREFIX)) return authenticateOperator(given, required, now);
  if (accepted.length === 0) {
    throw unauthorized('admin operations are disabled: ADMIN_API_KEY is not set');
  }
  if (!given) throw unauthorized('X-Admin-API-Key header is required');
  if (!matches(await adminApiKeys({ fresh: true }))) {
    throw unauthorized('X-Admin-API-Key is not valid');
  }
  return { kind: 'admin' };
}

async function authenticateOperator(
  secret: string,
  required: Permission | undefined,
  now: number,
): Promise<AdminCaller> {
  const key = await liveKey(secret, now);
  if (!isOperatorKey(key)) {
    throw unauthorized(
      'X-Admin-API-Key is not valid: a tenant key authenticates with X-Cycles-API-Key',
    );
  }
  if (required && !grants(key.permissions, required)) throw forbidden(required);
  return {
    kind: 'admin',
    operator: {
      keyId: key.keyId,
      name: key.name,
      permissions: key.permissions,
      keyExpiresAt: key.expiresAt,
    },
  };
}

/** The key a secret names, live: 401 when it is missing, unknown, revoked or expired. */
async function liveKey(secret: string | undefined, now: number): Promise<ApiKey> {
  if (!secret) throw unauthorized('X-Service-API-Key header is required');
  // Not of our shape: no key could match, so no table read (http/unknown-keys.ts).
  const key = isKeyShaped(secret) ? await findKey(secret, now) : undefined;
  // Lookup is by SHA-256 of the secret, so response time does not depend on how much of it matched.
  if (!key) throw unauthorized('API key is not valid');
  if (key.status === 'REVOKED') throw unauthorized('API key has been revoked');
  if (isExpired(key, now)) throw unauthorized('API key has expired');
  return key;
}

// A short positive cache per container saves a read on almost every request. It is what bounds
// revocation: a revoked or changed key is seen by every process within API_KEY_CACHE_TTL_MS
// (at most 5 s; docs/decisions.md § Control plane). Expiry is still checked on each use. Ages
// are on the server clock, so tests move past the bound instead of waiting for it.
const CACHE_MAX = 10_000;
const known = new TtlCache<ApiKey>(() => config.API_KEY_CACHE_TTL_MS, CACHE_MAX);
const unknownKeys = new UnknownKeys(CACHE_MAX, () => config.API_KEY_CACHE_TTL_MS);

export async function findKey(secret: string, now: number): Promise<ApiKey | undefined> {
  const hash = hashKeySecret(secret);
  const hit = known.get(hash, now);
  if (hit) return hit.value;
  if (unknownKeys.has(hash, now)) return undefined;
  // Concurrent requests with the same secret share one read: a burst of one unknown key (or a
  // cold container's first burst of a real one) costs one GetItem, not one per request.
  const pending = lookups.get(hash);
  if (pending) return pending;
  const lookup = getApiKeyByHash(hash)
    .then((key) => {
      if (!key) unknownKeys.add(hash, now);
      if (key) known.set(hash, key, now);
      return key;
    })
    .finally(() => lookups.delete(hash));
  lookups.set(hash, lookup);
  return lookup;
}
const lookups = new Map<string, Promise<ApiKey | undefined>>();
