import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Permission } from './permissions.js';
import type { RequestRateLimits } from './rate-limits.js';

export const KEY_SECRET_PREFIX = 'cyc_live_';

/**
 * The owner of named operator credentials: the reference's sentinel for operator-owned records
 * (`__system__`), which no tenant id can be (ids start with a letter or digit). Such a key is an
 * admin-plane credential: it authenticates as X-Admin-API-Key and holds only `admin:*`
 * permissions (docs/decisions.md § Operators).
 */
export const OPERATORS = '__system__';

export const isOperatorKey = (key: Pick<ApiKey, 'tenant'>): boolean => key.tenant === OPERATORS;
/** Shown in listings and logs; never enough to authenticate. */
export const KEY_PREFIX_LENGTH = KEY_SECRET_PREFIX.length + 5;

export interface ApiKey {
  readonly keyId: string;
  readonly keyPrefix: string;
  readonly tenant: string;
  readonly name: string;
  readonly description?: string | undefined;
  readonly permissions: readonly Permission[];
  readonly createdAt: string;
  readonly expiresAt?: string | undefined;
  /** REVOKED is permanent; an expired key is still ACTIVE here (see `keyStatus`). */
  readonly status: 'ACTIVE' | 'REVOKED';
  readonly updatedAt?: string | undefined;
  readonly revokedAt?: string | undefined;
  readonly revokedReason?: string | undefined;
  /** Narrows its tenant's (docs/decisions.md § Rate limits); absent: the tenant's alone. */
  readonly rateLimits?: RequestRateLimits | undefined;
}

/** The status a listing shows: REVOKED, else EXPIRED once past `expiresAt`, else ACTIVE. */
export const keyStatus = (key: ApiKey, nowMs: number): 'ACTIVE' | 'REVOKED' | 'EXPIRED' =>
  key.status === 'REVOKED' ? 'REVOKED' : isExpired(key, nowMs) ? 'EXPIRED' : 'ACTIVE';

/** The reference's sort keys of the key listing. */
export const KEY_SORT_KEYS = [
  'key_id',
  'name',
  'tenant_id',
  'status',
  'created_at',
  'expires_at',
] as const;
export type KeySortKey = (typeof KEY_SORT_KEYS)[number];

/** What an operator may change on a live key (name, description, permissions, rate limits); never its tenant or secret. */
export interface ApiKeyChange {
  readonly name?: string | undefined;
  readonly description?: string | undefined;
  readonly permissions?: readonly Permission[] | undefined;
  /** The new limits, whole (null or none set: none of its own). */
  readonly rateLimits?: RequestRateLimits | null | undefined;
}

/** 192 bits from the OS CSPRNG, base64url, behind a recognizable prefix. */
export function generateKeySecret(random: (n: number) => Buffer = randomBytes): string {
  return `${KEY_SECRET_PREFIX}${random(24).toString('base64url')}`;
}

export const generateKeyId = (random: (n: number) => Buffer = randomBytes): string =>
  `key_${random(8).toString('hex')}`;

/** Only this hash is stored. A fast hash is right here: the secret has 192 bits of entropy. */
export const hashKeySecret = (secret: string): string =>
  createHash('sha256').update(secret, 'utf8').digest('hex');

export const keyPrefixOf = (secret: string): string => secret.slice(0, KEY_PREFIX_LENGTH);

/** Compares two secrets in time independent of where they differ (hashes have equal length). */
export function secretsEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export const isExpired = (key: Pick<ApiKey, 'expiresAt'>, nowMs: number): boolean =>
  key.expiresAt !== undefined && Date.parse(key.expiresAt) <= nowMs;
