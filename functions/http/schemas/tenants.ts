import * as z from 'zod/mini';
import { rateLimitsOf } from '../../domain/rate-limits.js';
import { EXPIRY_POLICIES, type SettingsChange, UNBUDGETED_SCOPES } from '../../domain/tenant.js';
import { OveragePolicy, TenantId } from './common.js';

// A tenant's settings on the wire (the reference's tenant defaults and limits, and our option for
// unbudgeted scopes), in zod/mini: the tenant bodies of admin.ts spread them in.

const Ttl = z.int().check(z.minimum(1_000), z.maximum(86_400_000));
const Count = z.int().check(z.minimum(0), z.maximum(1_000_000));

/** The reference's tenant metadata: at most 32 string values. */
export const TenantMetadata = z
  .record(z.string().check(z.minLength(1), z.maxLength(64)), z.string().check(z.maxLength(256)))
  .check(z.refine((m) => Object.keys(m).length <= 32, { message: 'at most 32 entries' }));

/** The reference's expiry policies; MANUAL_CLEANUP is refused by name, not as an unknown value. */
const ExpiryPolicy = z.string().check(
  z.refine((v) => (EXPIRY_POLICIES as readonly string[]).includes(v), {
    message:
      'must be AUTO_RELEASE or GRACE_ONLY: an expired hold always returns to its budgets here (MANUAL_CLEANUP is not supported)',
  }),
);

/** The reference's tenant defaults and limits, and our option for unbudgeted scopes. */
const settingFields = {
  default_commit_overage_policy: OveragePolicy,
  default_reservation_ttl_ms: Ttl,
  max_reservation_ttl_ms: Ttl,
  max_reservation_extensions: Count,
  reservation_expiry_policy: ExpiryPolicy,
  unbudgeted_scopes: z.enum(UNBUDGETED_SCOPES),
} as const;
type SettingField = keyof typeof settingFields;

const SETTING_NAMES: Record<SettingField, keyof SettingsChange> = {
  default_commit_overage_policy: 'defaultCommitOveragePolicy',
  default_reservation_ttl_ms: 'defaultReservationTtlMs',
  max_reservation_ttl_ms: 'maxReservationTtlMs',
  max_reservation_extensions: 'maxReservationExtensions',
  reservation_expiry_policy: 'reservationExpiryPolicy',
  unbudgeted_scopes: 'unbudgetedScopes',
};

/** The settings a body names, as the domain names them (null: back to the default). */
export function settingsOf(body: Partial<Record<SettingField, unknown>>): SettingsChange {
  const change: Record<string, unknown> = {};
  for (const [wire, name] of Object.entries(SETTING_NAMES)) {
    const value = body[wire as SettingField];
    if (value !== undefined) change[name] = value;
  }
  return change as SettingsChange;
}

/** On creation: each setting optional. */
export const TenantSettingsFields = {
  parent_tenant_id: z.optional(TenantId),
  metadata: z.optional(TenantMetadata),
  ...Object.fromEntries(Object.entries(settingFields).map(([k, v]) => [k, z.optional(v)])),
} as { readonly [K in SettingField]: z.ZodMiniOptional<(typeof settingFields)[K]> } & {
  readonly parent_tenant_id: z.ZodMiniOptional<typeof TenantId>;
  readonly metadata: z.ZodMiniOptional<typeof TenantMetadata>;
};

/** In a PATCH: each setting optional, null back to its default. */
export const TenantSettingsPatch = {
  metadata: z.optional(TenantMetadata),
  ...Object.fromEntries(
    Object.entries(settingFields).map(([k, v]) => [k, z.optional(z.nullable(v))]),
  ),
} as {
  readonly [K in SettingField]: z.ZodMiniOptional<z.ZodMiniNullable<(typeof settingFields)[K]>>;
} & { readonly metadata: z.ZodMiniOptional<typeof TenantMetadata> };

/**
 * A tenant's or a key's request-rate limits (docs/decisions.md § Rate limits), closed. At most
 * 60,000 a minute: one counter item takes 1,000 writes a second (aws-facts § DynamoDB).
 */
const PerMinute = z.int().check(z.minimum(1), z.maximum(60_000));
export const RateLimitsBody = z.pipe(
  z.strictObject({
    max_requests_per_minute: z.optional(PerMinute),
    max_reservations_per_minute: z.optional(PerMinute),
    max_commits_per_minute: z.optional(PerMinute),
  }),
  z.transform(rateLimitsOf),
);
