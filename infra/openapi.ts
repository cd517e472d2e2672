import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { type Contract, contracts } from '../functions/http/contracts.js';
import * as adminSchemas from '../functions/http/schemas/admin.js';
import * as bulkSchemas from '../functions/http/schemas/bulk.js';
import { Metadata } from '../functions/http/schemas/common.js';
import * as eventResponseSchemas from '../functions/http/schemas/event-responses.js';
import * as extensionSchemas from '../functions/http/schemas/extensions.js';
import * as governanceSchemas from '../functions/http/schemas/governance.js';
import * as governanceResponses from '../functions/http/schemas/governance-responses.js';
import * as responseSchemas from '../functions/http/schemas/responses.js';
import * as runtimeSchemas from '../functions/http/schemas/runtime.js';
import * as tenantSchemas from '../functions/http/schemas/tenants.js';
import * as webhookSchemas from '../functions/http/schemas/webhooks.js';
import {
  type Auth,
  placesOf,
  type Route,
  type RouteId,
  routeEntries,
  type Server,
} from '../functions/routes.js';

/**
 * The OpenAPI 3.1 document of each server, built from the route table and the zod schemas of
 * functions/http/contracts.ts, and nothing else: request shapes in zod's input form (what a
 * client may send), response shapes in its output form (what the views render). `npm run build`
 * (and `npm run openapi`) writes them where the GET /openapi.json handlers import them from;
 * test/unit/openapi.test.ts fails when the files are stale.
 */

export type JsonSchema = { [key: string]: unknown };
export type OpenApiDocument = { [key: string]: unknown };

export const openApiDir = fileURLToPath(new URL('../functions/http/openapi/', import.meta.url));
export const openApiFile = (server: Server): string => join(openApiDir, `${server}.json`);

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const SERVERS: Record<Server, { title: string; port: number; description: string }> = {
  runtime: {
    title: 'Budget reservation service: runtime API',
    // config.ts defaults (RUNTIME_PORT, ADMIN_PORT): what `npm start` listens on.
    port: 7878,
    description:
      'The Cycles protocol v0 enforcement plane: reserve, commit, release and extend budget reservations, decide, record events, read balances. Amounts are integers of their unit. Every write is idempotent by its idempotency_key.',
  },
  admin: {
    title: 'Budget reservation service: admin API',
    port: 7979,
    description:
      "The operator's control plane: tenants, API keys, budget ledgers and their funding, the audit trail.",
  },
};

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/**
 * Operations and tags of ours, not the protocol's, are marked with this (docs/decisions.md §
 * OpenAPI): a client generated from the reference ignores them, and nothing it knows changed.
 */
const EXTENSION = { 'x-extension': 'budget-reservations' } as const;
const EXTENSION_TAGS: Record<string, string> = {
  Charges:
    'Ours: charge parts of the actual while a reservation stays ACTIVE (streaming, long tasks); its commit’s actual is the total.',
  Refunds:
    'Ours: give back part of what a reservation or an event charged (the admin key, or budgets:write); audited, and announced as a custom.refund event.',
  'Estimate accuracy':
    'Ours: how the estimates of settled reservations compared with their actuals, per budget and action kind, aggregated from the table’s stream.',
};
const uri = (id: string) => `#/components/schemas/${id}`;

/** Zod has no JSON Schema for a custom schema: Metadata is any JSON object. */
function unrepresentable({ zodSchema }: { zodSchema: z.core.$ZodType }): JsonSchema | 'throw' {
  return zodSchema === Metadata ? { type: 'object', additionalProperties: true } : 'throw';
}
/** Zod drops the default of a field whose schema preprocesses (`Int`): put it back. */
function override({
  zodSchema,
  jsonSchema,
}: {
  zodSchema: z.core.$ZodType;
  jsonSchema: JsonSchema;
}) {
  const def = zodSchema._zod.def as { type: string; defaultValue?: unknown };
  if (def.type === 'default' && !('default' in jsonSchema)) jsonSchema.default = def.defaultValue;
}
const conversion = { target: 'draft-2020-12', unrepresentable, override } as const;

