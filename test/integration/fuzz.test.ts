import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { adminHeaders, givenBudgets, givenTenant, reserveBody, usd } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// Generated requests over every endpoint of both servers: arbitrary JSON, valid bodies with one
// field replaced by arbitrary JSON, exact numbers beyond a double, lone surrogates, raw text.
// Each answer is a success or a 4xx with SPEC's error body, never a 5xx, and a refused request
// leaves every ledger of the tenant byte for byte as it was.
const stack = useTestStack();

interface Endpoint {
  readonly server: 'runtime' | 'admin';
  readonly method: 'GET' | 'POST';
  readonly path: (ids: { reservation: string; scope: string }) => string;
  /** A valid body to mutate; undefined: the endpoint takes none (a query is fuzzed instead). */
  readonly body?: (ids: { reservation: string; scope: string }) => Json;
}

const subject = { workspace: 'w' };
const action = { kind: 'llm.completion', name: 'model-x' };
const ENDPOINTS: readonly Endpoint[] = [
  { server: 'runtime', method: 'POST', path: () => '/v1/reservations', body: () => reserveBody() },
  {
    server: 'runtime',
    method: 'POST',
    path: () => '/v1/decide',
    body: () => ({ idempotency_key: randomUUID(), subject, action, estimate: usd(1) }),
  },
  {
    server: 'runtime',
    method: 'POST',
    path: () => '/v1/events',
    body: () => ({ idempotency_key: randomUUID(), subject, action, actual: usd(1) }),
  },
  ...(['commit', 'release', 'extend'] as const).map(
    (op): Endpoint => ({
      server: 'runtime',
      method: 'POST',
      path: ({ reservation }) => `/v1/reservations/${reservation}/${op}`,
      body: () => ({
        idempotency_key: randomUUID(),
        ...(op === 'commit' && { actual: usd(1) }),
        ...(op === 'extend' && { extend_by_ms: 1_000 }),
      }),
    }),
  ),
  { server: 'runtime', method: 'GET', path: () => '/v1/reservations' },
  {
    server: 'runtime',
    method: 'GET',
    path: ({ reservation }) => `/v1/reservations/${reservation}`,
  },
  { server: 'runtime', method: 'GET', path: () => '/v1/balances' },
  { server: 'runtime', method: 'GET', path: () => '/v1/auth/introspect' },
  { server: 'admin', method: 'GET', path: () => '/v1/auth/introspect' },
  {
    server: 'admin',
    method: 'POST',
    path: () => '/v1/admin/budgets',
    body: ({ scope }) => ({
      scope: `${scope}/app:a`,
      unit: 'TOKENS',
      allocated: { unit: 'TOKENS', amount: 1 },
      caps: { max_tokens: 1, tool_denylist: ['shell'] },
    }),
  },
  {
    server: 'admin',
    method: 'POST',
    path: ({ scope }) => `/v1/admin/budgets/${encodeURIComponent(scope)}/USD_MICROCENTS/fund`,
    body: () => ({ operation: 'CREDIT', amount: usd(1), idempotency_key: randomUUID() }),
  },
  {
    server: 'admin',
    method: 'POST',
    path: () => '/v1/admin/tenants',
    body: () => ({ tenant_id: `f-${randomUUID().slice(0, 8)}`, name: 'fuzz' }),
  },
  {
    server: 'admin',
    method: 'POST',
    path: () => '/v1/admin/api-keys',
    body: () => ({ tenant_id: 'no-such-tenant', name: 'fuzz' }),
  },
  {
    server: 'admin',
    method: 'POST',
    path: () => '/v1/auth/validate',
    body: () => ({ key_secret: 'x' }),
  },
];

/** Raw JSON text: any JSON, or any text, or a 20-digit integer, or a string with a lone surrogate. */
const oddJsonText = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
  fc.bigInt({ min: 10n ** 19n, max: 10n ** 21n }).map(String),
  fc.constantFrom('"\\ud800"', '{"":1,"__proto__":{"a":1}}', '1e-200', '-0', '[[[[[[]]]]]]'),
  fc.constant(`${'['.repeat(50)}${']'.repeat(50)}`),
);

/** A valid body with one field replaced (or one added) by odd JSON, or entirely odd text. */
const bodyText = (valid: Json) =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .tuple(fc.constantFrom(...Object.keys(valid), 'metadata', 'extra'), oddJsonText)
        .map(([field, text]) => {
          const rest = JSON.stringify({ ...valid, [field]: undefined });
          return `${rest.slice(0, -1)}${rest.length > 2 ? ',' : ''}${JSON.stringify(field)}:${text}}`;
        }),
    },
    { weight: 1, arbitrary: oddJsonText },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  );

const queryText = fc
  .dictionary(
    fc.constantFrom(
      'tenant',
      'workspace',
      'status',
      'limit',
      'cursor',
      'include_children',
      'idempotency_key',
      'x',
    ),
    fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('%', '%E0%A4%A', '-1', '1e9', '')),
    { maxKeys: 4 },
  )
  .map((q) =>
    Object.entries(q)
      .map(([k, v]) => `${k}=${/%/.test(v) ? v : encodeURIComponent(v)}`)
      .join('&'),
  );

describe('every endpoint under generated bad and edge-valid requests', () => {
  it('never answers 5xx, always SPEC’s error body for a refusal, and a refusal moves no ledger', async () => {
    const t = await givenTenant(stack);
    await givenBudgets(stack, t, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const scope = `tenant:${t.tenant}`;
    const ledgersText = async () =>
      (
        await fetch(
          `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}&include_children=true&limit=200`,
          {
            headers: t.auditor,
          },
        )
      ).text();
    let before = await ledgersText();

    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        fc.boolean(),
        fc.context(),
        async (endpoint, adminKey, ctx) => {
          // A live reservation to aim at, or an id that does not exist.
          const created = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
            headers: t.headers,
            body: reserveBody({ estimate: usd(1) }),
          });
          before = await ledgersText();
          const ids = { reservation: String(created.body.reservation_id), scope };
          const base = endpoint.server === 'runtime' ? stack.runtimeUrl : stack.adminUrl;
          const headers = endpoint.server === 'admin' && adminKey ? adminHeaders : t.headers;
          const text = endpoint.body ? fc.sample(bodyText(endpoint.body(ids)), 1)[0] : undefined;
          const query = endpoint.body ? '' : `?${fc.sample(queryText, 1)[0] ?? ''}`;
          ctx.log(`${endpoint.method} ${endpoint.path(ids)}${query} ${text ?? ''}`);

          const res = await request(endpoint.method, `${base}${endpoint.path(ids)}${query}`, {
            headers: {
              ...headers,
              ...(text !== undefined && { 'content-type': 'application/json' }),
            },
            ...(text !== undefined && { raw: text }),
          });

          expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
          if (res.status >= 400) {
            expectError(res, res.status, String(res.body.error), endpoint.server);
            expect(await ledgersText()).toBe(before);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
