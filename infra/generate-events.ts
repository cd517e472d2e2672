import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { derivedId } from '../functions/domain/fingerprint.js';
import { type Route, type RouteId, routeEntries } from '../functions/routes.js';

/**
 * `npm run events`: one API Gateway HTTP API (payload 2.0) event per route in events/<routeId>.json,
 * plus the sweeper's EventBridge event, for `sam local invoke -e` and the handler fixture test.
 * Output is deterministic, so test/unit/events.test.ts can tell when events/ is stale.
 *
 * The values are one coherent walkthrough (README § bootstrap): the admin key `change-me`
 * creates tenant `acme` and its API key; that key funds and spends. Only the key secret cannot be
 * known in advance: replace SAMPLE.apiKeySecret with the one createApiKey returned.
 */
export const SAMPLE = {
  adminApiKey: 'change-me',
  tenant: 'acme',
  apiKeySecret: 'cyc_live_REPLACE_WITH_KEY_SECRET_FROM_CREATE_API_KEY',
  reserveKey: 'run-1-step-1',
  /** A second reservation, so that release has one that commit did not finalize. */
  releaseKey: 'run-1-step-2',
  /** A third, an orchestrator's: the delegation's parent (commit waits for its children). */
  delegateKey: 'run-1-step-3',
  /** Funded through the greedy route: three levels, so the path spans several segments. */
  nestedScope: 'tenant:acme/workspace:prod/agent:summarizer',
  /** Ids the service makes up: replace them with the ones it answered. */
  eventId: 'evt_00000000000000000000000000000000',
  subscriptionId: 'whsub_000000000000000000000000',
  /** `npm run webhook-receiver`'s address: the fixtures run against the local stack. */
  webhookUrl: 'http://localhost:8787/events',
} as const;

/** Reservation ids are derived from (tenant, idempotency key), so fixtures can name them. */
export const reservationIdOf = (idempotencyKey: string): string =>
  derivedId('rsv', SAMPLE.tenant, idempotencyKey);

interface Example {
  readonly pathParameters?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
  /** For the $default routes: the unmatched path. */
  readonly rawPath?: string;
  /** A route that takes either key, called with the admin key (the walkthrough's tenant key lacks its permission). */
  readonly asAdmin?: true;
}

const usd = (amount: number) => ({ unit: 'USD_MICROCENTS', amount });
const action = { kind: 'llm.completion', name: 'gpt-4o' };
const subject = { tenant: SAMPLE.tenant };