/** Component names are the schemas' export names (convention 4: named after the wire message). */
function namesOf(...modules: Record<string, unknown>[]): Map<z.core.$ZodType, string> {
  const names = new Map<z.core.$ZodType, string>();
  for (const module of modules) {
    // Sorted: a module namespace's key order is the loader's (vitest's differs from Node's).
    for (const [name, value] of Object.entries(module).sort(([a], [b]) => a.localeCompare(b))) {
      if (value instanceof z.core.$ZodType && !names.has(value)) names.set(value, name);
    }
  }
  return names;
}
const requestNames = namesOf(
  runtimeSchemas,
  adminSchemas,
  tenantSchemas,
  webhookSchemas,
  governanceSchemas,
  bulkSchemas,
  extensionSchemas,
);
const responseNames = namesOf(responseSchemas, eventResponseSchemas, governanceResponses);

function nameOf(
  names: Map<z.core.$ZodType, string>,
  schema: z.core.$ZodType,
  what: string,
): string {
  const name = names.get(schema);
  if (!name) throw new Error(`${what} is not an exported schema of functions/http/schemas/`);
  return name;
}

/** Its JSON Schema as a component: OpenAPI supplies the dialect, and ids are the components'. */
function component(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest;
}

/** A query parameter that takes exactly `true` or `false` is a boolean on the wire. */
function parameterSchema(schema: JsonSchema): JsonSchema {
  const values = schema.enum;
  if (
    schema.type === 'string' &&
    Array.isArray(values) &&
    values.length === 2 &&
    values.includes('true') &&
    values.includes('false')
  ) {
    const { type: _t, enum: _e, ...rest } = schema;
    return { ...rest, type: 'boolean' };
  }
  return schema;
}

function parameters(schema: z.core.$ZodType, place: 'path' | 'query'): JsonSchema[] {
  const json = z.toJSONSchema(schema, { ...conversion, io: 'input' }) as JsonSchema;
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = (json.required ?? []) as string[];
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = parameterSchema(property);
    return {
      name,
      in: place,
      required: place === 'path' || required.includes(name),
      ...(description !== undefined && { description }),
      schema: rest,
    };
  });
}

const SECURITY: Record<Auth['kind'], Record<string, string[]>[]> = {
  none: [],
  admin: [{ AdminKeyAuth: [] }],
  tenant: [{ ServiceApiKeyAuth: [] }, { ApiKeyAuth: [] }],
  tenantOrAdmin: [{ ServiceApiKeyAuth: [] }, { ApiKeyAuth: [] }, { AdminKeyAuth: [] }],
};

const takesKey = (route: Route) => route.auth.kind !== 'none';
const takesTenantKey = (route: Route) =>
  route.auth.kind === 'tenant' || route.auth.kind === 'tenantOrAdmin';
/** A key that may lack a permission: a tenant key, or an operator credential (403). */
const checksPermission = (route: Route) =>
  takesTenantKey(route) || (route.auth.kind === 'admin' && route.auth.operator !== undefined);
/**
 * Reading the table (every key is read from it, an operator credential's too) can meet
 * throttling or contention: 429 (nothing written, retry after Retry-After), or a table that does
 * not answer: 503.
 */
const readsTable = (route: Route) =>
  route.table.items !== undefined ||
  (route.table.indexes?.length ?? 0) > 0 ||
  route.table.describe === true ||
  takesKey(route);

/** The error statuses of a route: its own refusals, and those any route of its kind may answer. */
export function errorStatuses(route: Route, contract: Contract): number[] {
  const statuses = new Set<number>(contract.refusals ?? []);
  if (contract.body || contract.query || contract.params) statuses.add(400);
  if (takesKey(route)) statuses.add(401);
  if (checksPermission(route)) statuses.add(403);
  // The edge in front of every route (docs/decisions.md § Edge): the origin check and the admin
  // allow-list answer 403, its per-source and per-key rate rules 429, whatever the route.
  statuses.add(403);
  statuses.add(429);
  statuses.add(500);
  // Health answers a table in trouble with its own 503 (DOWN), never busy.
  if (readsTable(route) && contract.alsoAnswers?.status !== 503) statuses.add(503);
  return [...statuses].sort((a, b) => a - b);
}

/** The response components of the statuses that are not a plain refusal. */
const RESPONSE_OF_STATUS: Readonly<Record<number, string>> = { 429: 'Busy', 503: 'RetryLater' };

/** OpenAPI's path template of a route: the contract's, where API Gateway's is not one. */
export const documentPath = (route: Route, contract: Contract): string =>
  contract.documentPath?.path ?? route.path;

