import { type Auth, type Route, type RouteId, routes } from '../routes.js';

/** What a function needs of its route while it runs: who may call it, and how it answers. */
export interface RouteFacts {
  /** The route id (a string: the build writes it from the table's keys). */
  readonly id: string;
  readonly auth: Auth;
  readonly status: Route['status'];
  readonly path: string;
  /** What a tenant key's call counts against (absent: `request`). */
  readonly rate?: Route['rate'];
}

/** Defined by the build of a deployed function (infra/service-function.ts `routeDefines`). */
declare const __ROUTE_FACTS__: RouteFacts;

/**
 * A route's facts. A deployed function serves one route, and its build defines that route's
 * facts, so the condition below is a constant, the table's branch folds away, and the route
 * table (8 kB minified, growing with every route) is in no bundle. Run from source (the local
 * servers, the tests), they come from the table. (A conditional expression, not an early
 * return: esbuild drops a reference only from a branch it folds while parsing.)
 */
export const routeFacts = (id: RouteId): RouteFacts =>
  (globalThis as { __ONE_ROUTE__?: boolean }).__ONE_ROUTE__ ? builtFacts(id) : tableFacts(id);

function builtFacts(id: RouteId): RouteFacts {
  if (__ROUTE_FACTS__.id !== id) {
    throw new Error(`this function was built for route ${__ROUTE_FACTS__.id}, not ${id}`);
  }
  return __ROUTE_FACTS__;
}

function tableFacts(id: RouteId): RouteFacts {
  const route: Route = routes[id];
  const { auth, status, path, rate } = route;
  return { id, auth, status, path, ...(rate && { rate }) };
}
