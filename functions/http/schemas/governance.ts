import * as z from 'zod/mini';
import { BUDGET_STATUSES, FUND_OPERATIONS } from '../../domain/ledger.js';
import { POLICY_STATUSES, type PolicyChange } from '../../domain/policies.js';
import { MAX_SCOPE_LENGTH } from '../../domain/scopes.js';
import { TENANT_STATUSES } from '../../domain/tenant.js';
import type { BudgetBulkRequest, TenantBulkRequest } from '../../use-cases/bulk-actions.js';
import type { PolicyRequest } from '../../use-cases/policies.js';
import { CapsBody } from './admin.js';
import { Amount, Cursor, OveragePolicy, TenantId, Unit } from './common.js';
import { clampedLimit, Search } from './lists.js';

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

// ---- bulk actions -----------------------------------------------------------------------------

const BulkKey = z.string().check(z.minLength(1), z.maxLength(128));
const ExpectedCount = z.optional(z.int().check(z.minimum(0)));

/** The reference's TenantBulkFilter: at least one property (an empty one would be every tenant). */
const TenantBulkFilter = z
  .object({
    status: z.optional(z.enum(TENANT_STATUSES)),
    parent_tenant_id: z.optional(TenantId),
    observe_mode: z.optional(z.string()),
    search: Search,
  })
  .check(
    z.refine((f) => Object.values(f).some((v) => v !== undefined), {
      message: 'names no filter: an empty filter would act on every tenant',
    }),
  );

/** The reference's TenantBulkActionRequest. */
export const TenantBulkActionBody = z.pipe(
  z.object({
    filter: TenantBulkFilter,
    action: z.enum(['SUSPEND', 'REACTIVATE', 'CLOSE']),
    expected_count: ExpectedCount,
    idempotency_key: BulkKey,
  }),
  z.transform(
    (b): TenantBulkRequest => ({
      filter: {
        status: b.filter.status,
        parentTenantId: b.filter.parent_tenant_id,
        search: b.filter.search,
      },
      action: b.action,
      expectedCount: b.expected_count,
      idempotencyKey: b.idempotency_key,
    }),
  ),
);

const Fraction = z.optional(z.number().check(z.minimum(0), z.maximum(1)));

/** The reference's BudgetBulkFilter: one tenant's budgets. */
const BudgetBulkFilter = z.object({
  tenant_id: TenantId,
  scope_prefix: z.optional(z.string().check(z.minLength(1), z.maxLength(MAX_SCOPE_LENGTH))),
  unit: z.optional(Unit),
  status: z.optional(z.enum(BUDGET_STATUSES)),
  over_limit: z.optional(z.boolean()),
  has_debt: z.optional(z.boolean()),
  utilization_min: Fraction,
  utilization_max: Fraction,
  search: Search,
});

/**
 * The reference's BudgetBulkActionRequest; FREEZE and UNFREEZE are ours beside its funding
 * operations. RESET_SPENT's amount is the spent to start from, as in a single funding
 * (docs/decisions.md): the reference's `spent` field is refused rather than misread.
 */
export const BudgetBulkActionBody = z.pipe(
  z
    .object({
      filter: BudgetBulkFilter,
      action: z.enum([...FUND_OPERATIONS, 'FREEZE', 'UNFREEZE']),
      amount: z.optional(Amount),
      spent: z.optional(z.unknown()),
      reason: z.optional(z.string().check(z.maxLength(512))),
      expected_count: ExpectedCount,
      idempotency_key: BulkKey,
    })
    .check(
      z.refine((b) => b.spent === undefined, {
        path: ['spent'],
        message:
          "is not taken: RESET_SPENT's amount is the spent to start from here, the allocation is kept",
      }),
    ),
  z.transform(
    (b): BudgetBulkRequest => ({
      filter: {
        tenantId: b.filter.tenant_id,
        scopePrefix: b.filter.scope_prefix,
        unit: b.filter.unit,
        status: b.filter.status,
        overLimit: b.filter.over_limit,
        hasDebt: b.filter.has_debt,
        utilizationMin: b.filter.utilization_min,
        utilizationMax: b.filter.utilization_max,
        search: b.filter.search,
      },
      action: b.action,
      amount: b.amount,
      reason: b.reason,
      expectedCount: b.expected_count,
      idempotencyKey: b.idempotency_key,
    }),
  ),
);
