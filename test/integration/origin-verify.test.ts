import { describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { adminHeaders } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// The edge's origin check (docs/decisions.md § Edge): in AWS the value is a Secrets Manager
// secret CloudFront adds to every request; here the local setting stands in for it.
const SECRET = 'edge-origin-secret-for-tests';
const stack = useTestStack({ env: { ORIGIN_VERIFY_SECRET: SECRET } });
const through = { 'x-origin-verify': SECRET };

describe('origin verification', () => {
  const routes = () =>
    [
      ['runtime', 'GET', `${stack.runtimeUrl}/actuator/health`, {}],
      ['runtime', 'GET', `${stack.runtimeUrl}/v1/balances`, { 'x-service-api-key': 'x' }],
      ['admin', 'GET', `${stack.adminUrl}/v1/admin/tenants`, adminHeaders],
      ['admin', 'GET', `${stack.adminUrl}/no/such/path`, {}],
    ] as const;

  it.each([
    ['without the header', {}],
    ['with a wrong value', { 'x-origin-verify': 'guess' }],
    ['with an empty value', { 'x-origin-verify': '' }],
    ['with the value and more', { 'x-origin-verify': `${SECRET}x` }],
  ])(
    'refuses a request that bypassed the edge (%s) with 403 and SPEC’s error body',
    async (_what, extra) => {
      // Raw fetch: the OpenAPI documents describe what the edge lets through, not this refusal.
      for (const [, method, url, headers] of routes()) {
        const res = await fetch(url, { method, headers: { ...headers, ...extra } });
        expect(res.status, url).toBe(403);
        expect(res.headers.get('content-type')).toBe('application/json');
        const body = (await res.json()) as Record<string, unknown>;
        expect(body).toEqual({
          error: 'FORBIDDEN',
          message: expect.stringContaining('edge'),
          request_id: res.headers.get('x-request-id'),
        });
      }
    },
  );

  it('serves what came through the edge as before', async () => {
    const answers = await Promise.all(
      routes().map(([, method, url, headers]) =>
        request(method, url, { headers: { ...headers, ...through } }),
      ),
    );
    const [health, balances, tenants, missing] = answers as [
      (typeof answers)[0],
      (typeof answers)[0],
      (typeof answers)[0],
      (typeof answers)[0],
    ];
    expect(health.status).toBe(200);
    expectError(balances, 401, 'UNAUTHORIZED', 'runtime');
    expect(tenants.status).toBe(200);
    expectError(missing, 404, 'NOT_FOUND', 'admin');
  });
});
