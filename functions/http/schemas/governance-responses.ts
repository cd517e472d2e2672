import * as z from 'zod';
import { POLICY_STATUSES } from '../../domain/policies.js';
import { Unit } from './common.js';
import { Caps } from './responses.js';

// The success bodies of the governance operations (issue 27), as governance-views.ts renders
// them: the reference's Policy, bulk-action and overview shapes, closed, optional fields only
// when set. Components of the admin document under these names (infra/openapi.ts).

const Count = z.number().int().nonnegative();
const Timestamp = z.iso.datetime();
const OveragePolicy = z.enum(['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT']);

/** The reference's Policy (it has no tenant field: the policy id pins the tenant). */
export const Policy = z.strictObject({
  policy_id: z.string(),
  name: z.string(),
  description: z.string().optional(),
  scope_pattern: z.string(),
  priority: Count,
  caps: Caps.optional(),
  commit_overage_policy: OveragePolicy.optional(),
  reservation_ttl_override: z
    .strictObject({
      default_ttl_ms: Count.optional(),
      max_ttl_ms: Count.optional(),
      max_extensions: Count.optional(),
    })
    .optional(),
  rate_limits: z
    .strictObject({
      max_reservations_per_minute: Count.optional(),
      max_commits_per_minute: Count.optional(),
    })
    .optional(),
  status: z.enum(POLICY_STATUSES),
  effective_from: Timestamp.optional(),
  effective_until: Timestamp.optional(),
  created_at: Timestamp,
  updated_at: Timestamp.optional(),
});
export const PolicyListResponse = z.strictObject({
  policies: z.array(Policy),
  has_more: z.boolean(),
  next_cursor: z.string().optional(),
});

/** The reference's BulkActionRowOutcome. */
export const BulkActionRowOutcome = z.strictObject({
  id: z.string(),
  error_code: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
});
const rows = {
  total_matched: Count,
  succeeded: z.array(BulkActionRowOutcome),
  failed: z.array(BulkActionRowOutcome),
  skipped: z.array(BulkActionRowOutcome),
  idempotency_key: z.string(),
};
export const TenantBulkActionResponse = z.strictObject({
  action: z.enum(['SUSPEND', 'REACTIVATE', 'CLOSE']),
  ...rows,
});
export const BudgetBulkActionResponse = z.strictObject({
  action: z.enum(['CREDIT', 'DEBIT', 'RESET', 'REPAY_DEBT', 'RESET_SPENT', 'FREEZE', 'UNFREEZE']),
  ...rows,
});

/** The reference's Event, as the overview lists recent denials and expiries. */
export const OverviewEvent = z.strictObject({
  event_id: z.string(),
  event_type: z.enum(['reservation.denied', 'reservation.expired']),
  category: z.literal('reservation'),
  timestamp: Timestamp,
  tenant_id: z.string(),
  scope: z.string().optional(),
  source: z.string(),
  data: z.record(z.string(), z.unknown()),
  request_id: z.string().optional(),
});

/** The reference's AdminOverviewResponse. */
export const AdminOverviewResponse = z.strictObject({
  as_of: Timestamp,
  event_window_seconds: Count,
  tenant_counts: z.strictObject({
    total: Count,
    active: Count,
    suspended: Count,
    closed: Count,
  }),
  budget_counts: z.strictObject({
    total: Count,
    active: Count,
    frozen: Count,
    closed: Count,
    over_limit: Count,
    with_debt: Count,
    by_unit: z.record(z.string(), Count),
  }),
  over_limit_scopes: z
    .array(
      z.strictObject({
        scope: z.string(),
        unit: Unit,
        allocated: Count,
        remaining: z.number().int(),
        debt: Count,
      }),
    )
    .max(10),
  debt_scopes: z
    .array(z.strictObject({ scope: z.string(), unit: Unit, debt: Count, overdraft_limit: Count }))
    .max(10),
  webhook_counts: z.strictObject({
    total: Count,
    active: Count,
    disabled: Count,
    with_failures: Count,
  }),
  failing_webhooks: z
    .array(
      z.strictObject({
        subscription_id: z.string(),
        url: z.string(),
        consecutive_failures: Count,
        last_failure_at: Timestamp.optional(),
      }),
    )
    .max(10),
  event_counts: z.strictObject({
    total_recent: Count,
    by_category: z.record(z.string(), Count),
  }),
  recent_denials: z.array(OverviewEvent).max(10),
  recent_expiries: z.array(OverviewEvent).max(10),
  recent_denials_by_reason: z.record(z.string(), Count).optional(),
});
