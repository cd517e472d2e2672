import * as z from 'zod/mini';
import { DELIVERY_STATUSES } from '../../domain/deliveries.js';
import { EVENT_CATEGORIES, EVENT_TYPES } from '../../domain/events.js';
import { SUBSCRIPTION_STATUSES } from '../../domain/webhooks.js';
import type { BulkRequest, ReplayRequest } from '../../use-cases/webhook-bulk.js';
import type { CreateRequest, UpdateRequest } from '../../use-cases/webhooks.js';
import { Cursor, camel } from './common.js';

/**
 * Requests of the events and webhooks operations (cycles-governance-admin v0.1.25's
 * WebhookCreateRequest, WebhookUpdateRequest, WebhookSecurityConfig, WebhookBulkActionRequest,
 * the replay body and the listings' parameters), in zod/mini. Bodies are closed, as the
 * reference's are (`additionalProperties: false`): a field we do not know is a 400 naming it.
 */

const text = (max: number) =>
  z
    .string()
    .check(z.minLength(1, 'must not be empty'), z.maxLength(max, `at most ${max} characters`));
const Instant = z.pipe(
  z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with its offset' }),
  z.transform((t: string) => Date.parse(t)),
);
/**
 * A page of at most 100; more is served as 100, as the reference server does (its dashboard's
 * overview asks for 200 webhooks), rather than refused.
 */
const Limit = z._default(
  z.pipe(
    z.coerce
      .number()
      .check(z.int(), z.minimum(1, 'at least 1'))
      .register(z.globalRegistry, { maximum: 100, description: 'More is served as 100.' }),
    z.transform((n: number) => Math.min(n, 100)),
  ),
  50,
);
const Id = z
  .string()
  .check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9_.-]+$/, 'not an id'));
const EventType = z.enum(EVENT_TYPES);
const EventCategory = z.enum(EVENT_CATEGORIES);
const Status = z.enum(SUBSCRIPTION_STATUSES);
const TenantRef = z
  .string()
  .check(
    z.minLength(1),
    z.maxLength(64),
    z.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, "may hold only letters, digits, '_', '.' and '-'"),
  );
/** Empty means absent (the reference); longer than 128 is refused. */
const Search = z.optional(
  z.pipe(
    z.string().check(z.maxLength(128, 'at most 128 characters')),
    z.transform((s: string) => (s.trim() === '' ? undefined : s.trim())),
  ),
);

/** The reference's WebhookRetryPolicy: each field within its bounds, absent ones defaulted. */
const RetryPolicyBody = z.strictObject({
  max_retries: z.optional(z.int().check(z.minimum(0), z.maximum(10))),
  initial_delay_ms: z.optional(z.int().check(z.minimum(100), z.maximum(60_000))),
  backoff_multiplier: z.optional(z.number().check(z.minimum(1), z.maximum(10))),
  max_delay_ms: z.optional(z.int().check(z.minimum(1_000), z.maximum(3_600_000))),
});
const retryPolicy = (p: z.infer<typeof RetryPolicyBody> | undefined) =>
  p && {
    maxRetries: p.max_retries,
    initialDelayMs: p.initial_delay_ms,
    backoffMultiplier: p.backoff_multiplier,
    maxDelayMs: p.max_delay_ms,
  };

const Ratio = z.number().check(z.minimum(0), z.maximum(1));
/** The reference's WebhookThresholdConfig, kept as given. */
const ThresholdsBody = z.strictObject({
  budget_utilization: z.optional(z.array(Ratio).check(z.maxLength(20))),
  burn_rate_multiplier: z.optional(z.number().check(z.minimum(1.5))),
  burn_rate_window_seconds: z.optional(z.int().check(z.minimum(60), z.maximum(86_400))),
  denial_rate_threshold: z.optional(Ratio),
  expiry_rate_threshold: z.optional(Ratio),
  auth_failure_rate_threshold: z.optional(Ratio),
  rate_window_seconds: z.optional(z.int().check(z.minimum(60), z.maximum(86_400))),
});

