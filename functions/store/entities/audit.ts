import type { ApiKey } from '../../domain/api-keys.js';
import {
  AUDIT_OPERATIONS,
  type AuditAction,
  type AuditEntry,
  type AuditRecord,
  actorName,
  actorTypeOf,
  resourceIdOf,
} from '../../domain/audit.js';
import { type Budget, budgetKey } from '../../domain/budget.js';
import type { Policy } from '../../domain/policies.js';
import type { Tenant } from '../../domain/tenant.js';
import { originOf, type WebhookSecurity } from '../../domain/webhook-security.js';
import type { Subscription } from '../../domain/webhooks.js';
import { currentTrace } from '../../telemetry/invocation.js';
import type { Item } from '../expressions.js';
import { directory, keys } from '../keys.js';

// The audit trail: one record per change, written in the change's own transaction
// (docs/decisions.md § Audit trail), in its tenant's partition and, across tenants, the
// `directory` index.

/** Written on every audit record from this version on (absent: written before). */
export const AUDIT_VERSION = 1;

/** A budget's counters and limit, and its status when not ACTIVE. */
const budgetAttributes = (b: Budget) => ({
  allocated: b.counters.allocated,
  spent: b.counters.spent,
  reserved: b.counters.reserved,
  debt: b.counters.debt,
  overdraft_limit: b.overdraftLimit,
  remaining: b.counters.remaining,
  ...(b.status !== 'ACTIVE' && { status: b.status }),
});

/** Its name and status, and its settings and metadata when it has any (changes of them are audited). */
const tenantAttributes = (t: Tenant) => ({
  name: t.name,
  status: t.status,
  ...(t.settings && { settings: { ...t.settings } }),
  ...(t.metadata && { metadata: { ...t.metadata } }),
});

/** What decides a policy's effect, and its standing. */
const policyAttributes = (p: Policy) => ({
  name: p.name,
  scope_pattern: p.scopePattern,
  priority: p.priority,
  status: p.status,
  ...(p.caps && { caps: { ...p.caps } }),
  ...(p.commitOveragePolicy && { commit_overage_policy: p.commitOveragePolicy }),
  ...(p.ttl && { reservation_ttl_override: { ...p.ttl } }),
  ...(p.rateLimits && { rate_limits: { ...p.rateLimits } }),
  ...(p.effectiveFrom && { effective_from: p.effectiveFrom }),
  ...(p.effectiveUntil && { effective_until: p.effectiveUntil }),
});

/** Never the secret or its hash: what an operator may see of a key. */
const keyAttributes = (k: ApiKey) => ({
  name: k.name,
  ...(k.description !== undefined && { description: k.description }),
  permissions: [...k.permissions],
  status: k.status,
  ...(k.revokedReason !== undefined && { revoked_reason: k.revokedReason }),
});

/**
 * What events and operators need of a subscription: never its secret or headers, and of its
 * URL only the origin (a webhook's path often holds a token).
 */
const subscriptionAttributes = (s: Subscription) => ({
  subscription_id: s.subscriptionId,
  tenant_id: s.tenant,
  ...(s.name !== undefined && { name: s.name }),
  url: originOf(s.url),
  event_types: [...s.eventTypes],
  event_categories: [...s.eventCategories],
  status: s.status,
  consecutive_failures: s.consecutiveFailures,
});

const securityAttributes = (c: WebhookSecurity) => ({
  blocked_cidr_ranges: [...c.blockedCidrRanges],
  allowed_url_patterns: [...c.allowedUrlPatterns],
  allow_http: c.allowHttp,
});

type Recorded = Budget | Tenant | ApiKey | Policy | Subscription | WebhookSecurity;

const state = (x: Recorded): Item =>
  'ref' in x
    ? budgetAttributes(x)
    : 'subscriptionId' in x
      ? subscriptionAttributes(x)
      : 'blockedCidrRanges' in x
        ? securityAttributes(x)
        : 'keyId' in x
          ? keyAttributes(x)
          : 'policyId' in x
            ? policyAttributes(x)
            : tenantAttributes(x);

