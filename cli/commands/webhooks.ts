import {
  DELIVERY_STATUSES,
  type DeliveryStatus,
  EVENT_CATEGORIES,
  EVENT_TYPES,
  type EventCategory,
  type EventType,
  newIdempotencyKey,
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
  unwrap,
  type WebhookCreateRequest,
  type WebhookSubscription,
  type WebhookUpdateRequest,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import type { Context } from '../context.js';
import { CliError } from '../exit-codes.js';
import { morePages, record, table } from '../output.js';
import { defineCommand, integer, list, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';

// Webhook subscriptions. Each command takes the admin key (`/v1/admin/webhooks…`, any tenant's
// or the operator's own) or, with `--as tenant` or only a tenant key configured, the tenant's
// own routes (`/v1/webhooks…`, its subscriptions only).

const subscriptionRecord = (s: WebhookSubscription): string[] =>
  record([
    ['subscription id', s.subscription_id],
    ['tenant', s.tenant_id],
    ['name', s.name],
    ['url', s.url],
    ['event types', s.event_types],
    ['categories', s.event_categories],
    ['scope filter', s.scope_filter],
    ['status', s.status],
    ['failures in a row', `${s.consecutive_failures} (disabled at ${s.disable_after_failures})`],
    [
      'retries',
      `${s.retry_policy.max_retries}, from ${s.retry_policy.initial_delay_ms} ms ×${s.retry_policy.backoff_multiplier} up to ${s.retry_policy.max_delay_ms} ms`,
    ],
    ['last success', s.last_success_at],
    ['last failure', s.last_failure_at],
    ['created', s.created_at],
  ]);

const typesOf = (value: string): EventType[] => {
  const given = list(value);
  const unknown = given.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new CliError(`unknown event type ${unknown.join(', ')}`);
  return given as EventType[];
};
const categoriesOf = (value: string): EventCategory[] => {
  const given = list(value);
  const unknown = given.filter((c) => !(EVENT_CATEGORIES as readonly string[]).includes(c));
  if (unknown.length > 0) {
    throw new CliError(
      `unknown category ${unknown.join(', ')}; one of ${EVENT_CATEGORIES.join(', ')}`,
    );
  }
  return given as EventCategory[];
};

const idArgument = [{ name: 'subscription-id', description: 'its id (webhooks list shows it)' }];
const path = (id: string | undefined) => ({ params: { path: { subscription_id: id as string } } });

export const listWebhooks = defineCommand<
  PageOptions & { tenant?: string; status?: SubscriptionStatus; type?: EventType; search?: string }
>({
  name: 'webhooks list',
  summary: 'List webhook subscriptions: where events go, and how delivery is faring',
  options: [
    {
      flags: '--tenant <tenant>',
      description: 'only this tenant’s (`__system__`: the operator’s)',
    },
    { flags: '--status <status>', description: 'only these', choices: SUBSCRIPTION_STATUSES },
    { flags: '--type <type>', description: 'only those selecting this event type (admin key)' },
    { flags: '--search <text>', description: 'id or URL contains this (admin key)' },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} webhooks list --tenant acme`,
    `${CLI_NAME} webhooks list --status DISABLED`,
  ],
  operations: ['admin:listWebhookSubscriptions', 'admin:listTenantWebhooks'],
  async run(ctx, _args, o) {
    const api = ctx.admin('either');
    const page = await listing(o, 'subscriptions', (q) =>
      ctx.asTenant()
        ? unwrap(api.GET('/v1/webhooks', { params: { query: { ...q, status: o.status } } }))
        : unwrap(
            api.GET('/v1/admin/webhooks', {
              params: {
                query: {
                  ...q,
                  tenant_id: o.tenant,
                  status: o.status,
                  event_type: o.type,
                  search: o.search,
                },
              },
            }),
          ),
    );
    return {
      json: page,
      human: [
        ...table(page.subscriptions, [
          ['ID', (s) => s.subscription_id],
          ['TENANT', (s) => s.tenant_id],
          ['STATUS', (s) => s.status],
          ['FAILURES', (s) => s.consecutive_failures],
          ['URL', (s) => s.url],
          [
            'SELECTS',
            (s) => [...s.event_types, ...(s.event_categories ?? []).map((c) => `${c}.*`)].join(','),
          ],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getWebhook = defineCommand({
  name: 'webhooks get',
  summary: 'Show a webhook subscription (never its secret)',
  arguments: idArgument,
  examples: [`${CLI_NAME} webhooks get whsub_0123456789abcdef01234567`],
  operations: ['admin:getWebhookSubscription', 'admin:getTenantWebhook'],
  async run(ctx, [id]) {
    const api = ctx.admin('either');
    const s = await unwrap(
      ctx.asTenant()
        ? api.GET('/v1/webhooks/{subscription_id}', path(id))
        : api.GET('/v1/admin/webhooks/{subscription_id}', path(id)),
    );
    return { json: s, human: subscriptionRecord(s) };
  },
});

interface SettingsOptions {
  name?: string;
  types?: EventType[];
  categories?: EventCategory[];
  scopeFilter?: string;
  maxRetries?: number;
  initialDelayMs?: number;
  disableAfter?: number;
}
const SETTINGS_OPTIONS = [
  { flags: '--name <name>', description: 'what it is for' },
  {
    flags: '--types <list>',
    description: 'event types it receives, comma-separated',
    parse: typesOf,
  },
  {
    flags: '--categories <list>',
    description: `every event of these categories (${EVENT_CATEGORIES.join(', ')})`,
    parse: categoriesOf,
  },
  { flags: '--scope-filter <glob>', description: 'only events of matching scopes (tenant:acme/*)' },
  {
    flags: '--max-retries <n>',
    description: 'retries after a failed attempt (0-10)',
    parse: integer(0),
  },
  {
    flags: '--initial-delay-ms <ms>',
    description: 'first retry delay, doubled each time',
    parse: integer(100),
  },
  {
    flags: '--disable-after <n>',
    description: 'failed deliveries in a row before it is disabled',
    parse: integer(1),
  },
] as const;

const settingsOf = (o: SettingsOptions) => ({
  ...(o.name !== undefined && { name: o.name }),
  ...(o.categories && { event_categories: o.categories }),
  ...(o.scopeFilter !== undefined && { scope_filter: o.scopeFilter }),
  ...((o.maxRetries !== undefined || o.initialDelayMs !== undefined) && {
    retry_policy: {
      ...(o.maxRetries !== undefined && { max_retries: o.maxRetries }),
      ...(o.initialDelayMs !== undefined && { initial_delay_ms: o.initialDelayMs }),
    },
  }),
  ...(o.disableAfter !== undefined && { disable_after_failures: o.disableAfter }),
});

export const createWebhook = defineCommand<SettingsOptions & { tenant?: string }>({
  name: 'webhooks create',
  summary: 'Subscribe a URL to events; its signing secret is printed this once',
  details:
    'With the admin key: for --tenant (budget, reservation and tenant events only), or the operator’s own without it (any event, every tenant). With a tenant key: the tenant’s own. The secret is generated; verify X-Cycles-Signature (sha256=HMAC-SHA256 of the raw body) with it.',
  arguments: [{ name: 'url', description: 'https (http and local addresses: only where allowed)' }],
  options: [
    { flags: '--tenant <tenant>', description: 'the tenant it belongs to (admin key)' },
    ...SETTINGS_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} webhooks create https://hooks.example.com/budgets --tenant acme --types budget.threshold_crossed,budget.exhausted`,
    `${CLI_NAME} webhooks create https://ops.example.com/cycles --categories api_key,webhook --field signing_secret`,
  ],
  operations: ['admin:createWebhookSubscription', 'admin:createTenantWebhook'],
  async run(ctx, [url], o) {
    if (!o.types?.length && !o.categories?.length) {
      throw new CliError('give --types (and/or --categories): what it receives');
    }
    const body: WebhookCreateRequest = {
      url: url as string,
      event_types: o.types?.length ? o.types : [],
      ...settingsOf(o),
    };
    const api = ctx.admin('either');
    const created = await unwrap(
      ctx.asTenant()
        ? api.POST('/v1/webhooks', { body })
        : api.POST('/v1/admin/webhooks', {
            params: { query: { tenant_id: o.tenant } },
            body,
          }),
    );
    return {
      json: created,
      human: [
        `Subscription ${created.subscription.subscription_id} created for ${created.subscription.tenant_id}.`,
        '',
        'Signing secret (shown this once; store it now):',
        created.signing_secret,
      ],
    };
  },
});

/** A PATCH on either plane. */
function patch(ctx: Context, id: string | undefined, body: WebhookUpdateRequest) {
  const api = ctx.admin('either');
  return unwrap(
    ctx.asTenant()
      ? api.PATCH('/v1/webhooks/{subscription_id}', { ...path(id), body })
      : api.PATCH('/v1/admin/webhooks/{subscription_id}', { ...path(id), body }),
  );
}

export const updateWebhook = defineCommand<
  SettingsOptions & { url?: string; rotateSecret?: string }
>({
  name: 'webhooks update',
  summary: 'Change a subscription: its URL, what it receives, its retries',
  arguments: idArgument,
  options: [{ flags: '--url <url>', description: 'a new URL' }, ...SETTINGS_OPTIONS],
  examples: [`${CLI_NAME} webhooks update whsub_0123456789abcdef01234567 --types budget.exhausted`],
  operations: ['admin:updateWebhookSubscription', 'admin:updateTenantWebhook'],
  async run(ctx, [id], o) {
    const s = await patch(ctx, id, {
      ...(o.url !== undefined && { url: o.url }),
      ...(o.types !== undefined && { event_types: o.types }),
      ...settingsOf(o),
    });
    return { json: s, human: subscriptionRecord(s) };
  },
});

const statusCommand = (verb: 'pause' | 'resume', status: 'PAUSED' | 'ACTIVE') =>
  defineCommand({
    name: `webhooks ${verb}`,
    summary:
      verb === 'pause'
        ? 'Pause a subscription: events meanwhile are not delivered (nor kept for it)'
        : 'Resume a paused subscription, or re-enable a disabled one (its failures cleared)',
    arguments: idArgument,
    examples: [`${CLI_NAME} webhooks ${verb} whsub_0123456789abcdef01234567`],
    operations: ['admin:updateWebhookSubscription', 'admin:updateTenantWebhook'],
    async run(ctx, [id]) {
      const s = await patch(ctx, id, { status });
      return { json: s, human: [`Subscription ${s.subscription_id} is ${s.status}.`] };
    },
  });
export const pauseWebhook = statusCommand('pause', 'PAUSED');
export const resumeWebhook = statusCommand('resume', 'ACTIVE');

export const deleteWebhook = defineCommand<{ yes?: boolean }>({
  name: 'webhooks delete',
  summary: 'Delete a subscription (its queued deliveries are dropped)',
  arguments: idArgument,
  options: [{ flags: '--yes', description: 'yes: it cannot be undone' }],
  examples: [`${CLI_NAME} webhooks delete whsub_0123456789abcdef01234567 --yes`],
  operations: ['admin:deleteWebhookSubscription', 'admin:deleteTenantWebhook'],
  async run(ctx, [id], o) {
    if (!o.yes) throw new CliError('deleting cannot be undone: add --yes');
    const api = ctx.admin('either');
    await unwrap(
      ctx.asTenant()
        ? api.DELETE('/v1/webhooks/{subscription_id}', path(id))
        : api.DELETE('/v1/admin/webhooks/{subscription_id}', path(id)),
    );
    return { json: { deleted: id }, human: [`Subscription ${id} deleted.`] };
  },
});

export const testWebhook = defineCommand({
  name: 'webhooks test',
  summary: 'Send a system.webhook_test event to the subscription’s URL now, and show the answer',
  arguments: idArgument,
  examples: [`${CLI_NAME} webhooks test whsub_0123456789abcdef01234567`],
  operations: ['admin:testWebhookSubscription', 'admin:testTenantWebhook'],
  async run(ctx, [id]) {
    const api = ctx.admin('either');
    const r = await unwrap(
      ctx.asTenant()
        ? api.POST('/v1/webhooks/{subscription_id}/test', path(id))
        : api.POST('/v1/admin/webhooks/{subscription_id}/test', path(id)),
    );
    return {
      json: r,
      human: [
        r.success
          ? `Delivered: ${r.response_status} in ${r.response_time_ms} ms.`
          : `Not delivered: ${r.error_message ?? 'no answer'}${r.response_status ? ` (${r.response_status})` : ''}.`,
      ],
    };
  },
});

export const listDeliveries = defineCommand<
  PageOptions & { status?: DeliveryStatus; from?: string; to?: string }
>({
  name: 'webhooks deliveries',
  summary: 'A subscription’s deliveries, newest first: status, attempts, last answer',
  arguments: idArgument,
  options: [
    { flags: '--status <status>', description: 'only these', choices: DELIVERY_STATUSES },
    { flags: '--from <time>', description: 'queued from this time (ISO 8601)' },
    { flags: '--to <time>', description: 'queued up to this time (ISO 8601)' },
    ...PAGE_OPTIONS,
  ],
  examples: [`${CLI_NAME} webhooks deliveries whsub_0123456789abcdef01234567 --status FAILED`],
  operations: ['admin:listWebhookDeliveries', 'admin:listTenantWebhookDeliveries'],
  async run(ctx, [id], o) {
    const api = ctx.admin('either');
    const params = (q: { cursor?: string; limit?: number }) => ({
      params: {
        path: { subscription_id: id as string },
        query: { ...q, status: o.status, from: o.from, to: o.to },
      },
    });
    const page = await listing(o, 'deliveries', (q) =>
      unwrap(
        ctx.asTenant()
          ? api.GET('/v1/webhooks/{subscription_id}/deliveries', params(q))
          : api.GET('/v1/admin/webhooks/{subscription_id}/deliveries', params(q)),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.deliveries, [
          ['ATTEMPTED', (d) => d.attempted_at],
          ['STATUS', (d) => d.status],
          ['ATTEMPTS', (d) => d.attempts],
          ['ANSWER', (d) => d.response_status ?? ''],
          ['MS', (d) => d.response_time_ms ?? ''],
          ['EVENT', (d) => `${d.event_type} ${d.event_id}`],
          ['ERROR', (d) => d.error_message ?? ''],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const replayWebhook = defineCommand<{
  from?: string;
  to?: string;
  types?: EventType[];
  maxEvents?: number;
}>({
  name: 'webhooks replay',
  summary: 'Deliver every selected event of a window again (all of them, or none: narrow it)',
  arguments: idArgument,
  options: [
    { flags: '--from <time>', description: 'window start (ISO 8601; default: as far as kept)' },
    { flags: '--to <time>', description: 'window end (ISO 8601; default: now)' },
    { flags: '--types <list>', description: 'only these event types', parse: typesOf },
    {
      flags: '--max-events <n>',
      description: 'refuse a window with more (1-1000, default 100)',
      parse: integer(1),
    },
  ],
  examples: [
    `${CLI_NAME} webhooks replay whsub_0123456789abcdef01234567 --from 2026-12-01T00:00:00Z --max-events 500`,
  ],
  operations: ['admin:replayEvents', 'admin:replayTenantWebhook'],
  async run(ctx, [id], o) {
    const api = ctx.admin('either');
    const request = {
      ...path(id),
      body: {
        ...(o.from && { from: o.from }),
        ...(o.to && { to: o.to }),
        ...(o.types && { event_types: o.types }),
        ...(o.maxEvents !== undefined && { max_events: o.maxEvents }),
      },
    };
    const r = await unwrap(
      ctx.asTenant()
        ? api.POST('/v1/webhooks/{subscription_id}/replay', request)
        : api.POST('/v1/admin/webhooks/{subscription_id}/replay', request),
    );
    return { json: r, human: [`Replay ${r.replay_id}: ${r.events_queued} events queued.`] };
  },
});

export const bulkWebhooks = defineCommand<{
  tenant?: string;
  status?: SubscriptionStatus;
  search?: string;
  expectedCount?: number;
  idempotencyKey?: string;
}>({
  name: 'webhooks bulk',
  summary: 'PAUSE, RESUME or DELETE every subscription a filter matches (at most 500)',
  arguments: [{ name: 'action', description: 'PAUSE, RESUME or DELETE' }],
  options: [
    { flags: '--tenant <tenant>', description: 'this tenant’s' },
    { flags: '--status <status>', description: 'in this status', choices: SUBSCRIPTION_STATUSES },
    { flags: '--search <text>', description: 'id or URL contains this' },
    {
      flags: '--expected-count <n>',
      description: 'refuse (nothing done) unless this many match',
      parse: integer(0),
    },
    { flags: '--idempotency-key <key>', description: 'the key that makes a retry answer the same' },
  ],
  examples: [`${CLI_NAME} webhooks bulk PAUSE --tenant acme --expected-count 3`],
  operations: ['admin:bulkActionWebhooks'],
  async run(ctx, [action], o) {
    const act = String(action).toUpperCase();
    if (act !== 'PAUSE' && act !== 'RESUME' && act !== 'DELETE') {
      throw new CliError('the action is PAUSE, RESUME or DELETE');
    }
    const r = await unwrap(
      ctx.admin().POST('/v1/admin/webhooks/bulk-action', {
        body: {
          action: act,
          filter: {
            ...(o.tenant && { tenant_id: o.tenant }),
            ...(o.status && { status: o.status }),
            ...(o.search && { search: o.search }),
          },
          ...(o.expectedCount !== undefined && { expected_count: o.expectedCount }),
          idempotency_key: o.idempotencyKey ?? newIdempotencyKey('cli-webhooks'),
        },
      }),
    );
    return {
      json: r,
      human: [
        `${r.action}: ${r.total_matched} matched, ${r.succeeded.length} done, ${r.skipped.length} skipped, ${r.failed.length} failed.`,
        ...r.failed.map((f) => `  ${f.id}: ${f.error_code} ${f.message ?? ''}`),
      ],
    };
  },
});

export const webhookSecurity = defineCommand<{
  blockedRanges?: string[];
  allowedUrls?: string[];
  allowHttp?: boolean;
  set?: boolean;
}>({
  name: 'webhooks security',
  summary: 'Where webhooks may point: blocked address ranges, URL patterns, http',
  details:
    'Without --set, shows it. With --set, replaces it whole: what is not given is empty (or http off).',
  options: [
    { flags: '--set', description: 'replace it with the options given' },
    { flags: '--blocked-ranges <list>', description: 'CIDR ranges, comma-separated', parse: list },
    { flags: '--allowed-urls <list>', description: 'URL globs; none: any', parse: list },
    { flags: '--allow-http', description: 'allow http (development only)' },
  ],
  examples: [
    `${CLI_NAME} webhooks security`,
    `${CLI_NAME} webhooks security --set --blocked-ranges 10.0.0.0/8,169.254.0.0/16`,
  ],
  operations: ['admin:getWebhookSecurityConfig', 'admin:updateWebhookSecurityConfig'],
  async run(ctx, _args, o) {
    const api = ctx.admin();
    const c = await unwrap(
      o.set
        ? api.PUT('/v1/admin/config/webhook-security', {
            body: {
              blocked_cidr_ranges: o.blockedRanges ?? [],
              allowed_url_patterns: o.allowedUrls ?? [],
              allow_http: o.allowHttp ?? false,
            },
          })
        : api.GET('/v1/admin/config/webhook-security'),
    );
    return {
      json: c,
      human: record([
        ['blocked ranges', c.blocked_cidr_ranges],
        ['allowed URLs', c.allowed_url_patterns.length > 0 ? c.allowed_url_patterns : 'any'],
        ['http', c.allow_http ? 'allowed' : 'refused'],
      ]),
    };
  },
});
