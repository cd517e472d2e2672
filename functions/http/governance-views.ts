import type { Refusal } from '../domain/budget-events.js';
import { EVENT_SOURCE } from '../domain/events.js';
import { derivedId } from '../domain/fingerprint.js';
import type { Policy } from '../domain/policies.js';
import type { Reservation } from '../domain/reservation.js';
import type { BulkResult, RowOutcome } from '../use-cases/bulk-actions.js';
import { EVENT_WINDOW_SECONDS, type Overview } from '../use-cases/overview.js';
import type { Page } from '../use-cases/pages.js';
import { capsView, pageTail } from './views.js';

// Domain results → wire JSON for the governance operations (issue 27): the reference's shapes,
// optional fields omitted, never null.

/** The reference's Policy. */
export const policyView = (p: Policy) => ({
  policy_id: p.policyId,
  name: p.name,
  ...(p.description !== undefined && { description: p.description }),
  scope_pattern: p.scopePattern,
  priority: p.priority,
  ...(p.caps && { caps: capsView(p.caps) }),
  ...(p.commitOveragePolicy && { commit_overage_policy: p.commitOveragePolicy }),
  ...(p.ttl && {
    reservation_ttl_override: {
      ...(p.ttl.defaultTtlMs !== undefined && { default_ttl_ms: p.ttl.defaultTtlMs }),
      ...(p.ttl.maxTtlMs !== undefined && { max_ttl_ms: p.ttl.maxTtlMs }),
      ...(p.ttl.maxExtensions !== undefined && { max_extensions: p.ttl.maxExtensions }),
    },
  }),
  ...(p.rateLimits && {
    rate_limits: {
      ...(p.rateLimits.maxReservationsPerMinute !== undefined && {
        max_reservations_per_minute: p.rateLimits.maxReservationsPerMinute,
      }),
      ...(p.rateLimits.maxCommitsPerMinute !== undefined && {
        max_commits_per_minute: p.rateLimits.maxCommitsPerMinute,
      }),
    },
  }),
  status: p.status,
  ...(p.effectiveFrom !== undefined && { effective_from: p.effectiveFrom }),
  ...(p.effectiveUntil !== undefined && { effective_until: p.effectiveUntil }),
  created_at: p.createdAt,
  ...(p.updatedAt !== undefined && { updated_at: p.updatedAt }),
});

export const policyPageView = (p: Page<Policy>) => ({
  policies: p.items.map(policyView),
  ...pageTail(p),
});

const rowView = (r: RowOutcome) => ({
  id: r.id,
  ...(r.errorCode !== undefined && { error_code: r.errorCode }),
  ...(r.message !== undefined && { message: r.message }),
  ...(r.reason !== undefined && { reason: r.reason }),
});

/** The reference's TenantBulkActionResponse / BudgetBulkActionResponse. */
export const bulkResultView = <A extends string>(r: BulkResult<A>) => ({
  action: r.action,
  total_matched: r.totalMatched,
  succeeded: r.succeeded.map(rowView),
  failed: r.failed.map(rowView),
  skipped: r.skipped.map(rowView),
  idempotency_key: r.idempotencyKey,
});

/** A recent refusal as the reference's Event (its id is the reservation.denied event's). */
const denialView = (r: Refusal) => ({
  event_id: derivedId('evt', 'reservation.denied', r.refusalId),
  event_type: 'reservation.denied' as const,
  category: 'reservation' as const,
  timestamp: new Date(r.atMs).toISOString(),
  tenant_id: r.tenant,
  scope: r.scope,
  source: EVENT_SOURCE,
  data: {
    scope: r.scope,
    unit: r.unit,
    reason_code: r.code,
    requested_amount: r.requested,
    remaining: r.remaining,
    subject: r.subject,
    action: r.action,
  },
  ...(r.requestId !== undefined && { request_id: r.requestId }),
});

/** A recent expiry as the reference's Event (its id is the reservation.expired event's). */
const expiryView = (r: Reservation) => ({
  event_id: derivedId('evt', 'reservation.expired', r.reservationId),
  event_type: 'reservation.expired' as const,
  category: 'reservation' as const,
  timestamp: new Date(r.finalizedAtMs ?? r.expiresAtMs).toISOString(),
  tenant_id: r.tenant,
  scope: r.scopePath,
  source: EVENT_SOURCE,
  data: {
    reservation_id: r.reservationId,
    scope: r.scopePath,
    unit: r.reserved.unit,
    estimated_amount: r.reserved.amount,
    created_at: new Date(r.createdAtMs).toISOString(),
    expired_at: new Date(r.finalizedAtMs ?? r.expiresAtMs).toISOString(),
  },
});

const sum = (counts: Readonly<Record<string, number>>) =>
  Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * The reference's AdminOverviewResponse. Webhooks are the events plane's (none here yet: zero);
 * the recent events counted are the refusals and expiries this server records.
 */
export function overviewView(o: Overview) {
  const denials = sum(o.denialsByReason);
  const recent = denials + o.expiries.length;
  return {
    as_of: new Date(o.asOf).toISOString(),
    event_window_seconds: EVENT_WINDOW_SECONDS,
    tenant_counts: {
      total: sum(o.tenants),
      active: o.tenants.ACTIVE ?? 0,
      suspended: o.tenants.SUSPENDED ?? 0,
      closed: o.tenants.CLOSED ?? 0,
    },
    budget_counts: {
      total: sum(o.budgets),
      active: o.budgets.ACTIVE ?? 0,
      frozen: o.budgets.FROZEN ?? 0,
      closed: o.budgets.CLOSED ?? 0,
      over_limit: o.overLimit,
      with_debt: o.withDebt,
      by_unit: { ...o.byUnit },
    },
    over_limit_scopes: o.overLimitScopes.map((b) => ({
      scope: b.ref.scope,
      unit: b.ref.unit,
      allocated: b.counters.allocated,
      remaining: b.counters.remaining,
      debt: b.counters.debt,
    })),
    debt_scopes: o.debtScopes.map((b) => ({
      scope: b.ref.scope,
      unit: b.ref.unit,
      debt: b.counters.debt,
      overdraft_limit: b.overdraftLimit,
    })),
    webhook_counts: { total: 0, active: 0, disabled: 0, with_failures: 0 },
    failing_webhooks: [],
    event_counts: {
      total_recent: recent,
      by_category: Object.fromEntries(recent > 0 ? [['reservation', recent]] : []) as Record<
        string,
        number
      >,
    },
    recent_denials: o.denials.map(denialView),
    recent_expiries: o.expiries.map(expiryView),
    recent_denials_by_reason: { ...o.denialsByReason },
  };
}