/** What a record keeps of the thing changed, before (absent: created) and after (absent: deleted). */
function recordedStates(e: AuditEntry): { before?: Item; after?: Item } {
  if (e.action === 'webhook.delete') return { before: state(e.before) };
  // A release or a refund records what it did in its detail; the reservation is not copied.
  if (!('after' in e)) return {};
  return { ...(e.before && { before: state(e.before) }), after: state(e.after) };
}

export function auditItem(e: AuditEntry): Item {
  const resourceId = resourceIdOf(e);
  const key = keys.audit(e.tenant, e.atMs, e.requestId, `${e.action}#${resourceId}`);
  const { operation, resourceType } = AUDIT_OPERATIONS[e.action];
  return {
    ...key,
    type: 'audit',
    v: AUDIT_VERSION,
    tenant: e.tenant,
    at_ms: e.atMs,
    actor: actorName(e.actor),
    actor_type: actorTypeOf(e.actor),
    // A named operator credential: the person, beside its key id (docs/decisions.md § Operators).
    ...(e.actor.kind === 'operator' && { actor_name: e.actor.name }),
    request_id: e.requestId,
    ...traceOf(e),
    action: e.action,
    operation,
    resource_type: resourceType,
    resource_id: resourceId,
    ...recordedStates(e),
    ...(e.detail && { detail: e.detail }),
    dir_pk: directory.audit.pk,
    dir_sk: directory.audit.sk(e.tenant, key.sk),
  };
}

/**
 * The request's trace id: the entry's, else that of the request being served; and the flags of
 * its `traceparent` when it came with a valid one (webhook deliveries keep them).
 */
function traceOf(e: AuditEntry) {
  const current = currentTrace();
  const traceId = e.traceId ?? current?.traceId;
  return {
    ...(traceId && { trace_id: traceId }),
    ...(e.traceId === undefined && current?.fromTraceparent && { trace_flags: current.flags }),
  };
}

const ACTOR_TYPES = ['admin', 'api_key', 'admin_on_behalf_of', 'system'] as const;

export function auditRecordOf(stored: Item): AuditRecord {
  const item = stored.v === undefined ? auditOfUnversioned(stored) : stored;
  const actor = String(item.actor);
  const actorType = ACTOR_TYPES.find((t) => t === item.actor_type);
  return {
    logId: `${String(item.pk).slice('AUDIT#'.length)}:${String(item.sk)}`,
    tenant: String(item.tenant),
    atMs: Number(item.at_ms),
    actor,
    // Records written before actor_type: the admin key, or a key id.
    actorType: actorType ?? (actor === 'admin' ? 'admin' : 'api_key'),
    actorName: item.actor_name === undefined ? undefined : String(item.actor_name),
    requestId: String(item.request_id),
    ...(typeof item.trace_id === 'string' && { traceId: item.trace_id }),
    ...(typeof item.trace_flags === 'string' && { traceFlags: item.trace_flags }),
    ...(typeof item.action === 'string' &&
      item.action in AUDIT_OPERATIONS && { action: item.action as AuditAction }),
    operation: String(item.operation),
    resourceType: String(item.resource_type) as AuditRecord['resourceType'],
    resourceId: String(item.resource_id),
    before: item.before as AuditRecord['before'],
    after: item.after as AuditRecord['after'],
    detail: item.detail as AuditRecord['detail'],
  };
}

/**
 * Records written before items carried `v`: those written before the trail covered more than
 * budgets carry the budget's `scope` and `unit` and no operation, resource type or resource id
 * (derived here: its action's operation, a budget, `<scope>#<unit>`). Audit records are kept for
 * good, so delete this only after a backfill has rewritten every record without `v`.
 */
function auditOfUnversioned(item: Item): Item {
  const action = String(item.action) as keyof typeof AUDIT_OPERATIONS;
  const known = AUDIT_OPERATIONS[action];
  return {
    ...item,
    operation: item.operation ?? known?.operation ?? action,
    resource_type: item.resource_type ?? known?.resourceType ?? 'budget',
    resource_id:
      item.resource_id ??
      budgetKey({ scope: String(item.scope), unit: item.unit as Budget['ref']['unit'] }),
  };
}
