import * as z from 'zod';
import { DELIVERY_STATUSES } from '../../domain/deliveries.js';
import { ACTOR_TYPES, EVENT_CATEGORIES, EVENT_TYPES } from '../../domain/events.js';
import { SUBSCRIPTION_STATUSES } from '../../domain/webhooks.js';
import { page } from './responses.js';

/**
 * Answers of the events and webhooks operations (cycles-governance-admin v0.1.25): Event,
 * WebhookSubscription, WebhookDelivery and their pages, the test, replay, bulk and security
 * answers. They feed the OpenAPI documents and the compile-time check of each handler's answer.
 */

const Timestamp = z.iso.datetime();
const TraceId = z.string().regex(/^[0-9a-f]{32}$/);
const JsonObject = z.record(z.string(), z.unknown());

/** The reference's `Event`: closed envelope, open `data` (its EventData* by type). */
export const Event = z.strictObject({
  event_id: z.string(),
  event_type: z.enum(EVENT_TYPES),
  category: z.enum(EVENT_CATEGORIES),
  timestamp: Timestamp,
  tenant_id: z.string(),
  scope: z.string().optional(),
  actor: z
    .strictObject({
      type: z.enum(ACTOR_TYPES),
      key_id: z.string().optional(),
      source_ip: z.string().optional(),
    })
    .optional(),
  source: z.string(),
  data: JsonObject.optional(),
  correlation_id: z.string().optional(),
  request_id: z.string().optional(),
  trace_id: TraceId.optional(),
  metadata: JsonObject.optional(),
});
export const EventListResponse = page('events', Event);

const Ratio = z.number().min(0).max(1);
/** The reference's WebhookThresholdConfig, as it was given. */
const ThresholdConfig = z.strictObject({
  budget_utilization: z.array(Ratio).optional(),
  burn_rate_multiplier: z.number().min(1.5).optional(),
  burn_rate_window_seconds: z.number().int().min(60).max(86_400).optional(),
  denial_rate_threshold: Ratio.optional(),
  expiry_rate_threshold: Ratio.optional(),
  auth_failure_rate_threshold: Ratio.optional(),
  rate_window_seconds: z.number().int().min(60).max(86_400).optional(),
});

const RetryPolicy = z.strictObject({
  max_retries: z.number().int().min(0).max(10),
  initial_delay_ms: z.number().int().min(100).max(60_000),
  backoff_multiplier: z.number().min(1).max(10),
  max_delay_ms: z.number().int().min(1_000).max(3_600_000),
});

/** The reference's WebhookSubscription: never its secret; header values masked. */
export const WebhookSubscription = z.strictObject({
  subscription_id: z.string(),
  tenant_id: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  url: z.string(),
  event_types: z.array(z.enum(EVENT_TYPES)),
  event_categories: z.array(z.enum(EVENT_CATEGORIES)).optional(),
  scope_filter: z.string().optional(),
  thresholds: ThresholdConfig.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  status: z.enum(SUBSCRIPTION_STATUSES),
  retry_policy: RetryPolicy,
  disable_after_failures: z.number().int().min(1),
  consecutive_failures: z.number().int().min(0),
  created_at: Timestamp,
  updated_at: Timestamp.optional(),
  last_triggered_at: Timestamp.optional(),
  last_success_at: Timestamp.optional(),
  last_failure_at: Timestamp.optional(),
  metadata: JsonObject.optional(),
});
export const WebhookListResponse = page('subscriptions', WebhookSubscription);

export const WebhookCreateResponse = z.strictObject({
  subscription: WebhookSubscription,
  signing_secret: z.string(),
});

/** The reference's WebhookDelivery: the last attempt's outcome, and how many there were. */
export const WebhookDelivery = z.strictObject({
  delivery_id: z.string(),
  subscription_id: z.string(),
  event_id: z.string(),
  event_type: z.enum(EVENT_TYPES),
  status: z.enum(DELIVERY_STATUSES),
  attempted_at: Timestamp,
  completed_at: Timestamp.optional(),
  attempts: z.number().int().min(0),
  response_status: z.number().int().optional(),
  response_time_ms: z.number().int().min(0).optional(),
  error_message: z.string().optional(),
  next_retry_at: Timestamp.optional(),
  trace_id: TraceId.optional(),
  trace_flags: z
    .string()
    .regex(/^[0-9a-f]{2}$/)
    .optional(),
  traceparent_inbound_valid: z.boolean().optional(),
});
export const WebhookDeliveryListResponse = page('deliveries', WebhookDelivery);

export const WebhookTestResponse = z.strictObject({
  success: z.boolean(),
  response_status: z.number().int().optional(),
  response_time_ms: z.number().int().min(0).optional(),
  error_message: z.string().optional(),
  event_id: z.string().optional(),
});

export const ReplayEventsResponse = z.strictObject({
  replay_id: z.string(),
  events_queued: z.number().int().min(0),
  estimated_completion_seconds: z.number().int().min(0),
});

export const WebhookSecurityConfig = z.strictObject({
  blocked_cidr_ranges: z.array(z.string()),
  allowed_url_patterns: z.array(z.string()),
  allow_http: z.boolean(),
});

const BulkActionRowOutcome = z.strictObject({
  id: z.string(),
  error_code: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
});

export const WebhookBulkActionResponse = z.strictObject({
  action: z.enum(['PAUSE', 'RESUME', 'DELETE']),
  total_matched: z.number().int().min(0),
  succeeded: z.array(BulkActionRowOutcome),
  failed: z.array(BulkActionRowOutcome),
  skipped: z.array(BulkActionRowOutcome),
  idempotency_key: z.string(),
});
