import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it, vi } from 'vitest';
import type * as z from 'zod';
import { type Contract, contracts } from '../../functions/http/contracts.js';
import { type RouteId, routeEntries, routes, type Server } from '../../functions/routes.js';
import {
  documentPath,
  errorStatuses,
  openApiDocument,
  openApiFile,
  openApiText,
  operationsOf,
} from '../../infra/openapi.js';

type Json = Record<string, unknown>;

/** The schemas each handler module hands httpHandler (none: plainHandler), by route id. */
const handed = vi.hoisted(() => new Map<string, unknown>());
vi.mock('../../functions/http/handler.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../functions/http/handler.js')>();
  const httpHandler: typeof real.httpHandler = (routeId, schemas, run) => {
    handed.set(routeId, schemas);
    return real.httpHandler(routeId, schemas, run);
  };
  return { ...real, httpHandler };
});
vi.mock('../../functions/http/serve.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../functions/http/serve.js')>();
  const plainHandler: typeof real.plainHandler = (routeId, run) => {
    handed.set(routeId, {});
    return real.plainHandler(routeId, run);
  };
  return { ...real, plainHandler };
});

const SERVERS: readonly Server[] = ['runtime', 'admin'];
const addFormats = addFormatsModule.default;

/** Strict Ajv holding a document's component schemas as `urn:openapi:components#/$defs/<name>`. */
function componentsAjv(document: Json): Ajv2020 {
  const ajv = new Ajv2020({ strict: true });
  addFormats(ajv);
  const schemas = JSON.stringify((document.components as Json).schemas);
  ajv.addSchema({
    $id: 'urn:openapi:components',
    $defs: JSON.parse(schemas.replaceAll('"#/components/schemas/', '"#/$defs/')) as Json,
  });
  return ajv;
}

describe('the route contracts (functions/http/contracts.ts)', () => {
  it('name every route of the route table, and nothing else', () => {
    expect(Object.keys(contracts).sort()).toEqual(Object.keys(routes).sort());
  });

  it('hold the very request schemas each handler parses with', async () => {
    for (const [, route] of routeEntries()) {
      await import(
        /* @vite-ignore */ new URL(`../../functions/${route.entry}.ts`, import.meta.url).href
      );
    }

    for (const [id] of routeEntries()) {
      const contract: Contract = contracts[id];
      if (contract.page) continue; // the console answers files, not JSON
      const schemas = handed.get(id) as Record<string, z.ZodType | undefined> | undefined;
      expect(schemas, `${id}: its handler was not built by httpHandler('${id}', …)`).toBeDefined();
      for (const part of ['params', 'query', 'body'] as const) {
        expect(schemas?.[part] === contract[part], `${id} ${part}`).toBe(true);
      }
    }
  });
});