const Headers = z.record(
  z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(256),
      z.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'not a header name'),
    ),
  z.string().check(z.maxLength(4096), z.regex(/^[^\r\n]*$/, 'a header value holds no line break')),
);
const Metadata = z.record(z.string(), z.unknown());
const Url = z.string().check(z.minLength(1), z.maxLength(2048, 'at most 2048 characters'));
const Secret = z.string().check(z.minLength(16, 'at least 16 characters'), z.maxLength(512));

const settings = {
  name: z.optional(z.string().check(z.maxLength(256))),
  description: z.optional(z.string().check(z.maxLength(1024))),
  url: Url,
  event_categories: z.optional(z.array(EventCategory).check(z.maxLength(EVENT_CATEGORIES.length))),
  scope_filter: z.optional(text(512)),
  thresholds: z.optional(ThresholdsBody),
  signing_secret: z.optional(Secret),
  headers: z.optional(Headers),
  retry_policy: z.optional(RetryPolicyBody),
  disable_after_failures: z.optional(z.int().check(z.minimum(1), z.maximum(1_000))),
  metadata: z.optional(Metadata),
};

type SettingsBody = {
  readonly [K in keyof typeof settings]?: z.output<(typeof settings)[K]>;
};
const common = (b: SettingsBody) => ({
  name: b.name,
  description: b.description,
  eventCategories: b.event_categories,
  scopeFilter: b.scope_filter,
  thresholds: b.thresholds,
  headers: b.headers,
  retryPolicy: retryPolicy(b.retry_policy),
  disableAfterFailures: b.disable_after_failures,
  metadata: b.metadata,
  signingSecret: b.signing_secret,
});

/** WebhookCreateRequest: `url` and a non-empty `event_types` required (INVARIANT 1 on create). */
export const WebhookCreateRequest = z.pipe(
  z.strictObject({
    ...settings,
    event_types: z
      .array(EventType)
      .check(z.minLength(1, 'needs at least one event type'), z.maxLength(EVENT_TYPES.length)),
  }),
  z.transform((b): CreateRequest => ({ ...common(b), url: b.url, eventTypes: b.event_types })),
);

/** WebhookUpdateRequest: any field; `event_types` may be cleared when categories remain. */
export const WebhookUpdateRequest = z.pipe(
  z.strictObject({
    ...settings,
    url: z.optional(Url),
    event_types: z.optional(z.array(EventType).check(z.maxLength(EVENT_TYPES.length))),
    status: z.optional(z.enum(['ACTIVE', 'PAUSED'])),
  }),
  z.transform(
    (b): UpdateRequest => ({
      ...common(b),
      url: b.url,
      eventTypes: b.event_types,
      status: b.status,
    }),
  ),
);

export const SubscriptionParams = z.object({ subscription_id: Id });
export const EventParams = z.object({ event_id: Id });

/** `tenant_id`: the owner (a tenant id, or `__system__`, the operator's, when absent). */
export const CreateWebhookQuery = z.object({ tenant_id: z.optional(TenantRef) });

export const ListWebhooksQuery = z.pipe(
  z.object({
    tenant_id: z.optional(TenantRef),
    status: z.optional(Status),
    event_type: z.optional(EventType),
    search: Search,
    /** Accepted, and ignored: subscriptions are listed by owner, then id. */
    sort_by: z.optional(z.enum(['url', 'tenant_id', 'status', 'consecutive_failures'])),
    sort_dir: z.optional(z.enum(['asc', 'desc'])),
    cursor: z.optional(Cursor),
    limit: Limit,
  }),
  z.transform(({ sort_by: _b, sort_dir: _d, ...q }) => camel(q)),
);