function operation(
  id: RouteId,
  route: Route,
  contract: Contract,
  requestBodies: Record<string, JsonSchema>,
) {
  const path = documentPath(route, contract);
  const pathParams = contract.documentPath?.params ?? contract.params;
  const params: JsonSchema[] = [
    ...(pathParams ? parameters(pathParams, 'path') : []),
    ...(contract.query ? parameters(contract.query, 'query') : []),
  ];
  const named = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  const declared = params.filter((p) => p.in === 'path').map((p) => p.name);
  if (named.join() !== declared.join()) {
    throw new Error(`${id}: path ${path} names {${named}}, its params schema {${declared}}`);
  }
  const bodyName = contract.body && nameOf(requestNames, contract.body, `${id}'s body`);
  const bodyProperties = (bodyName && requestBodies[bodyName]?.properties) as
    | Record<string, unknown>
    | undefined;
  if (bodyProperties && 'idempotency_key' in bodyProperties) {
    params.push({ $ref: '#/components/parameters/IdempotencyKeyHeader' });
  }

  const responses: Record<string, unknown> = {};
  if (contract.response) {
    const headers = {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      'X-Cycles-Trace-Id': { $ref: '#/components/headers/X-Cycles-Trace-Id' },
      ...(takesTenantKey(route) && {
        'X-Cycles-Tenant': { $ref: '#/components/headers/X-Cycles-Tenant' },
        'X-Service-Tenant': { $ref: '#/components/headers/X-Service-Tenant' },
      }),
    };
    responses[route.status] =
      route.status === 204
        ? { description: contract.summary, headers }
        : {
            description: contract.summary,
            headers,
            content: {
              'application/json': {
                schema: ref(nameOf(responseNames, contract.response, `${id}'s response`)),
              },
            },
          };
  }
  const also = contract.alsoAnswers;
  if (also) {
    responses[also.status] = {
      description: also.description,
      headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
      content: {
        'application/json': { schema: ref(nameOf(responseNames, also.body, `${id}'s answer`)) },
      },
    };
  }
  for (const status of errorStatuses(route, contract)) {
    responses[status] = {
      $ref: `#/components/responses/${RESPONSE_OF_STATUS[status] ?? 'Error'}`,
    };
  }

  return {
    operationId: contract.operationId ?? id,
    summary: contract.summary,
    tags: [contract.tag],
    ...(contract.extension && EXTENSION),
    security: SECURITY[route.auth.kind],
    ...(params.length > 0 && { parameters: params }),
    ...(bodyName && {
      requestBody: { required: true, content: { 'application/json': { schema: ref(bodyName) } } },
    }),
    responses,
  };
}

/** Every `#/components/schemas/…` reachable from `value`, following components transitively. */
function reachable(value: unknown, schemas: Record<string, JsonSchema>): Set<string> {
  const seen = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const item of v) visit(item);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const [key, child] of Object.entries(v)) {
      const id =
        key === '$ref' && typeof child === 'string' && child.startsWith(uri(''))
          ? child.slice(uri('').length)
          : undefined;
      if (id !== undefined) {
        if (!seen.has(id)) {
          seen.add(id);
          visit(schemas[id]);
        }
      } else visit(child);
    }
  };
  visit(value);
  return seen;
}

const headerSchema = (description: string, schema: JsonSchema = { type: 'string' }) => ({
  description,
  schema,
});

/**
 * The operations of a server: its routes, and the routes of the other mounted on it (the same
 * function at the mount's path); a page (the console) is no operation.
 */
export function operationsOf(server: Server): [RouteId, Route][] {
  return routeEntries().flatMap(([id, route]) =>
    (contracts[id] as Contract).page
      ? []
      : placesOf(route)
          .filter((place) => place.server === server)
          .map(({ path }): [RouteId, Route] => [id, { ...route, server, path }]),
  );
}

