import type { EventCategory, EventType } from '../../domain/events.js';
import type { WebhookSecurity } from '../../domain/webhook-security.js';
import type { RetryPolicy, Subscription, SubscriptionStatus } from '../../domain/webhooks.js';
import type { Item } from '../expressions.js';
import { directory, keys } from '../keys.js';

// The webhook family: one item per subscription (listed on the `directory` index by owner),
// its signing secret and custom headers sealed (outbound/sealing.ts: KMS in AWS, AES-GCM
// locally) so only the delivery function ever reads them; and the operator's security settings.

/** Written on every subscription item from this version on. */
export const WEBHOOK_VERSION = 1;

export const isSubscriptionItem = (item: Item | undefined): item is Item =>
  item?.type === 'webhook';

/** What the table keeps sealed: the secret always, the custom headers (as JSON) when set. */
export interface SealedSecrets {
  readonly secret: string;
  readonly headers?: string | undefined;
}

/** Header values are write-only: a read shows their names with this in place of the value. */
export const MASKED = '********';

const policyAttributes = (p: RetryPolicy) => ({
  max_retries: p.maxRetries,
  initial_delay_ms: p.initialDelayMs,
  backoff_multiplier: p.backoffMultiplier,
  max_delay_ms: p.maxDelayMs,
});

/** The subscription's own attributes: what a change rewrites (never its secret or delivery state). */
export const subscriptionSettings = (s: Subscription): Item => ({
  name: s.name,
  description: s.description,
  url: s.url,
  event_types: [...s.eventTypes],
  event_categories: [...s.eventCategories],
  scope_filter: s.scopeFilter,
  thresholds: s.thresholds,
  header_names: s.headers ? Object.keys(s.headers) : undefined,
  retry_policy: policyAttributes(s.retryPolicy),
  disable_after_failures: s.disableAfterFailures,
  metadata: s.metadata,
  status: s.status,
  consecutive_failures: s.consecutiveFailures,
  updated_at: s.updatedAt,
});

export const subscriptionItem = (s: Subscription, sealed: SealedSecrets): Item => ({
  ...keys.webhook(s.subscriptionId),
  type: 'webhook',
  v: WEBHOOK_VERSION,
  subscription_id: s.subscriptionId,
  tenant: s.tenant,
  ...subscriptionSettings(s),
  created_at: s.createdAt,
  secret_sealed: sealed.secret,
  ...(sealed.headers !== undefined && { headers_sealed: sealed.headers }),
  // Bumped by every change of its settings: a PATCH is conditioned on the one it read.
  rev: 1,
  dir_pk: directory.webhooks.pk,
  dir_sk: directory.webhooks.sk(s.tenant, s.subscriptionId),
});

const optional = (v: unknown): string | undefined => (v === undefined ? undefined : String(v));

/** A subscription as stored; header values masked (they stay sealed). */
export function subscriptionOf(item: Item): Subscription {
  const policy = (item.retry_policy ?? {}) as Record<string, number>;
  const headerNames = (item.header_names ?? []) as string[];
  return {
    subscriptionId: String(item.subscription_id),
    tenant: String(item.tenant),
    name: optional(item.name),
    description: optional(item.description),
    url: String(item.url),
    eventTypes: (item.event_types ?? []) as EventType[],
    eventCategories: (item.event_categories ?? []) as EventCategory[],
    scopeFilter: optional(item.scope_filter),
    thresholds: item.thresholds as Subscription['thresholds'],
    headers:
      headerNames.length > 0 ? Object.fromEntries(headerNames.map((n) => [n, MASKED])) : undefined,
    retryPolicy: {
      maxRetries: Number(policy.max_retries),
      initialDelayMs: Number(policy.initial_delay_ms),
      backoffMultiplier: Number(policy.backoff_multiplier),
      maxDelayMs: Number(policy.max_delay_ms),
    },
    disableAfterFailures: Number(item.disable_after_failures),
    metadata: item.metadata as Subscription['metadata'],
    status: String(item.status) as SubscriptionStatus,
    consecutiveFailures: Number(item.consecutive_failures ?? 0),
    createdAt: String(item.created_at),
    updatedAt: optional(item.updated_at),
    lastTriggeredAt: optional(item.last_triggered_at),
    lastSuccessAt: optional(item.last_success_at),
    lastFailureAt: optional(item.last_failure_at),
  };
}

export const revisionOf = (item: Item): number => Number(item.rev ?? 0);

export const sealedSecretsOf = (item: Item): SealedSecrets => ({
  secret: String(item.secret_sealed),
  headers: optional(item.headers_sealed),
});

export const webhookSecurityItem = (c: WebhookSecurity): Item => ({
  ...keys.webhookSecurity(),
  type: 'webhook-security',
  v: 1,
  blocked_cidr_ranges: [...c.blockedCidrRanges],
  allowed_url_patterns: [...c.allowedUrlPatterns],
  allow_http: c.allowHttp,
});

export const webhookSecurityOf = (item: Item): WebhookSecurity => ({
  blockedCidrRanges: (item.blocked_cidr_ranges ?? []) as string[],
  allowedUrlPatterns: (item.allowed_url_patterns ?? []) as string[],
  allowHttp: item.allow_http === true,
});