/** The tenants' listing: `tenant` names the tenant under the admin key (required then). */
export const ListTenantWebhooksQuery = z.pipe(
  z.object({
    tenant: z.optional(TenantRef),
    status: z.optional(Status),
    cursor: z.optional(Cursor),
    limit: Limit,
  }),
  z.transform(camel),
);

export const ListDeliveriesQuery = z.pipe(
  z.object({
    status: z.optional(z.enum(DELIVERY_STATUSES)),
    from: z.optional(Instant),
    to: z.optional(Instant),
    cursor: z.optional(Cursor),
    limit: Limit,
  }),
  z.transform(camel),
);

const eventFilters = {
  event_type: z.optional(EventType),
  category: z.optional(EventCategory),
  scope: z.optional(text(4200)),
  correlation_id: z.optional(text(512)),
  from: z.optional(Instant),
  to: z.optional(Instant),
  cursor: z.optional(Cursor),
  limit: Limit,
};

export const ListEventsQuery = z.pipe(
  z.object({
    ...eventFilters,
    tenant_id: z.optional(TenantRef),
    trace_id: z.optional(z.string().check(z.regex(/^[0-9a-f]{32}$/, 'must be 32 lowercase hex'))),
    request_id: z.optional(text(256)),
    search: Search,
    /** Only `timestamp` orders (ascending or descending); the others are accepted and ignored. */
    sort_by: z.optional(z.enum(['event_type', 'category', 'scope', 'tenant_id', 'timestamp'])),
    sort_dir: z.optional(z.enum(['asc', 'desc'])),
  }),
  z.transform(({ sort_by: _b, ...q }) => camel(q)),
);

export const ListTenantEventsQuery = z.pipe(z.object(eventFilters), z.transform(camel));

/** The replay body: the reference's, max_events 1–1000 (default 100). */
export const ReplayEventsRequest = z.pipe(
  z.strictObject({
    from: z.optional(Instant),
    to: z.optional(Instant),
    event_types: z.optional(z.array(EventType).check(z.maxLength(EVENT_TYPES.length))),
    max_events: z._default(z.int().check(z.minimum(1), z.maximum(1_000)), 100),
  }),
  z.transform(
    (b): ReplayRequest => ({
      from: b.from,
      to: b.to,
      eventTypes: b.event_types,
      maxEvents: b.max_events,
    }),
  ),
);

/** WebhookSecurityConfig, as a PUT replaces it (absent lists: empty; allow_http: false). */
export const WebhookSecurityConfigRequest = z.pipe(
  z.strictObject({
    blocked_cidr_ranges: z.optional(
      z.array(z.string().check(z.maxLength(64))).check(z.maxLength(100)),
    ),
    allowed_url_patterns: z.optional(z.array(text(2048)).check(z.maxLength(100))),
    allow_http: z.optional(z.boolean()),
  }),
  z.transform((b) => ({
    blockedCidrRanges: b.blocked_cidr_ranges ?? [],
    allowedUrlPatterns: b.allowed_url_patterns ?? [],
    allowHttp: b.allow_http ?? false,
  })),
);

/** WebhookBulkActionRequest: a filter of at least one field, the action, the idempotency key. */
export const WebhookBulkActionRequest = z.pipe(
  z.strictObject({
    filter: z
      .strictObject({
        tenant_id: z.optional(TenantRef),
        status: z.optional(Status),
        event_type: z.optional(EventType),
        search: z.optional(z.string().check(z.maxLength(128))),
      })
      .check(
        z.refine((f) => Object.values(f).some((v) => v !== undefined), 'needs at least one field'),
      ),
    action: z.enum(['PAUSE', 'RESUME', 'DELETE']),
    expected_count: z.optional(z.int().check(z.minimum(0))),
    idempotency_key: z.string().check(z.minLength(1), z.maxLength(128)),
  }),
  z.transform(
    (b): BulkRequest => ({
      filter: camel(b.filter),
      action: b.action,
      expectedCount: b.expected_count,
      idempotencyKey: b.idempotency_key,
    }),
  ),
);