export function openApiDocument(server: Server): OpenApiDocument {
  const routes = operationsOf(server);

  const requests = z.registry<{ id: string }>();
  for (const [id] of routes) {
    const body = (contracts[id] as Contract).body;
    if (body && !requests.has(body)) requests.add(body, { id: nameOf(requestNames, body, id) });
  }
  const responses = z.registry<{ id: string }>();
  for (const [schema, id] of responseNames) responses.add(schema, { id });
  const requestBodies = z.toJSONSchema(requests, { ...conversion, io: 'input', uri }).schemas;
  const responseBodies = z.toJSONSchema(responses, { ...conversion, io: 'output', uri }).schemas;
  const clash = Object.keys(requestBodies).filter((name) => name in responseBodies);
  if (clash.length > 0) throw new Error(`request and response schemas share names: ${clash}`);
  const all: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries({ ...requestBodies, ...responseBodies })) {
    all[name] = component(schema as JsonSchema);
  }

  const paths: Record<string, Record<string, unknown>> = {};
  const unmatched: Contract[] = [];
  const tags: string[] = [];
  for (const [id, route] of routes) {
    const contract: Contract = contracts[id];
    if (route.path === '$default') {
      unmatched.push(contract);
      continue;
    }
    const path = documentPath(route, contract);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(id, route, contract, requestBodies);
    if (!tags.includes(contract.tag)) tags.push(contract.tag);
  }

  const responseComponents = {
    Error: {
      description:
        'A refusal: SPEC\'s error body. Behind the edge, 401 (a runtime /v1/ call without a key of our shape), 403 (a request that bypassed the edge, or a source outside the admin API\'s allow-list) may come from the edge itself, with request_id "edge"',
      headers: {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        'X-Cycles-Trace-Id': { $ref: '#/components/headers/X-Cycles-Trace-Id' },
      },
      content: { 'application/json': { schema: ref('ErrorResponse') } },
    },
    Busy: {
      description:
        'Too many requests, nothing done or written (error LIMIT_EXCEEDED); retry after Retry-After seconds, and a reserve with a new idempotency key is as safe as with the same one. details.reason RATE_LIMIT: a request-rate limit of the API key or its tenant (details.limit names it; X-RateLimit-Remaining 0, X-RateLimit-Reset the end of its minute); CONTENTION or THROTTLED: contention or throttling outlasted the retries; CONCURRENCY: as many requests in flight as the service takes. From the edge (CloudFront + WAF, before any function): a source address or an API key over its per-minute rate, with request_id "edge", no details and Retry-After 60',
      headers: {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        'Retry-After': { $ref: '#/components/headers/Retry-After' },
        'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
        'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
      },
      content: { 'application/json': { schema: ref('ErrorResponse') } },
    },
    RetryLater: {
      description:
        'The table did not answer in time (error INTERNAL_ERROR, details.reason TIMEOUT): a write may have landed; retry after Retry-After seconds with the same idempotency key, which replays it',
      headers: {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        'X-Cycles-Trace-Id': { $ref: '#/components/headers/X-Cycles-Trace-Id' },
        'Retry-After': { $ref: '#/components/headers/Retry-After' },
      },
      content: { 'application/json': { schema: ref('ErrorResponse') } },
    },
  };
  const webhooks = server === 'admin' ? budgetEventWebhooks() : undefined;
  const used = reachable({ paths, responseComponents, webhooks }, all);
  const schemas = Object.fromEntries(
    Object.entries(all)
      .filter(([name]) => used.has(name))
      .sort(([a], [b]) => a.localeCompare(b)),
  );

  const { title, port, description } = SERVERS[server];
  return {
    openapi: '3.1.0',
    info: { title, version: pkg.version, description },
    servers: [
      {
        url: '{base_url}',
        variables: {
          base_url: {
            default: `http://localhost:${port}`,
            description: `Where the ${server} server is reached: locally (npm start), or the stack's ${server === 'runtime' ? 'RuntimeUrl' : 'AdminUrl'} output`,
          },
        },
      },
    ],
    tags: tags.map((name) => {
      const description = EXTENSION_TAGS[name];
      return description === undefined ? { name } : { name, description, ...EXTENSION };
    }),
    paths,
    ...(webhooks && { webhooks }),
    components: {
      schemas,
      responses: responseComponents,
      parameters: {
        IdempotencyKeyHeader: {
          name: 'X-Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'The idempotency key in a header: it must equal the body’s idempotency_key when both are sent, and stands for it when the body has none.',
          schema: { type: 'string', minLength: 1, maxLength: 256 },
        },
      },
      headers: {
        'X-Request-Id': headerSchema('This request’s id, also in error bodies and the logs'),
        'X-Cycles-Trace-Id': headerSchema(
          "The request's W3C trace id: from its traceparent, else its X-Cycles-Trace-Id, else a new one; on every answer, and on the audit records, events and webhook deliveries it causes",
          { type: 'string', pattern: '^[0-9a-f]{32}$' },
        ),
        'X-Cycles-Tenant': headerSchema('The tenant of the key that authenticated the request'),
        'X-Service-Tenant': headerSchema('The tenant of the key that authenticated the request'),
        'Retry-After': headerSchema('Seconds to wait before retrying (delta-seconds)', {
          type: 'integer',
          minimum: 1,
        }),
        'X-RateLimit-Reset': headerSchema(
          'When the request may be retried, in Unix seconds (now + Retry-After, or when the limit resets)',
          { type: 'integer', format: 'int64' },
        ),
        'X-RateLimit-Remaining': headerSchema(
          'Requests left in the current window of a limit that applies to the caller; sent only where one does',
          { type: 'integer' },
        ),
      },
      securitySchemes: {
        ServiceApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-Service-API-Key' },
        ApiKeyAuth: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Cycles-API-Key',
          description: 'The same tenant key, under the reference protocol’s header name',
        },
        AdminKeyAuth: { type: 'apiKey', in: 'header', name: 'X-Admin-API-Key' },
      },
    },
    // OpenAPI has no path for "anything else": API Gateway's $default route answers it.
    'x-unmatched-requests': unmatched.map((c) => ({
      summary: c.summary,
      responses: Object.fromEntries(
        (c.refusals ?? []).map((s) => [s, { $ref: '#/components/responses/Error' }]),
      ),
    }))[0],
  };
}

