import { describe, expect, it } from 'vitest';
import type { RouteAnswer, RouteSchemas } from '../../functions/http/handler.js';
import { CreateEventBody, DecideBody } from '../../functions/http/schemas/runtime.js';
import type { plainHandler } from '../../functions/http/serve.js';

// Routes checked by the compiler: what these lines claim is proven by `npm run typecheck`
// (a `@ts-expect-error` that no longer errs fails it); the runtime assertions only keep them.

describe('a route’s handler, as the compiler checks it', () => {
  it('answers the shape of its response schema, literals and all', () => {
    const right: RouteAnswer<'createEvent'> = { status: 'APPLIED', event_id: 'e', balances: [] };
    // @ts-expect-error — an event is answered APPLIED, nothing else
    const wrongStatus: RouteAnswer<'createEvent'> = { status: 'DONE', event_id: 'e', balances: [] };
    // @ts-expect-error — event_id is required
    const missing: RouteAnswer<'createEvent'> = { status: 'APPLIED', balances: [] };

    expect([right, wrongStatus, missing].map((a) => 'status' in a && a.status)).toEqual([
      'APPLIED',
      'DONE',
      'APPLIED',
    ]);
  });

  it('takes the request schemas of its own contract, and only those', () => {
    const own: RouteSchemas<'createEvent'> = { body: CreateEventBody };
    // @ts-expect-error — another route's body schema
    const other: RouteSchemas<'createEvent'> = { body: DecideBody };
    // @ts-expect-error — the route takes no query
    const extra: RouteSchemas<'createEvent'> = { body: CreateEventBody, query: DecideBody };

    expect([own, other, extra].every((s) => s.body !== undefined)).toBe(true);
  });

  it('builds a plain handler only for a route that takes no key and no input', () => {
    type PlainRoute = Parameters<typeof plainHandler>[0];
    const health: PlainRoute = 'runtimeHealth';
    const notFound: PlainRoute = 'adminNotFound';
    // @ts-expect-error — it takes a key and a body: httpHandler authenticates and validates
    const reserve: PlainRoute = 'createReservation';
    // @ts-expect-error — it takes a key, though no input
    const introspect: PlainRoute = 'runtimeIntrospectAuth';

    expect([health, notFound, reserve, introspect]).toHaveLength(4);
  });
});