// A Record over RouteId: a new route does not typecheck until it has an example here.
const EXAMPLES: Record<RouteId, Example> = {
  createReservation: {
    body: {
      idempotency_key: SAMPLE.reserveKey,
      subject,
      action,
      estimate: usd(500_000),
      ttl_ms: 60_000,
    },
  },
  listReservations: { query: { tenant: SAMPLE.tenant, limit: '20' } },
  getReservation: { pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) } },
  commitReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) },
    body: {
      idempotency_key: `${SAMPLE.reserveKey}-commit`,
      actual: usd(420_000),
      metrics: { tokens_input: 1_200, tokens_output: 350, latency_ms: 900 },
    },
  },
  releaseReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.releaseKey) },
    body: { idempotency_key: `${SAMPLE.releaseKey}-release`, reason: 'step skipped' },
  },
  extendReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) },
    body: { idempotency_key: `${SAMPLE.reserveKey}-extend`, extend_by_ms: 30_000 },
  },
  decide: {
    body: { idempotency_key: 'decide-1', subject, action, estimate: usd(250_000) },
  },
  listBalances: { query: { tenant: SAMPLE.tenant, include_children: 'true' } },
  createEvent: {
    body: {
      idempotency_key: 'event-1',
      subject,
      action: { kind: 'tool.call', name: 'web-search' },
      actual: usd(1_000),
    },
  },
  chargeReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) },
    body: {
      idempotency_key: `${SAMPLE.reserveKey}-charge-1`,
      amount: usd(100_000),
      metrics: { tokens_output: 120 },
    },
  },
  delegateReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.delegateKey) },
    body: {
      idempotency_key: `${SAMPLE.delegateKey}-delegate-1`,
      amount: usd(200_000),
      ttl_ms: 30_000,
    },
  },
  listDelegations: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.delegateKey) },
    query: { limit: '20' },
  },
  listCharges: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) },
    query: { limit: '20' },
  },
  refundReservation: {
    pathParameters: { reservation_id: reservationIdOf(SAMPLE.reserveKey) },
    body: { idempotency_key: 'refund-1', amount: usd(20_000), reason: 'provider refunded a retry' },
  },
  refundEvent: {
    pathParameters: { event_id: derivedId('evt', SAMPLE.tenant, 'event-1') },
    body: { idempotency_key: 'refund-2', amount: usd(500), reason: 'search call failed' },
  },
  runtimeIntrospectAuth: {},
  runtimeHealth: {},
  runtimeOpenApi: {},
  runtimeNotFound: { rawPath: '/v1/no-such-endpoint' },
  createTenant: { body: { tenant_id: SAMPLE.tenant, name: 'Acme Corp' } },
  createApiKey: {
    body: {
      tenant_id: SAMPLE.tenant,
      name: 'agents',
      // SPEC's eight and budgets:write (a key's default), and the events and webhooks ones.
      permissions: [
        'reservations:create',
        'reservations:commit',
        'reservations:release',
        'reservations:extend',
        'reservations:list',
        'balances:read',
        'decide',
        'events:create',
        'budgets:write',
        'events:read',
        'webhooks:read',
        'webhooks:write',
      ],
    },
  },
  createBudget: {
    body: {
      scope: `tenant:${SAMPLE.tenant}`,
      unit: 'USD_MICROCENTS',
      allocated: usd(100_000_000),
    },
  },
  fundBudget: {
    // API Gateway decodes the path before matching: a nested scope spans segments of {budget+}.
    pathParameters: { budget: `${SAMPLE.nestedScope}/USD_MICROCENTS/fund` },
    body: { operation: 'CREDIT', amount: usd(50_000_000), idempotency_key: 'fund-1' },
  },
  listBudgets: { query: { tenant_id: SAMPLE.tenant, unit: 'USD_MICROCENTS' } },
  lookupBudget: { query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' } },
  listBudgetPeriods: { query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' } },
  getEstimateAccuracy: { query: { scope: `tenant:${SAMPLE.tenant}`, unit: 'USD_MICROCENTS' } },
  updateBudget: {
    query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' },
    body: { overdraft_limit: usd(1_000_000) },
  },
  freezeBudget: { query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' } },
  unfreezeBudget: { query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' } },
  fundBudgetByQuery: {
    query: { scope: SAMPLE.nestedScope, unit: 'USD_MICROCENTS' },
    body: { operation: 'CREDIT', amount: usd(1_000_000), idempotency_key: 'fund-2' },
  },
  listTenants: { query: { status: 'ACTIVE', limit: '20' } },
  getTenant: { pathParameters: { tenant_id: SAMPLE.tenant } },
  updateTenant: { pathParameters: { tenant_id: SAMPLE.tenant }, body: { status: 'SUSPENDED' } },
  listApiKeys: { query: { tenant_id: SAMPLE.tenant } },
  getApiKey: { pathParameters: { key_id: 'key_0123456789abcdef' } },
  updateApiKey: {
    pathParameters: { key_id: 'key_0123456789abcdef' },
    body: { name: 'agents (rotated)' },
  },
  revokeApiKey: {
    pathParameters: { key_id: 'key_0123456789abcdef' },
    query: { reason: 'rotated' },
  },
  listAuditLogs: { query: { tenant_id: SAMPLE.tenant, operation: 'fundBudget' } },
  createPolicy: {
    body: {
      tenant_id: SAMPLE.tenant,
      name: 'summarizer caps',
      scope_pattern: `tenant:${SAMPLE.tenant}/workspace:prod/*`,
      priority: 10,
      caps: { max_tokens: 4096 },
      reservation_ttl_override: { max_ttl_ms: 600_000 },
    },
    asAdmin: true,
  },
  listPolicies: { query: { tenant_id: SAMPLE.tenant }, asAdmin: true },
  // The created policy's id is random: the fixtures name one that does not exist.
  getPolicy: { pathParameters: { policy_id: 'pol_0123456789abcdef' }, asAdmin: true },
  updatePolicy: {
    pathParameters: { policy_id: 'pol_0123456789abcdef' },
    body: { status: 'DISABLED' },
    asAdmin: true,
  },
  getOverview: {},
  bulkActionTenants: {
    body: {
      filter: { search: 'no-such-tenant' },
      action: 'SUSPEND',
      expected_count: 0,
      idempotency_key: 'bulk-1',
    },
  },
  bulkActionBudgets: {
    body: {
      filter: { tenant_id: SAMPLE.tenant, scope_prefix: `tenant:${SAMPLE.tenant}/workspace:prod` },
      action: 'CREDIT',
      amount: usd(1_000_000),
      idempotency_key: 'bulk-2',
    },
  },
  validateKey: { body: { key_secret: SAMPLE.apiKeySecret } },
  adminIntrospectAuth: {},
  listEvents: { query: { tenant_id: SAMPLE.tenant, category: 'budget', limit: '20' } },
  getEvent: { pathParameters: { event_id: SAMPLE.eventId } },
  listTenantEvents: { query: { event_type: 'budget.threshold_crossed' } },
  createWebhookSubscription: {
    query: { tenant_id: SAMPLE.tenant },
    body: { url: SAMPLE.webhookUrl, event_types: ['budget.threshold_crossed', 'budget.exhausted'] },
  },
  listWebhookSubscriptions: { query: { status: 'ACTIVE' } },
  getWebhookSubscription: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  updateWebhookSubscription: {
    pathParameters: { subscription_id: SAMPLE.subscriptionId },
    body: { status: 'PAUSED' },
  },
  deleteWebhookSubscription: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  testWebhookSubscription: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  listWebhookDeliveries: {
    pathParameters: { subscription_id: SAMPLE.subscriptionId },
    query: { status: 'FAILED' },
  },
  replayEvents: {
    pathParameters: { subscription_id: SAMPLE.subscriptionId },
    body: { from: '2025-01-15T00:00:00Z', to: '2025-01-15T12:00:00Z', max_events: 100 },
  },
  bulkActionWebhooks: {
    body: { filter: { tenant_id: SAMPLE.tenant }, action: 'PAUSE', idempotency_key: 'bulk-1' },
  },
  getWebhookSecurityConfig: {},
  updateWebhookSecurityConfig: {
    body: { blocked_cidr_ranges: ['10.0.0.0/8', '169.254.0.0/16'], allow_http: false },
  },
  createTenantWebhook: {
    body: {
      url: SAMPLE.webhookUrl,
      event_types: ['budget.exhausted'],
      event_categories: ['tenant'],
    },
  },
  listTenantWebhooks: { query: { status: 'ACTIVE' } },
  getTenantWebhook: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  updateTenantWebhook: {
    pathParameters: { subscription_id: SAMPLE.subscriptionId },
    body: { event_types: ['budget.exhausted', 'budget.threshold_crossed'] },
  },
  deleteTenantWebhook: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  testTenantWebhook: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  replayTenantWebhook: {
    pathParameters: { subscription_id: SAMPLE.subscriptionId },
    body: { from: '2025-01-15T00:00:00Z', max_events: 100 },
  },
  listTenantWebhookDeliveries: { pathParameters: { subscription_id: SAMPLE.subscriptionId } },
  console: {},
  adminHealth: {},
  adminOpenApi: {},
  adminNotFound: { rawPath: '/v1/admin/no-such-endpoint' },
};

const API_ID = { runtime: 'r4nt1me001', admin: 'adm1n00001' } as const;
const TIME = new Date(Date.UTC(2025, 0, 15, 12, 0, 0));
const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

function authHeaders(route: Route, example: Example): Record<string, string> {
  if (route.auth.kind === 'admin' || example.asAdmin)
    return { 'x-admin-api-key': SAMPLE.adminApiKey };
  // Budget writes may also use the admin key; the walkthrough uses the tenant's own.
  if (route.auth.kind === 'tenant' || route.auth.kind === 'tenantOrAdmin')
    return { 'x-service-api-key': SAMPLE.apiKeySecret };
  return {};
}

/** The event API Gateway sends for `example` on `route` (lower-case headers, as it does). */
export function httpApiEvent(id: RouteId, route: Route, example: Example) {
  const isDefault = route.path === '$default';
  const method = route.method === 'ANY' ? 'GET' : route.method;
  const routeKey = isDefault ? '$default' : `${route.method} ${route.path}`;
  const rawPath = isDefault
    ? (example.rawPath ?? '/')
    : route.path.replace(
        /\{([a-z_]+)\+?\}/g,
        (_, name: string) => example.pathParameters?.[name] ?? '',
      );
  const rawQueryString = new URLSearchParams(example.query ?? {}).toString();
  const domainName = `${API_ID[route.server]}.execute-api.${REGION}.amazonaws.com`;
  const body = example.body === undefined ? undefined : JSON.stringify(example.body);
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    headers: {
      accept: 'application/json',
      ...(body !== undefined && {
        'content-length': String(Buffer.byteLength(body)),
        'content-type': 'application/json',
      }),
      host: domainName,
      'user-agent': 'curl/8.5.0',
      'x-forwarded-for': '198.51.100.7',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      ...authHeaders(route, example),
    },
    ...(example.query && { queryStringParameters: example.query }),
    ...(example.pathParameters && { pathParameters: example.pathParameters }),
    requestContext: {
      accountId: ACCOUNT,
      apiId: API_ID[route.server],
      domainName,
      domainPrefix: API_ID[route.server],
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '198.51.100.7',
        userAgent: 'curl/8.5.0',
      },
      requestId: `fixture-${id}`,
      routeKey,
      stage: '$default',
      time: '15/Jan/2025:12:00:00 +0000',
      timeEpoch: TIME.getTime(),
    },
    ...(body !== undefined && { body }),
    isBase64Encoded: false,
  };
}

/** What EventBridge sends the sweeper every minute. */
export function scheduledEvent() {
  return {
    version: '0',
    id: 'fixture-sweeper',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: ACCOUNT,
    time: TIME.toISOString().replace('.000Z', 'Z'),
    region: REGION,
    resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/BudgetReservationsJobs-SweeperSchedule`],
    detail: {},
  };
}

/** File name → file text, for every route and the sweeper. */
export function generateEvents(): Record<string, string> {
  const text = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const files: Record<string, string> = {};
  for (const [id, route] of routeEntries()) {
    files[`${id}.json`] = text(httpApiEvent(id, route, EXAMPLES[id]));
  }
  files['sweeper.json'] = text(scheduledEvent());
  return files;
}

export const eventsDir = fileURLToPath(new URL('../events/', import.meta.url));

async function main(): Promise<void> {
  const files = generateEvents();
  await mkdir(eventsDir, { recursive: true });
  for (const stale of await readdir(eventsDir)) {
    if (stale.endsWith('.json') && !(stale in files)) await rm(join(eventsDir, stale));
  }
  for (const [name, text] of Object.entries(files)) await writeFile(join(eventsDir, name), text);
  console.log(`wrote ${Object.keys(files).length} events to events/`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
