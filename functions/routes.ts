import type { Permission } from './domain/permissions.js';
import type { IndexName } from './store/table.js';

/**
 * THE route table (data only: no handler imports, so `cdk synth` never loads runtime code).
 * The local server and the CDK stack both read it: everything about a route is here — its
 * handler module (`entry`, under functions/), who may call it, its success status, what it
 * does to the table (and so its IAM grant), and its sizing where it differs from the default.
 */
export type Server = 'runtime' | 'admin';
export type Auth =
  | { readonly kind: 'none' }
  | { readonly kind: 'admin' }
  | { readonly kind: 'tenant'; readonly permission?: Permission }
  /** The admin key (X-Admin-API-Key) for any tenant, or a tenant key (holding the permission). */
  | { readonly kind: 'tenantOrAdmin'; readonly permission?: Permission };

/** What a function does to the table, checked against functions/store/*: its IAM grant. */
export interface TableAccess {
  /** Item reads, or reads and writes. @default - no item access */
  readonly items?: 'read' | 'write';
  /** The indexes it queries. @default - none */
  readonly indexes?: readonly IndexName[];
  /** DescribeTable (health checks). @default false */
  readonly describe?: boolean;
}

export interface Route {
  readonly server: Server;
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'ANY';
  /** API Gateway route path; `$default` catches whatever no other route of the server matches. */
  readonly path: string;
  readonly entry: string;
  readonly auth: Auth;
  /** The status of a success. */
  readonly status: 200 | 201;
  readonly table: TableAccess;
  /** @default 512 */
  readonly memoryMb?: number;
  /** API Gateway waits at most 30 s; the use cases take milliseconds. @default 10 */
  readonly timeoutSeconds?: number;
  /** Signs pagination cursors, so it reads the cursor secret. @default false */
  readonly paginates?: boolean;
}

/** The trivial routes (health, not found) need neither memory nor time. */
const small = { memoryMb: 256, timeoutSeconds: 5 } as const;

/** GET /actuator/health on each server: UP when the table answers. */
const healthRoute = <S extends Server>(server: S) =>
  ({
    server,
    method: 'GET',
    path: '/actuator/health',
    entry: `${server}/health`,
    auth: { kind: 'none' },
    status: 200,
    table: { describe: true },
    ...small,
  }) as const;

/** Whatever no other route of the server matches: SPEC's 404 body. */
const notFoundRoute = <S extends Server>(server: S) =>
  ({
    server,
    method: 'ANY',
    path: '$default',
    entry: `${server}/not-found`,
    auth: { kind: 'none' },
    status: 200,
    table: {},
    ...small,
  }) as const;

/** GET /v1/reservations picks one of these by its most specific filter. */
const LISTING_INDEXES: readonly IndexName[] = [
  'byTenant',
  'byStatus',
  'byWorkspace',
  'byApp',
  'byWorkflow',
  'byAgent',
  'byToolset',
];

const tenant = (
  permission?: Permission,
): { readonly kind: 'tenant'; readonly permission?: Permission } =>
  permission ? { kind: 'tenant', permission } : { kind: 'tenant' };

