import { DomainError, invalidRequest } from './errors.js';
import {
  categoryOf,
  type EventCategory,
  type EventDocument,
  type EventType,
  isTenantCategory,
  SYSTEM_TENANT,
} from './events.js';

/**
 * Webhook subscriptions (cycles-governance-admin v0.1.25 `WebhookSubscription`): who receives
 * which events, where, and how hard delivery tries. Every way a subscription comes to exist or
 * change — the admin and tenant routes, the environment bootstrap — goes through
 * `newSubscription` / `changedSubscription`, so the reference's WEBHOOK SUBSCRIPTION
 * INVARIANTS hold by construction (docs/decisions.md § Events and webhooks).
 */

export const SUBSCRIPTION_STATUSES = ['ACTIVE', 'PAUSED', 'DISABLED'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** The reference's WebhookRetryPolicy, every field settled (its defaults where not given). */
export interface RetryPolicy {
  /** Retries after the first attempt, 0–10. */
  readonly maxRetries: number;
  readonly initialDelayMs: number;
  readonly backoffMultiplier: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  initialDelayMs: 1_000,
  backoffMultiplier: 2,
  maxDelayMs: 60_000,
};
export const DEFAULT_DISABLE_AFTER_FAILURES = 10;

/** What a creator says: everything else is the server's. */
export interface SubscriptionSpec {
  readonly name?: string | undefined;
  readonly description?: string | undefined;
  readonly url: string;
  readonly eventTypes: readonly EventType[];
  readonly eventCategories?: readonly EventCategory[] | undefined;
  readonly scopeFilter?: string | undefined;
  /** The reference's WebhookThresholdConfig, kept as given (only budget_utilization is applied). */
  readonly thresholds?: Readonly<Record<string, unknown>> | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly retryPolicy?: Partial<RetryPolicy> | undefined;
  readonly disableAfterFailures?: number | undefined;
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
}

export interface Subscription
  extends Omit<SubscriptionSpec, 'retryPolicy' | 'eventCategories' | 'disableAfterFailures'> {
  readonly subscriptionId: string;
  /** A tenant id, or SYSTEM_TENANT for the operator's own. */
  readonly tenant: string;
  readonly eventCategories: readonly EventCategory[];
  readonly retryPolicy: RetryPolicy;
  readonly disableAfterFailures: number;
  readonly status: SubscriptionStatus;
  readonly consecutiveFailures: number;
  readonly createdAt: string;
  readonly updatedAt?: string | undefined;
  readonly lastTriggeredAt?: string | undefined;
  readonly lastSuccessAt?: string | undefined;
  readonly lastFailureAt?: string | undefined;
}

/** A PATCH: absent fields stay; `status` only ACTIVE or PAUSED (DISABLED is the dispatcher's). */
export interface SubscriptionChange
  extends Partial<Omit<SubscriptionSpec, 'eventTypes' | 'eventCategories'>> {
  readonly eventTypes?: readonly EventType[] | undefined;
  readonly eventCategories?: readonly EventCategory[] | undefined;
  readonly status?: 'ACTIVE' | 'PAUSED' | undefined;
  /** A new signing secret: only whether one was given matters here. */
  readonly rotatesSecret?: boolean | undefined;
}

const isTenantOwned = (owner: string) => owner !== SYSTEM_TENANT;

/**
 * INVARIANT 1 (selector presence) and INVARIANT 2 (a subscription a concrete tenant owns
 * carries only tenant-accessible types and categories), whoever provisions it: a violation is a
 * 400 and nothing is stored.
 */
export function checkSelectors(
  owner: string,
  types: readonly EventType[],
  categories: readonly EventCategory[],
): void {
  if (types.length === 0 && categories.length === 0) {
    throw invalidRequest(
      'a subscription needs at least one event_types or event_categories entry',
      {
        field: 'event_types',
      },
    );
  }
  if (!isTenantOwned(owner)) return;
  const type = types.find((t) => !isTenantCategory(categoryOf(t)));
  if (type !== undefined) {
    throw invalidRequest(
      `event type ${type} is admin-only: a tenant's subscription may select budget.*, reservation.* and tenant.* only`,
      { field: 'event_types', event_type: type },
    );
  }
  const category = categories.find((c) => !isTenantCategory(c));
  if (category !== undefined) {
    throw invalidRequest(
      `event category ${category} is admin-only: a tenant's subscription may select budget, reservation and tenant only`,
      { field: 'event_categories', event_category: category },
    );
  }
}

/** A new subscription, ACTIVE, its invariants checked. */
export function newSubscription(
  subscriptionId: string,
  owner: string,
  spec: SubscriptionSpec,
  createdAt: string,
): Subscription {
  const categories = unique(spec.eventCategories ?? []);
  const types = unique(spec.eventTypes);
  checkSelectors(owner, types, categories);
  const { retryPolicy, disableAfterFailures, ...rest } = spec;
  return {
    ...rest,
    subscriptionId,
    tenant: owner,
    eventTypes: types,
    eventCategories: categories,
    retryPolicy: { ...DEFAULT_RETRY_POLICY, ...defined(retryPolicy ?? {}) },
    disableAfterFailures: disableAfterFailures ?? DEFAULT_DISABLE_AFTER_FAILURES,
    status: 'ACTIVE',
    consecutiveFailures: 0,
    createdAt,
  };
}

const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];
const defined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** The fields a change modified (the reference's `changed_fields`), status apart. */
export type ChangedField =
  | 'name'
  | 'description'
  | 'url'
  | 'event_types'
  | 'event_categories'
  | 'scope_filter'
  | 'thresholds'
  | 'headers'
  | 'retry_policy'
  | 'disable_after_failures'
  | 'metadata'
  | 'signing_secret';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The subscription after a PATCH, and what changed; the same subscription when nothing did (a
 * no-op writes and emits nothing). ACTIVE re-enables a DISABLED one and clears its failure count.
 */
export function changedSubscription(
  s: Subscription,
  change: SubscriptionChange,
  at: string,
): { readonly after: Subscription; readonly changed: readonly ChangedField[] } {
  const types = change.eventTypes ? unique(change.eventTypes) : s.eventTypes;
  const categories = change.eventCategories ? unique(change.eventCategories) : s.eventCategories;
  checkSelectors(s.tenant, types, categories);
  const retryPolicy = change.retryPolicy
    ? { ...s.retryPolicy, ...defined(change.retryPolicy) }
    : s.retryPolicy;
  const next: Subscription = {
    ...s,
    ...defined({
      name: change.name,
      description: change.description,
      url: change.url,
      scopeFilter: change.scopeFilter,
      thresholds: change.thresholds,
      headers: change.headers,
      metadata: change.metadata,
      disableAfterFailures: change.disableAfterFailures,
    }),
    eventTypes: types,
    eventCategories: categories,
    retryPolicy,
  };
  const fields: [ChangedField, unknown, unknown][] = [
    ['name', s.name, next.name],
    ['description', s.description, next.description],
    ['url', s.url, next.url],
    ['event_types', s.eventTypes, next.eventTypes],
    ['event_categories', s.eventCategories, next.eventCategories],
    ['scope_filter', s.scopeFilter, next.scopeFilter],
    ['thresholds', s.thresholds, next.thresholds],
    ['headers', s.headers, next.headers],
    ['retry_policy', s.retryPolicy, next.retryPolicy],
    ['disable_after_failures', s.disableAfterFailures, next.disableAfterFailures],
    ['metadata', s.metadata, next.metadata],
  ];
  const changed = fields.filter(([, a, b]) => !same(a, b)).map(([f]) => f);
  if (change.rotatesSecret) changed.push('signing_secret');
  const status = change.status ?? s.status;
  const reenabled = change.status === 'ACTIVE' && s.status === 'DISABLED';
  if (changed.length === 0 && status === s.status) return { after: s, changed };
  return {
    after: { ...next, status, ...(reenabled && { consecutiveFailures: 0 }), updatedAt: at },
    changed,
  };
}

/**
 * The lifecycle event a change means (updateWebhookSubscription's EVENTS rule): a status change
 * names it, else `webhook.updated`.
 */
export function changeEventType(before: Subscription, after: Subscription): EventType {
  if (before.status !== after.status) {
    return after.status === 'PAUSED' ? 'webhook.paused' : 'webhook.resumed';
  }
  return 'webhook.updated';
}

/** Pause and resume (the bulk action and the console's buttons), as a change of status. */
export function statusChange(
  s: Subscription,
  target: 'ACTIVE' | 'PAUSED',
): 'applies' | 'already' | 'refused' {
  if (s.status === target) return 'already';
  // RESUME of a DISABLED one is an operator's re-enable by PATCH, never a bulk side effect.
  if (target === 'ACTIVE' && s.status === 'DISABLED') return 'refused';
  if (target === 'PAUSED' && s.status === 'DISABLED') return 'already';
  return 'applies';
}

/**
 * Whether a glob of the reference's `scope_filter` ("tenant:acme/*") matches a scope: `*`
 * matches anything (slashes included), the rest literally.
 */
export function scopeMatches(filter: string, scope: string | undefined): boolean {
  if (scope === undefined) return false;
  const pattern = filter
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(scope);
}

/** `budget_utilization` of a subscription's thresholds, when it set one. */
function utilizationFilter(s: Subscription): readonly number[] | undefined {
  const value = s.thresholds?.budget_utilization;
  return Array.isArray(value) && value.every((v) => typeof v === 'number') ? value : undefined;
}

/**
 * Whether an event is delivered to a subscription: ACTIVE; the owner's own events (the
 * operator's see every tenant's); a concrete tenant's only tenant-accessible ones (INVARIANT 2,
 * checked again at dispatch); by type or category (additive); within the scope filter; and, for
 * threshold crossings, at a threshold the subscription asked for.
 */
export function deliverable(s: Subscription, e: EventDocument): boolean {
  if (s.status !== 'ACTIVE') return false;
  return selects(s, e);
}

/** `deliverable` whatever the status: what a replay selects. */
export function selects(s: Subscription, e: EventDocument): boolean {
  if (isTenantOwned(s.tenant)) {
    if (e.tenant_id !== s.tenant || !isTenantCategory(e.category)) return false;
  }
  if (!s.eventTypes.includes(e.event_type) && !s.eventCategories.includes(e.category)) return false;
  if (s.scopeFilter !== undefined && !scopeMatches(s.scopeFilter, e.scope)) return false;
  const thresholds = utilizationFilter(s);
  if (e.event_type === 'budget.threshold_crossed' && thresholds) {
    const crossed = Number(e.data?.threshold);
    return thresholds.some((t) => Math.abs(t - crossed) < 1e-9);
  }
  return true;
}

/**
 * The wait before retry `n` (1, 2, …) under a policy: initial × multiplier^(n−1), at most the
 * policy's maximum (the reference's backoff, without jitter: what the operator configured).
 */
export const retryDelayMs = (p: RetryPolicy, n: number): number =>
  Math.round(Math.min(p.maxDelayMs, p.initialDelayMs * p.backoffMultiplier ** (n - 1)));

/**
 * After a delivery gave up (its retries exhausted): the subscription's run of failures, and
 * whether it is now DISABLED (the run reached `disable_after_failures`).
 */
export function afterFailure(s: Subscription): { failures: number; disables: boolean } {
  const failures = s.consecutiveFailures + 1;
  return { failures, disables: s.status !== 'DISABLED' && failures >= s.disableAfterFailures };
}

/** The owner check of the tenant routes: another tenant's subscription is not found. */
export function requireOwned(s: Subscription | undefined, tenant: string | undefined, id: string) {
  if (!s || (tenant !== undefined && s.tenant !== tenant)) {
    throw new DomainError('NOT_FOUND', `webhook subscription ${id} does not exist`, {
      subscription_id: id,
    });
  }
  return s;
}
