import * as z from 'zod/mini';
import type { RouteId } from '../routes.js';
import {
  BudgetQuery,
  ClosedPeriodsQuery,
  CreateApiKeyBody,
  CreateBudgetBody,
  CreateTenantBody,
  FundBudgetBody,
  FundPath,
  FundPathParams,
  KeyParams,
  ListApiKeysQuery,
  ListAuditLogsQuery,
  ListBudgetsQuery,
  ListTenantsQuery,
  RevokeApiKeyQuery,
  TenantParams,
  UpdateApiKeyBody,
  UpdateBudgetBody,
  UpdateTenantBody,
  ValidateKeyBody,
} from './schemas/admin.js';
import { BudgetBulkActionBody, TenantBulkActionBody } from './schemas/bulk.js';
import * as events from './schemas/event-responses.js';
import {
  ChargeBody,
  DelegationBody,
  EventIdParams,
  ListChargesQuery,
  RefundBody,
} from './schemas/extensions.js';
import {
  CreatePolicyBody,
  ListPoliciesQuery,
  PolicyParams,
  UpdatePolicyBody,
} from './schemas/governance.js';
import * as gov from './schemas/governance-responses.js';
import * as res from './schemas/responses.js';
import {
  CommitBody,
  CreateEventBody,
  CreateReservationBody,
  DecideBody,
  ExtendBody,
  ListBalancesQuery,
  ListReservationsQuery,
  ReleaseBody,
  ReservationIdParams,
} from './schemas/runtime.js';
import {
  CreateWebhookQuery,
  EventParams,
  ListDeliveriesQuery,
  ListEventsQuery,
  ListTenantEventsQuery,
  ListTenantWebhooksQuery,
  ListWebhooksQuery,
  ReplayEventsRequest,
  SubscriptionParams,
  WebhookBulkActionRequest,
  WebhookCreateRequest,
  WebhookSecurityConfigRequest,
  WebhookUpdateRequest,
} from './schemas/webhooks.js';

/**
 * What each route takes and answers, beside the route table (which must stay free of schemas:
 * `cdk synth` loads it). The request schemas are the ones its handler parses with (a unit test
 * holds them to it), the response schema is what its view renders (the integration suite checks
 * every success body): infra/openapi.ts builds the two OpenAPI documents from this alone.
 */
export interface Contract {
  readonly summary: string;
  readonly tag: string;
  /** Request schemas: zod/mini, as every function that parses with them bundles them. */
  readonly params?: z.ZodMiniType;
  readonly query?: z.ZodMiniType;
  readonly body?: z.ZodMiniType;
  /** The success body, answered with the route's status. @default - the route never succeeds */
  readonly response?: z.core.$ZodType;
  /**
   * Refusals particular to the route. Those any route of its kind may answer are derived from
   * the route table: 400 (it takes input), 401 and 403 (it takes a key), 500, 503 (it reads).
   * @default []
   */
  readonly refusals?: readonly (404 | 405 | 409 | 410)[];
  /** A second answer that is not an error body. @default - none */
  readonly alsoAnswers?: {
    readonly status: number;
    readonly body: z.core.$ZodType;
    readonly description: string;
  };
  /** The path a client fills in, where the route table's is API Gateway's own (`{x+}`). */
  readonly documentPath?: { readonly path: string; readonly params: z.ZodMiniType };
  /** The reference's name for the operation, where ours differs. @default - the route id */
  readonly operationId?: string;
  /**
   * Ours, not the protocol's (x-extension budget-reservations in the OpenAPI documents): a new
   * operation, so no protocol answer changes. @default false
   */
  readonly extension?: boolean;
  /**
   * A page for browsers, not an API operation (the console: HTML and its files, not built by
   * httpHandler): left out of the OpenAPI documents. @default false
   */
  readonly page?: boolean;
}

