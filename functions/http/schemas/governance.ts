import * as z from 'zod/mini';
import { POLICY_STATUSES, type PolicyChange } from '../../domain/policies.js';
import { MAX_SCOPE_LENGTH } from '../../domain/scopes.js';
import type { PolicyRequest } from '../../use-cases/policies.js';
import { CapsBody } from './admin.js';
import { Cursor, OveragePolicy, TenantId } from './common.js';
import { clampedLimit } from './lists.js';

// Request schemas of the governance operations (issue 27): tenant settings, policies, bulk
// actions and list parameters, in zod/mini (a fraction of the classic API's bundle).

const Ttl = z.int().check(z.minimum(1_000), z.maximum(86_400_000));
const Count = z.int().check(z.minimum(0), z.maximum(1_000_000));
const Instant = z.iso.datetime({ offset: true });

// ---- policies ---------------------------------------------------------------------------------

const Pattern = z.string().check(z.minLength(1), z.maxLength(MAX_SCOPE_LENGTH));
const Name = z.string().check(z.minLength(1), z.maxLength(256));
const Description = z.string().check(z.maxLength(1024));
const Priority = z.int().check(z.minimum(0), z.maximum(1_000_000));

/** The reference's ReservationTtlOverride, closed. */
const TtlOverride = z.pipe(
  z.strictObject({
    default_ttl_ms: z.optional(Ttl),
    max_ttl_ms: z.optional(Ttl),
    max_extensions: z.optional(Count),
  }),
  z.transform((t) => ({
    ...(t.default_ttl_ms !== undefined && { defaultTtlMs: t.default_ttl_ms }),
    ...(t.max_ttl_ms !== undefined && { maxTtlMs: t.max_ttl_ms }),
    ...(t.max_extensions !== undefined && { maxExtensions: t.max_extensions }),
  })),
);

/** The reference's RateLimits, closed: stored and answered (their enforcement is not here). */
const RateLimits = z.pipe(
  z.strictObject({
    max_reservations_per_minute: z.optional(z.int().check(z.minimum(1))),
    max_commits_per_minute: z.optional(z.int().check(z.minimum(1))),
  }),
  z.transform((r) => ({
    ...(r.max_reservations_per_minute !== undefined && {
      maxReservationsPerMinute: r.max_reservations_per_minute,
    }),
    ...(r.max_commits_per_minute !== undefined && {
      maxCommitsPerMinute: r.max_commits_per_minute,
    }),
  })),
);

/** The reference's PolicyCreateRequest. */
export const CreatePolicyBody = z.pipe(
  z.object({
    tenant_id: z.optional(TenantId),
    name: Name,
    description: z.optional(Description),
    scope_pattern: Pattern,
    priority: z._default(Priority, 0),
    caps: z.optional(CapsBody),
    commit_overage_policy: z.optional(OveragePolicy),
    reservation_ttl_override: z.optional(TtlOverride),
    rate_limits: z.optional(RateLimits),
    effective_from: z.optional(Instant),
    effective_until: z.optional(Instant),
  }),
  z.transform(
    (b): PolicyRequest => ({
      tenantId: b.tenant_id,
      name: b.name,
      description: b.description,
      scopePattern: b.scope_pattern,
      priority: b.priority,
      caps: b.caps,
      commitOveragePolicy: b.commit_overage_policy,
      ttl: b.reservation_ttl_override,
      rateLimits: b.rate_limits,
      effectiveFrom: b.effective_from,
      effectiveUntil: b.effective_until,
    }),
  ),
);

/**
 * The reference's update fields, and (ours) the rest of a policy's: strict, since an unknown
 * field would change what the request means; null removes an optional setting.
 */
export const UpdatePolicyBody = z.pipe(
  z
    .strictObject({
      name: z.optional(Name),
      description: z.optional(z.nullable(Description)),
      scope_pattern: z.optional(Pattern),
      priority: z.optional(Priority),
      status: z.optional(z.enum(POLICY_STATUSES)),
      caps: z.optional(z.nullable(CapsBody)),
      commit_overage_policy: z.optional(z.nullable(OveragePolicy)),
      reservation_ttl_override: z.optional(z.nullable(TtlOverride)),
      rate_limits: z.optional(z.nullable(RateLimits)),
      effective_from: z.optional(z.nullable(Instant)),
      effective_until: z.optional(z.nullable(Instant)),
    })
    .check(z.refine((b) => Object.keys(b).length > 0, { message: 'names no field to change' })),
  z.transform(
    (b): PolicyChange => ({
      name: b.name,
      description: b.description,
      scopePattern: b.scope_pattern,
      priority: b.priority,
      status: b.status,
      caps: b.caps,
      commitOveragePolicy: b.commit_overage_policy,
      ttl: b.reservation_ttl_override,
      rateLimits: b.rate_limits,
      effectiveFrom: b.effective_from,
      effectiveUntil: b.effective_until,
    }),
  ),
);

export const PolicyParams = z.object({
  policy_id: z.string().check(z.regex(/^pol_[0-9a-f]{1,64}$/, 'is not a policy id')),
});

export const ListPoliciesQuery = z.pipe(
  z.object({
    tenant_id: z.optional(TenantId),
    scope_pattern: z.optional(Pattern),
    status: z.optional(z.enum(POLICY_STATUSES)),
    limit: clampedLimit(100),
    cursor: z.optional(Cursor),
  }),
  z.transform((q) => ({
    tenantId: q.tenant_id,
    scopePattern: q.scope_pattern,
    status: q.status,
    limit: q.limit,
    cursor: q.cursor,
  })),
);
