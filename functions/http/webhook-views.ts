import type { Delivery } from '../domain/deliveries.js';
import type { EventDocument } from '../domain/events.js';
import type { WebhookSecurity } from '../domain/webhook-security.js';
import type { Subscription } from '../domain/webhooks.js';
import type { ProbeResult } from '../use-cases/deliveries.js';
import type { Page } from '../use-cases/pages.js';
import type { BulkResult, ReplayAccepted, RowOutcome } from '../use-cases/webhook-bulk.js';
import type { Created } from '../use-cases/webhooks.js';
import { pageTail } from './views.js';

// The events and webhooks operations' answers, as the reference's schemas name their fields
// (http/schemas/event-responses.ts). An event is answered as the document it was stored as.

const iso = (ms: number) => new Date(ms).toISOString();

export const eventPageView = (p: Page<EventDocument>) => ({ events: [...p.items], ...pageTail(p) });

/** The reference's WebhookSubscription: no secret; header values masked, as stored. */
export const subscriptionView = (s: Subscription) => ({
  subscription_id: s.subscriptionId,
  tenant_id: s.tenant,
  ...(s.name !== undefined && { name: s.name }),
  ...(s.description !== undefined && { description: s.description }),
  url: s.url,
  event_types: [...s.eventTypes],
  event_categories: [...s.eventCategories],
  ...(s.scopeFilter !== undefined && { scope_filter: s.scopeFilter }),
  ...(s.thresholds !== undefined && { thresholds: s.thresholds }),
  ...(s.headers !== undefined && { headers: s.headers }),
  status: s.status,
  retry_policy: {
    max_retries: s.retryPolicy.maxRetries,
    initial_delay_ms: s.retryPolicy.initialDelayMs,
    backoff_multiplier: s.retryPolicy.backoffMultiplier,
    max_delay_ms: s.retryPolicy.maxDelayMs,
  },
  disable_after_failures: s.disableAfterFailures,
  consecutive_failures: s.consecutiveFailures,
  created_at: s.createdAt,
  ...(s.updatedAt !== undefined && { updated_at: s.updatedAt }),
  ...(s.lastTriggeredAt !== undefined && { last_triggered_at: s.lastTriggeredAt }),
  ...(s.lastSuccessAt !== undefined && { last_success_at: s.lastSuccessAt }),
  ...(s.lastFailureAt !== undefined && { last_failure_at: s.lastFailureAt }),
  ...(s.metadata !== undefined && { metadata: s.metadata }),
});

export const createdSubscriptionView = (c: Created) => ({
  subscription: subscriptionView(c.subscription),
  signing_secret: c.signingSecret,
});

export const subscriptionPageView = (p: Page<Subscription>) => ({
  subscriptions: p.items.map(subscriptionView),
  ...pageTail(p),
});

/** The reference's WebhookDelivery: the last attempt, and how many there were. */
export const deliveryView = (d: Delivery) => ({
  delivery_id: d.deliveryId,
  subscription_id: d.subscriptionId,
  event_id: d.eventId,
  event_type: d.eventType,
  status: d.status,
  attempted_at: iso(d.attemptedAtMs),
  ...(d.completedAtMs !== undefined && { completed_at: iso(d.completedAtMs) }),
  attempts: d.attempts,
  ...(d.responseStatus !== undefined && { response_status: d.responseStatus }),
  ...(d.responseTimeMs !== undefined && { response_time_ms: d.responseTimeMs }),
  ...(d.errorMessage !== undefined && { error_message: d.errorMessage }),
  ...(d.nextRetryAtMs !== undefined && { next_retry_at: iso(d.nextRetryAtMs) }),
  ...(d.traceId !== undefined && { trace_id: d.traceId }),
  ...(d.traceFlags !== undefined && { trace_flags: d.traceFlags }),
  ...(d.traceparentInboundValid !== undefined && {
    traceparent_inbound_valid: d.traceparentInboundValid,
  }),
});

export const deliveryPageView = (p: Page<Delivery>) => ({
  deliveries: p.items.map(deliveryView),
  ...pageTail(p),
});

export const probeView = (r: ProbeResult) => ({
  success: r.success,
  ...(r.responseStatus !== undefined && { response_status: r.responseStatus }),
  response_time_ms: r.responseTimeMs,
  ...(r.errorMessage !== undefined && { error_message: r.errorMessage }),
  event_id: r.eventId,
});

export const replayView = (r: ReplayAccepted) => ({
  replay_id: r.replayId,
  events_queued: r.eventsQueued,
  estimated_completion_seconds: r.estimatedCompletionSeconds,
});

export const securityView = (c: WebhookSecurity) => ({
  blocked_cidr_ranges: [...c.blockedCidrRanges],
  allowed_url_patterns: [...c.allowedUrlPatterns],
  allow_http: c.allowHttp,
});

const rowView = (r: RowOutcome) => ({
  id: r.id,
  ...(r.errorCode !== undefined && { error_code: r.errorCode }),
  ...(r.message !== undefined && { message: r.message }),
  ...(r.reason !== undefined && { reason: r.reason }),
});

export const bulkView = (r: BulkResult) => ({
  action: r.action,
  total_matched: r.totalMatched,
  succeeded: r.succeeded.map(rowView),
  failed: r.failed.map(rowView),
  skipped: r.skipped.map(rowView),
  idempotency_key: r.idempotencyKey,
});