export const routes = {
  createReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations',
    entry: 'runtime/create-reservation',
    auth: tenant('reservations:create'),
    status: 200,
    // Frees expired holds before refusing: reads the due index.
    table: { items: 'write', indexes: ['dueForExpiry'] },
  },
  listReservations: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/reservations',
    entry: 'runtime/list-reservations',
    auth: tenant('reservations:list'),
    status: 200,
    table: { items: 'read', indexes: LISTING_INDEXES },
    paginates: true,
  },
  getReservation: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/reservations/{reservation_id}',
    entry: 'runtime/get-reservation',
    auth: tenant('reservations:list'),
    status: 200,
    table: { items: 'read' },
  },
  commitReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/commit',
    entry: 'runtime/commit-reservation',
    auth: tenant('reservations:commit'),
    status: 200,
    table: { items: 'write' },
  },
  releaseReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/release',
    entry: 'runtime/release-reservation',
    // The admin key releases any tenant's reservation (audited): the operator's force-release.
    auth: { kind: 'tenantOrAdmin', permission: 'reservations:release' },
    status: 200,
    table: { items: 'write' },
  },
  extendReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/extend',
    entry: 'runtime/extend-reservation',
    auth: tenant('reservations:extend'),
    status: 200,
    table: { items: 'write' },
  },
  decide: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/decide',
    entry: 'runtime/decide',
    auth: tenant('decide'),
    status: 200,
    // Frees expired holds before refusing: reads the due index.
    table: { items: 'write', indexes: ['dueForExpiry'] },
  },
  listBalances: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/balances',
    entry: 'runtime/list-balances',
    auth: tenant('balances:read'),
    status: 200,
    table: { items: 'read' },
    paginates: true,
  },
  createEvent: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/events',
    entry: 'runtime/create-event',
    auth: tenant('events:create'),
    status: 201,
    // Frees expired holds before refusing: reads the due index.
    table: { items: 'write', indexes: ['dueForExpiry'] },
  },
  /** Any valid key may describe itself; the runtime plane does not know the admin key. */
  runtimeIntrospectAuth: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/auth/introspect',
    entry: 'runtime/introspect-auth',
    auth: tenant(),
    status: 200,
    table: { items: 'read' },
    ...small,
  },
  runtimeHealth: healthRoute('runtime'),
  runtimeNotFound: notFoundRoute('runtime'),

  createTenant: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/tenants',
    entry: 'admin/create-tenant',
    auth: { kind: 'admin' },
    status: 201,
    table: { items: 'write' },
  },
  createApiKey: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/api-keys',
    entry: 'admin/create-api-key',
    auth: { kind: 'admin' },
    status: 201,
    table: { items: 'write' },
  },
  createBudget: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/budgets',
    entry: 'admin/create-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 201,
    table: { items: 'write' },
  },
  fundBudget: {
    server: 'admin',
    method: 'POST',
    // <scope>/<unit>/fund: API Gateway decodes %2F before matching, so a nested scope spans
    // several segments and only a greedy variable (last in the path) can hold it.
    path: '/v1/admin/budgets/{budget+}',
    entry: 'admin/fund-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'write' },
  },
  listBudgets: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/budgets',
    entry: 'admin/list-budgets',
    auth: { kind: 'tenantOrAdmin', permission: 'balances:read' },
    status: 200,
    table: { items: 'read' },
    paginates: true,
  },
  lookupBudget: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/budgets/lookup',
    entry: 'admin/lookup-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'balances:read' },
    status: 200,
    table: { items: 'read' },
  },
  listBudgetPeriods: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/budgets/periods',
    entry: 'admin/list-budget-periods',
    auth: { kind: 'tenantOrAdmin', permission: 'balances:read' },
    status: 200,
    table: { items: 'read' },
    paginates: true,
  },
  updateBudget: {
    server: 'admin',
    method: 'PATCH',
    path: '/v1/admin/budgets',
    entry: 'admin/update-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'write' },
  },
  freezeBudget: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/budgets/freeze',
    entry: 'admin/freeze-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'write' },
  },
  unfreezeBudget: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/budgets/unfreeze',
    entry: 'admin/unfreeze-budget',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'write' },
  },
  fundBudgetByQuery: {
    server: 'admin',
    method: 'POST',
    // Beside SPEC's path form: a nested scope in a query parameter has no path-decoding trap.
    path: '/v1/admin/budgets/fund',
    entry: 'admin/fund-budget-by-query',
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'write' },
  },
  listTenants: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/tenants',
    entry: 'admin/list-tenants',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'read', indexes: ['directory'] },
    paginates: true,
  },
  getTenant: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/tenants/{tenant_id}',
    entry: 'admin/get-tenant',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'read' },
  },
  updateTenant: {
    server: 'admin',
    method: 'PATCH',
    path: '/v1/admin/tenants/{tenant_id}',
    entry: 'admin/update-tenant',
    auth: { kind: 'admin' },
    status: 200,
    // Closing revokes the tenant's keys (directory), releases its ACTIVE reservations and
    // closes its budgets (the ledger index, in the table).
    table: { items: 'write', indexes: ['directory', ...LISTING_INDEXES] },
    timeoutSeconds: 29,
  },
  listApiKeys: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/api-keys',
    entry: 'admin/list-api-keys',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'read', indexes: ['directory'] },
    paginates: true,
  },
  getApiKey: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/api-keys/{key_id}',
    entry: 'admin/get-api-key',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'read' },
  },
  updateApiKey: {
    server: 'admin',
    method: 'PATCH',
    path: '/v1/admin/api-keys/{key_id}',
    entry: 'admin/update-api-key',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'write' },
  },
  revokeApiKey: {
    server: 'admin',
    method: 'DELETE',
    path: '/v1/admin/api-keys/{key_id}',
    entry: 'admin/revoke-api-key',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'write' },
  },
  listAuditLogs: {
    server: 'admin',
    method: 'GET',
    path: '/v1/admin/audit/logs',
    entry: 'admin/list-audit-logs',
    // The operator reads every tenant's trail; a key with budgets:write its own tenant's.
    auth: { kind: 'tenantOrAdmin', permission: 'budgets:write' },
    status: 200,
    table: { items: 'read', indexes: ['directory'] },
    paginates: true,
  },
  validateKey: {
    server: 'admin',
    method: 'POST',
    path: '/v1/auth/validate',
    entry: 'admin/validate-key',
    auth: { kind: 'admin' },
    status: 200,
    table: { items: 'read' },
  },
  /** The reference's dual auth: the admin key, or any valid tenant key. */
  adminIntrospectAuth: {
    server: 'admin',
    method: 'GET',
    path: '/v1/auth/introspect',
    entry: 'admin/introspect-auth',
    auth: { kind: 'tenantOrAdmin' },
    status: 200,
    table: { items: 'read' },
    ...small,
  },
  adminHealth: healthRoute('admin'),
  adminNotFound: notFoundRoute('admin'),
} as const satisfies Record<string, Route>;

export type RouteId = keyof typeof routes;

export const routeEntries = (): [RouteId, Route][] => Object.entries(routes) as [RouteId, Route][];

/** Routes that check X-Admin-API-Key (alone, or as an alternative to a tenant key). */
export const acceptsAdminKey = (route: Route): boolean =>
  route.auth.kind === 'admin' || route.auth.kind === 'tenantOrAdmin';

/** The sweeper is not an HTTP route, but it is a function of the stack all the same. */
export const sweeper = {
  entry: 'jobs/expire-reservations',
  table: { items: 'write', indexes: ['dueForExpiry'] },
  memoryMb: 512,
  timeoutSeconds: 60,
} as const satisfies Pick<Route, 'entry' | 'table' | 'memoryMb' | 'timeoutSeconds'>;