/**
 * The budget events the service POSTs to each `WEBHOOK_URLS` receiver (functions/outbound/
 * webhooks.ts): OpenAPI 3.1's `webhooks`, so a receiver can be generated from the document.
 */
function budgetEventWebhooks() {
  const header = (name: string, description: string, schema: JsonSchema) => ({
    name,
    in: 'header',
    required: true,
    description,
    schema,
  });
  return {
    event: {
      post: {
        summary: 'An event, delivered to each webhook subscription that selects it',
        description:
          "At least once: an attempt without a 2xx answer within the timeout is retried per the subscription's retry_policy (initial_delay_ms × backoff_multiplier^n, at most max_delay_ms, max_retries times), with the same body and event id; every attempt is listed by the subscription's deliveries operation. Deduplicate on `event_id`. The body is the reference protocol's Event, byte for byte as GET /v1/admin/events/{event_id} answers it.",
        operationId: 'event',
        parameters: [
          header(
            'X-Cycles-Signature',
            'HMAC-SHA256 of the raw body keyed with the subscription’s signing secret (answered once, when it was created), as `sha256=<hex>`: the reference protocol’s header. Check it in constant time before trusting the body.',
            { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
          ),
          header('X-Cycles-Event-Id', 'The body’s event_id.', { type: 'string' }),
          header('X-Cycles-Event-Type', 'The body’s event_type.', { type: 'string' }),
          header('X-Cycles-Trace-Id', 'The event’s trace id (the request that caused it).', {
            type: 'string',
            pattern: '^[0-9a-f]{32}$',
          }),
          header('traceparent', 'W3C Trace Context of the delivery: the trace id, a new span.', {
            type: 'string',
          }),
          header('X-Cycles-Delivery-Id', 'The delivery (its record in the deliveries listing).', {
            type: 'string',
          }),
          header('X-Cycles-Delivery-Attempt', '1 for the first attempt, then 2, 3, …', {
            type: 'integer',
            minimum: 1,
          }),
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('Event') } },
        },
        responses: {
          '2XX': { description: 'Delivered: not sent again.' },
          default: { description: 'Not delivered: retried per the retry policy.' },
        },
      },
    },
  };
}

/** File text of each server's document: deterministic, so a stale file is a failing test. */
export const openApiText = (server: Server): string =>
  `${JSON.stringify(openApiDocument(server), null, 2)}\n`;

export async function writeOpenApiDocuments(): Promise<string[]> {
  await mkdir(openApiDir, { recursive: true });
  const servers: Server[] = ['runtime', 'admin'];
  for (const server of servers) await writeFile(openApiFile(server), openApiText(server));
  return servers.map(openApiFile);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of await writeOpenApiDocuments()) console.log(`wrote ${file}`);
}