describe.each(SERVERS)('the %s OpenAPI document', (server) => {
  const document = openApiDocument(server);
  const paths = document.paths as Record<string, Record<string, Json>>;
  // Its routes and the routes mounted on it, pages (the console) aside.
  const serverRoutes = operationsOf(server);

  it('is the file GET /openapi.json serves (after a change, `npm run openapi` or `npm run build`)', async () => {
    const file = await readFile(openApiFile(server), 'utf8');

    expect(file).toBe(openApiText(server));
  });

  it('is valid OpenAPI 3.1, every $ref resolving', async () => {
    const validator = new Validator();

    const result = await validator.validate(structuredClone(document));

    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('would be refused by the same check with a response missing its description', async () => {
    const broken = structuredClone(document);
    const paths = broken.paths as Record<string, Record<string, { responses: Json }>>;
    const ok = paths['/openapi.json']?.get?.responses['200'] as Json;
    delete ok.description;

    const result = await new Validator().validate(broken);

    expect(result.valid).toBe(false);
  });

  it('has schemas that are valid JSON Schema 2020-12 (Ajv, strict)', () => {
    const ajv = componentsAjv(document);
    const parameterSchemas = Object.values(paths)
      .flatMap((item) => Object.values(item))
      .flatMap((op) => (op.parameters ?? []) as Json[])
      .filter((p) => p.schema !== undefined)
      .map((p) => p.schema as Json);

    for (const name of Object.keys((document.components as Json).schemas as Json)) {
      expect(
        () => ajv.compile({ $ref: `urn:openapi:components#/$defs/${name}` }),
        name,
      ).not.toThrow();
    }
    for (const schema of parameterSchemas) expect(() => ajv.compile(schema)).not.toThrow();
    expect(parameterSchemas.length).toBeGreaterThan(0);
  });

  it("lists every route of the server's table with its success status, and nothing else", () => {
    const listed = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );

    const expected: string[] = [];
    for (const [id, route] of serverRoutes) {
      if (route.path === '$default') {
        // OpenAPI has no path for "whatever else": the catch-all is an extension of the document.
        expect(document['x-unmatched-requests'], id).toMatchObject({ responses: { 404: {} } });
        continue;
      }
      const path = documentPath(route, contracts[id]);
      const operation = paths[path]?.[route.method.toLowerCase()];
      expect(operation, id).toBeDefined();
      expect(
        Object.keys(operation?.responses as Json).filter((s) => s < '300'),
        id,
      ).toEqual([String(route.status)]);
      expect(operation?.operationId, id).toBe((contracts[id] as Contract).operationId ?? id);
      expect(operation?.security, id).toEqual(
        route.auth.kind === 'none' ? [] : expect.arrayContaining([expect.any(Object)]),
      );
      expected.push(`${route.method} ${path}`);
    }
    expect(listed.sort()).toEqual(expected.sort());
  });

  it('lists the refusals of each route: its own, and those its kind may answer', () => {
    for (const [id, route] of serverRoutes) {
      if (route.path === '$default') continue;
      const operation = paths[documentPath(route, contracts[id])]?.[route.method.toLowerCase()];
      const errors = Object.entries(operation?.responses as Json)
        .filter(([, r]) => typeof (r as Json).$ref === 'string')
        .map(([status]) => Number(status));

      expect(errors, id).toEqual(errorStatuses(route, contracts[id]));
      expect(errors, id).toContain(500);
    }
  });
});

describe('the webhooks of the admin OpenAPI document', () => {
  const document = openApiDocument('admin');
  const post = ((document.webhooks as Json).event as Json).post as Json;

  it('describe what a receiver gets: a signed event, valid under the Event schema', () => {
    const validate = componentsAjv(document).compile({
      $ref: 'urn:openapi:components#/$defs/Event',
    });
    const event = {
      event_id: `evt_${'0'.repeat(32)}`,
      event_type: 'reservation.denied',
      category: 'reservation',
      timestamp: '2026-11-23T05:00:00.000Z',
      tenant_id: 'acme',
      scope: 'tenant:acme',
      source: 'budget-reservations',
      data: {
        scope: 'tenant:acme',
        unit: 'USD_MICROCENTS',
        reason_code: 'BUDGET_EXCEEDED',
        requested_amount: 500,
        remaining: 100,
        action: { kind: 'llm.completion', name: 'model-x' },
        subject: { tenant: 'acme' },
      },
    };

    expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...event, event_type: 'budget.nope' })).toBe(false);
    expect(((post.parameters as Json[]) ?? []).map((p) => p.name)).toEqual(
      expect.arrayContaining(['X-Cycles-Signature', 'X-Cycles-Trace-Id', 'traceparent']),
    );
    expect(openApiDocument('runtime').webhooks).toBeUndefined();
  });
});

describe('errorStatuses', () => {
  const routeOf = (id: RouteId) => [routes[id], contracts[id] as Contract] as const;

  it('gives a tenant route with a body 400, 401, 403, its refusals, 429, 500 and 503', () => {
    expect(errorStatuses(...routeOf('commitReservation'))).toEqual([
      400, 401, 403, 404, 409, 410, 429, 500, 503,
    ]);
  });

  it('gives a 403 wherever a key may lack the permission (an operator credential too), and a route that reads nothing no 503', () => {
    expect(errorStatuses(...routeOf('validateKey'))).toEqual([400, 401, 403, 429, 500, 503]);
    expect(errorStatuses(...routeOf('adminIntrospectAuth'))).toEqual([401, 403, 429, 500, 503]);
    expect(errorStatuses(...routeOf('runtimeOpenApi'))).toEqual([403, 429, 500]);
  });

  it('leaves 503 to health, whose 503 is its DOWN answer, and lists the edge’s 403 and 429 on every route', () => {
    expect(errorStatuses(...routeOf('runtimeHealth'))).toEqual([403, 429, 500]);
  });
});