const health = {
  summary: 'UP when the table answers',
  tag: 'Service',
  response: res.Health,
  alsoAnswers: { status: 503, body: res.HealthDown, description: 'The table does not answer' },
} as const satisfies Contract;
const openApi = {
  summary: "This server's OpenAPI document",
  tag: 'Service',
  response: res.OpenApiDocument,
} as const satisfies Contract;
const notFound = {
  summary:
    'Any method and path no operation of the server matches: 405 with Allow where the path answers other methods, else 404',
  tag: 'Service',
  refusals: [404, 405],
} as const satisfies Contract;
const budget = { tag: 'Budgets', query: BudgetQuery } as const;
const subscription = { tag: 'Webhooks', params: SubscriptionParams } as const;
/** A 204's (absent) body: what its handler answers; the documents describe no content. */
const NoContent = z.undefined();

export const contracts = {
  createReservation: {
    summary: 'Reserve budget on every derived scope (or evaluate, with dry_run)',
    tag: 'Reservations',
    body: CreateReservationBody,
    response: res.ReservationCreateResponse,
    // 404: a tenant that skips unbudgeted scopes, with none of the derived ones budgeted.
    refusals: [404, 409],
  },
  listReservations: {
    summary: 'List reservations (the admin key lists those of the tenant it names)',
    tag: 'Reservations',
    query: ListReservationsQuery,
    response: res.ReservationListResponse,
  },
  getReservation: {
    summary: 'Get a reservation',
    tag: 'Reservations',
    params: ReservationIdParams,
    response: res.ReservationDetail,
    refusals: [404, 410],
  },
  commitReservation: {
    summary: 'Commit actual spend; the rest of the hold is released',
    tag: 'Reservations',
    params: ReservationIdParams,
    body: CommitBody,
    response: res.CommitResponse,
    refusals: [404, 409, 410],
  },
  releaseReservation: {
    summary: 'Release a reservation (the admin key releases any tenant’s)',
    tag: 'Reservations',
    params: ReservationIdParams,
    body: ReleaseBody,
    response: res.ReleaseResponse,
    refusals: [404, 409, 410],
  },
  extendReservation: {
    summary: 'Extend a reservation’s expiry (heartbeat)',
    tag: 'Reservations',
    params: ReservationIdParams,
    body: ExtendBody,
    response: res.ReservationExtendResponse,
    refusals: [404, 409, 410],
  },
  decide: {
    summary: 'Preflight decision: no reservation is made',
    tag: 'Decisions',
    body: DecideBody,
    response: res.DecisionResponse,
    refusals: [409],
  },
  listBalances: {
    summary: 'List balances',
    tag: 'Balances',
    query: ListBalancesQuery,
    response: res.BalanceResponse,
    operationId: 'getBalances',
  },
  createEvent: {
    summary: 'Record spend that needed no reservation',
    tag: 'Events',
    body: CreateEventBody,
    response: res.EventCreateResponse,
    refusals: [404, 409],
  },
  chargeReservation: {
    summary: 'Charge part of the actual while the reservation stays ACTIVE (streaming, long tasks)',
    tag: 'Charges',
    extension: true,
    params: ReservationIdParams,
    body: ChargeBody,
    response: res.ChargeResponse,
    refusals: [404, 409, 410],
  },
  delegateReservation: {
    summary:
      'Hand part of an ACTIVE reservation’s hold to a child reservation (a sub-agent’s budget)',
    tag: 'Delegations',
    extension: true,
    params: ReservationIdParams,
    body: DelegationBody,
    response: res.ReservationCreateResponse,
    refusals: [404, 409, 410],
  },
  listDelegations: {
    summary: 'A reservation’s delegations (children), in order, with their state and use',
    tag: 'Delegations',
    extension: true,
    params: ReservationIdParams,
    query: ListChargesQuery,
    response: res.DelegationListResponse,
    refusals: [404],
  },
  listCharges: {
    summary: 'A reservation’s charges, in order, and its running totals',
    tag: 'Charges',
    extension: true,
    params: ReservationIdParams,
    query: ListChargesQuery,
    response: res.ChargeListResponse,
    refusals: [404],
  },
  refundReservation: {
    summary: 'Refund part of what a reservation charged (the admin key or budgets:write)',
    tag: 'Refunds',
    extension: true,
    params: ReservationIdParams,
    body: RefundBody,
    response: res.RefundResponse,
    refusals: [404, 409],
  },
  refundEvent: {
    summary: 'Refund part of what an event charged (the admin key or budgets:write)',
    tag: 'Refunds',
    extension: true,
    params: EventIdParams,
    body: RefundBody,
    response: res.RefundResponse,
    refusals: [404, 409],
  },
  runtimeIntrospectAuth: {
    summary: 'Describe the calling key',
    tag: 'Auth',
    response: res.TenantIntrospection,
  },
  runtimeHealth: health,
  runtimeOpenApi: openApi,
  runtimeNotFound: notFound,

  createTenant: {
    summary: 'Create a tenant',
    tag: 'Tenants',
    body: CreateTenantBody,
    response: res.Tenant,
    refusals: [409],
  },
  createApiKey: {
    summary: 'Issue a tenant API key (its secret is answered this once)',
    tag: 'API keys',
    body: CreateApiKeyBody,
    response: res.ApiKeyCreateResponse,
    refusals: [404, 409],
  },
  createBudget: {
    summary: 'Create a budget ledger; its allocation is spendable at once',
    tag: 'Budgets',
    body: CreateBudgetBody,
    response: res.Budget,
    refusals: [404, 409],
  },
  fundBudget: {
    summary: 'Fund a budget: CREDIT, DEBIT, RESET, RESET_SPENT or REPAY_DEBT',
    tag: 'Budgets',
    params: FundPath,
    documentPath: { path: '/v1/admin/budgets/{scope}/{unit}/fund', params: FundPathParams },
    body: FundBudgetBody,
    response: res.FundResponse,
    refusals: [404, 409],
  },
  listBudgets: {
    summary: 'List budget ledgers',
    tag: 'Budgets',
    query: ListBudgetsQuery,
    response: res.BudgetListResponse,
  },
  lookupBudget: {
    ...budget,
    summary: 'Get the budget of a scope and unit',
    response: res.BudgetLedger,
    refusals: [404],
  },
  getEstimateAccuracy: {
    ...budget,
    summary: 'How good the estimates of the reservations settled on a budget were, per action kind',
    tag: 'Estimate accuracy',
    extension: true,
    response: res.EstimateAccuracyResponse,
    refusals: [404],
  },
  listBudgetPeriods: {
    summary: 'A rolling budget’s closed periods, newest first',
    tag: 'Budgets',
    query: ClosedPeriodsQuery,
    response: res.ClosedPeriodListResponse,
    refusals: [404],
  },
  updateBudget: {
    ...budget,
    summary: 'Change a budget’s overdraft limit or caps',
    body: UpdateBudgetBody,
    response: res.BudgetLedger,
    refusals: [404, 409],
  },
  freezeBudget: {
    ...budget,
    summary: 'Freeze a budget: no new holds or events; open reservations still settle',
    response: res.BudgetLedger,
    refusals: [404, 409],
  },
  unfreezeBudget: {
    ...budget,
    summary: 'Unfreeze a budget',
    response: res.BudgetLedger,
    refusals: [404, 409],
  },
  fundBudgetByQuery: {
    ...budget,
    summary: 'Fund a budget named by query parameters (no path-encoding of nested scopes)',
    body: FundBudgetBody,
    response: res.FundResponse,
    refusals: [404, 409],
  },
  listTenants: {
    summary: 'List tenants',
    tag: 'Tenants',
    query: ListTenantsQuery,
    response: res.TenantListResponse,
  },
  getTenant: {
    summary: 'Get a tenant',
    tag: 'Tenants',
    params: TenantParams,
    response: res.Tenant,
    refusals: [404],
  },
  updateTenant: {
    summary: 'Rename, suspend, reactivate or close a tenant',
    tag: 'Tenants',
    params: TenantParams,
    body: UpdateTenantBody,
    response: res.Tenant,
    refusals: [404, 409],
  },
  listApiKeys: {
    summary: 'List API keys',
    tag: 'API keys',
    query: ListApiKeysQuery,
    response: res.ApiKeyListResponse,
  },
  getApiKey: {
    summary: 'Get an API key',
    tag: 'API keys',
    params: KeyParams,
    response: res.ApiKey,
    refusals: [404],
  },
  updateApiKey: {
    summary: 'Change an API key’s name, description or permissions',
    tag: 'API keys',
    params: KeyParams,
    body: UpdateApiKeyBody,
    response: res.ApiKey,
    refusals: [404, 409],
  },
  revokeApiKey: {
    summary: 'Revoke an API key',
    tag: 'API keys',
    params: KeyParams,
    query: RevokeApiKeyQuery,
    response: res.ApiKey,
    refusals: [404, 409],
  },
  listAuditLogs: {
    summary: 'List the audit trail',
    tag: 'Audit',
    query: ListAuditLogsQuery,
    response: res.AuditLogListResponse,
  },
  createPolicy: {
    summary: 'Create a policy: caps and reservation limits for the scopes its pattern matches',
    tag: 'Policies',
    body: CreatePolicyBody,
    response: gov.Policy,
    refusals: [404, 409],
  },
  listPolicies: {
    summary: 'List a tenant’s policies',
    tag: 'Policies',
    query: ListPoliciesQuery,
    response: gov.PolicyListResponse,
  },
  getPolicy: {
    summary: 'Get a policy',
    tag: 'Policies',
    params: PolicyParams,
    response: gov.Policy,
    refusals: [404],
  },
  updatePolicy: {
    summary: 'Change a policy (disable it with status DISABLED)',
    tag: 'Policies',
    params: PolicyParams,
    body: UpdatePolicyBody,
    response: gov.Policy,
    refusals: [404, 409],
  },
  bulkActionTenants: {
    summary:
      'Suspend, reactivate or close every tenant a filter matches (at most 500; expected_count guards the set)',
    tag: 'Tenants',
    body: TenantBulkActionBody,
    response: gov.TenantBulkActionResponse,
    refusals: [409],
  },
  bulkActionBudgets: {
    summary:
      'Fund, freeze or unfreeze every budget of a tenant a filter matches (at most 500; expected_count guards the set)',
    tag: 'Budgets',
    body: BudgetBulkActionBody,
    response: gov.BudgetBulkActionResponse,
    refusals: [409],
  },
  getOverview: {
    summary:
      'The operator’s overview: tenants and budgets by status, budgets in debt or over their limit, recent refusals and expiries',
    tag: 'Dashboard',
    response: gov.AdminOverviewResponse,
    operationId: 'getAdminOverview',
  },
  validateKey: {
    summary: 'Check whether a key secret is valid',
    tag: 'Auth',
    body: ValidateKeyBody,
    response: res.KeyValidation,
  },
  adminIntrospectAuth: {
    summary: 'Describe the calling key (the admin key, or a tenant key)',
    tag: 'Auth',
    response: res.Introspection,
  },
  listEvents: {
    summary: 'Query the event log (every tenant, or one)',
    tag: 'Events',
    query: ListEventsQuery,
    response: events.EventListResponse,
  },
  getEvent: {
    summary: 'Get one event: the document its deliveries carried',
    tag: 'Events',
    params: EventParams,
    response: events.Event,
    refusals: [404],
  },
  listTenantEvents: {
    summary: "Query the calling tenant's events (budget, reservation, tenant)",
    tag: 'Events',
    query: ListTenantEventsQuery,
    response: events.EventListResponse,
  },
  createWebhookSubscription: {
    summary: 'Create a webhook subscription (a tenant’s, or the operator’s own without tenant_id)',
    tag: 'Webhooks',
    query: CreateWebhookQuery,
    body: WebhookCreateRequest,
    response: events.WebhookCreateResponse,
    refusals: [404, 409],
  },
  listWebhookSubscriptions: {
    summary: 'List webhook subscriptions',
    tag: 'Webhooks',
    query: ListWebhooksQuery,
    response: events.WebhookListResponse,
  },
  getWebhookSubscription: {
    ...subscription,
    summary: 'Get a webhook subscription',
    response: events.WebhookSubscription,
    refusals: [404],
  },
  updateWebhookSubscription: {
    ...subscription,
    summary: 'Change, pause or resume a webhook subscription',
    body: WebhookUpdateRequest,
    response: events.WebhookSubscription,
    refusals: [404, 409],
  },
  deleteWebhookSubscription: {
    ...subscription,
    summary: 'Delete a webhook subscription',
    response: NoContent,
    refusals: [404, 409],
  },
  testWebhookSubscription: {
    ...subscription,
    summary: 'Send a system.webhook_test event to the subscription’s URL, now',
    response: events.WebhookTestResponse,
    refusals: [404, 409],
  },
  listWebhookDeliveries: {
    ...subscription,
    summary: 'List a subscription’s deliveries, newest first',
    query: ListDeliveriesQuery,
    response: events.WebhookDeliveryListResponse,
    refusals: [404],
  },
  replayEvents: {
    ...subscription,
    summary: 'Deliver every selected event of a window again (all or nothing: else 400)',
    body: ReplayEventsRequest,
    response: events.ReplayEventsResponse,
    refusals: [404, 409],
  },
  bulkActionWebhooks: {
    summary: 'Pause, resume or delete every subscription a filter matches',
    tag: 'Webhooks',
    body: WebhookBulkActionRequest,
    response: events.WebhookBulkActionResponse,
    refusals: [409],
  },
  getWebhookSecurityConfig: {
    summary: 'Where webhooks may point: blocked ranges, URL patterns, http',
    tag: 'Webhooks',
    response: events.WebhookSecurityConfig,
  },
  updateWebhookSecurityConfig: {
    summary: 'Replace the webhook security configuration',
    tag: 'Webhooks',
    body: WebhookSecurityConfigRequest,
    response: events.WebhookSecurityConfig,
  },
  createTenantWebhook: {
    summary: 'Create a webhook for the calling tenant',
    tag: 'Webhooks',
    body: WebhookCreateRequest,
    response: events.WebhookCreateResponse,
    refusals: [409],
  },
  listTenantWebhooks: {
    summary: 'List a tenant’s webhooks (the admin key names the tenant)',
    tag: 'Webhooks',
    query: ListTenantWebhooksQuery,
    response: events.WebhookListResponse,
  },
  getTenantWebhook: {
    ...subscription,
    summary: 'Get a tenant’s webhook',
    response: events.WebhookSubscription,
    refusals: [404],
  },
  updateTenantWebhook: {
    ...subscription,
    summary: 'Change, pause or resume a tenant’s webhook',
    body: WebhookUpdateRequest,
    response: events.WebhookSubscription,
    refusals: [404, 409],
  },
  deleteTenantWebhook: {
    ...subscription,
    summary: 'Delete a tenant’s webhook',
    response: NoContent,
    refusals: [404, 409],
  },
  testTenantWebhook: {
    ...subscription,
    summary: 'Send a system.webhook_test event to a tenant’s webhook, now',
    response: events.WebhookTestResponse,
    refusals: [404, 409],
  },
  replayTenantWebhook: {
    ...subscription,
    summary:
      'Deliver every selected event of a window again to a tenant’s webhook (ours: the reference replays on the admin plane only)',
    body: ReplayEventsRequest,
    response: events.ReplayEventsResponse,
    refusals: [404, 409],
  },
  listTenantWebhookDeliveries: {
    ...subscription,
    summary: 'List a tenant’s webhook deliveries, newest first',
    query: ListDeliveriesQuery,
    response: events.WebhookDeliveryListResponse,
    refusals: [404],
  },
  console: { summary: 'The operator console', tag: 'Console', page: true },
  adminHealth: health,
  adminOpenApi: openApi,
  adminNotFound: notFound,
} as const satisfies Record<RouteId, Contract>;
