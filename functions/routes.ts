import type { Permission } from './domain/permissions.js';

/**
 * THE route table (data only: no handler imports, so `cdk synth` never loads runtime code).
 * The local server and the CDK stack both read it. `entry` is the handler module under
 * functions/; `access` is what the route does to the table, and so its IAM grant.
 */
export type Server = 'runtime' | 'admin';
export type Auth =
  | { readonly kind: 'none' }
  | { readonly kind: 'admin' }
  | { readonly kind: 'tenant'; readonly permission?: Permission };

export interface Route {
  readonly server: Server;
  readonly method: 'GET' | 'POST' | 'ANY';
  /** API Gateway route path; `$default` catches whatever no other route of the server matches. */
  readonly path: string;
  readonly entry: string;
  readonly auth: Auth;
  readonly access: 'read' | 'write';
}

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
    access: 'write',
  },
  listReservations: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/reservations',
    entry: 'runtime/list-reservations',
    auth: tenant('reservations:list'),
    access: 'read',
  },
  getReservation: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/reservations/{reservation_id}',
    entry: 'runtime/get-reservation',
    auth: tenant('reservations:list'),
    access: 'read',
  },
  commitReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/commit',
    entry: 'runtime/commit-reservation',
    auth: tenant('reservations:commit'),
    access: 'write',
  },
  releaseReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/release',
    entry: 'runtime/release-reservation',
    auth: tenant('reservations:release'),
    access: 'write',
  },
  extendReservation: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/reservations/{reservation_id}/extend',
    entry: 'runtime/extend-reservation',
    auth: tenant('reservations:extend'),
    access: 'write',
  },
  decide: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/decide',
    entry: 'runtime/decide',
    auth: tenant('decide'),
    access: 'write',
  },
  listBalances: {
    server: 'runtime',
    method: 'GET',
    path: '/v1/balances',
    entry: 'runtime/list-balances',
    auth: tenant('balances:read'),
    access: 'read',
  },
  createEvent: {
    server: 'runtime',
    method: 'POST',
    path: '/v1/events',
    entry: 'runtime/create-event',
    auth: tenant('events:create'),
    access: 'write',
  },
  runtimeHealth: {
    server: 'runtime',
    method: 'GET',
    path: '/actuator/health',
    entry: 'runtime/health',
    auth: { kind: 'none' },
    access: 'read',
  },
  runtimeNotFound: {
    server: 'runtime',
    method: 'ANY',
    path: '$default',
    entry: 'runtime/not-found',
    auth: { kind: 'none' },
    access: 'read',
  },

  createTenant: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/tenants',
    entry: 'admin/create-tenant',
    auth: { kind: 'admin' },
    access: 'write',
  },
  createApiKey: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/api-keys',
    entry: 'admin/create-api-key',
    auth: { kind: 'admin' },
    access: 'write',
  },
  createBudget: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/budgets',
    entry: 'admin/create-budget',
    auth: tenant(),
    access: 'write',
  },
  fundBudget: {
    server: 'admin',
    method: 'POST',
    path: '/v1/admin/budgets/{scope}/{unit}/fund',
    entry: 'admin/fund-budget',
    auth: tenant(),
    access: 'write',
  },
  validateKey: {
    server: 'admin',
    method: 'POST',
    path: '/v1/auth/validate',
    entry: 'admin/validate-key',
    auth: { kind: 'admin' },
    access: 'read',
  },
  adminHealth: {
    server: 'admin',
    method: 'GET',
    path: '/actuator/health',
    entry: 'admin/health',
    auth: { kind: 'none' },
    access: 'read',
  },
  adminNotFound: {
    server: 'admin',
    method: 'ANY',
    path: '$default',
    entry: 'admin/not-found',
    auth: { kind: 'none' },
    access: 'read',
  },
} as const satisfies Record<string, Route>;

export type RouteId = keyof typeof routes;

export const routeEntries = (): [RouteId, Route][] => Object.entries(routes) as [RouteId, Route][];

/** The sweeper is not an HTTP route, but it is a function of the stack all the same. */
export const sweeper = { entry: 'jobs/expire-reservations', access: 'write' } as const;
