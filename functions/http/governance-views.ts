import type { Policy } from '../domain/policies.js';
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
