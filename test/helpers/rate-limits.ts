import { expect } from 'vitest';
import type { LocalStack } from '../../infra/local/stack.js';
import type { TestClock } from './clock.js';
import { expectError } from './errors.js';
import { adminHeaders, type GivenTenant } from './fixtures.js';
import { type Json, type Response, request } from './http.js';
import type { Line } from './output.js';

const MINUTE = 60_000;

/**
 * The requests and checks of the rate-limit tests (docs/decisions.md § Rate limits), on a
 * frozen server clock: keys and tenants with limits, the 429's shape, the calls a request made.
 */
export function rateLimitHelpers(
  stack: LocalStack,
  clock: TestClock,
  linesDuring: (act: () => Promise<unknown>) => Promise<Line[]>,
) {
  const introspect = (headers: Record<string, string>) =>
    request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, { headers });

  async function newKey(t: GivenTenant, rateLimits?: Json) {
    const res = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: { tenant_id: t.tenant, name: 'agent', ...(rateLimits && { rate_limits: rateLimits }) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return {
      keyId: String(res.body.key_id),
      headers: { 'x-service-api-key': String(res.body.key_secret) },
      body: res.body,
    };
  }

  const patchTenant = (t: GivenTenant, body: Json) =>
    request('PATCH', `${stack.adminUrl}/v1/admin/tenants/${t.tenant}`, {
      headers: adminHeaders,
      body,
    });

  const patchKey = (keyId: string, body: Json, headers: Record<string, string> = adminHeaders) =>
    request('PATCH', `${stack.adminUrl}/v1/admin/api-keys/${keyId}`, { headers, body });

  /** A 429 of a rate limit: SPEC's body, details naming the limit, and the three headers. */
  function expectRateLimited(res: Response, limit: string) {
    expectError(res, 429, 'LIMIT_EXCEEDED', 'runtime');
    const details = res.body.details as Json;
    expect(details.reason).toBe('RATE_LIMIT');
    expect(details.limit).toBe(limit);
    const windowEnd = (Math.floor(clock.now() / MINUTE) + 1) * MINUTE;
    expect(details.retry_after_ms).toBe(windowEnd - clock.now());
    expect(res.headers.get('retry-after')).toBe(
      String(Math.ceil((windowEnd - clock.now()) / 1000)),
    );
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(res.headers.get('x-ratelimit-reset')).toBe(String(windowEnd / 1000));
  }

  /** The answer, and the DynamoDB calls its log line counted. */
  async function dynamoCallsOf(act: () => Promise<Response>) {
    let res: Response | undefined;
    const lines = await linesDuring(async () => {
      res = await act();
    });
    const line = lines.find((l) => l.msg === 'request' || l.message === 'request');
    if (!res) throw new Error('no answer');
    return { res, calls: line?.dynamodb_calls, line };
  }

  return { introspect, newKey, patchTenant, patchKey, expectRateLimited, dynamoCallsOf };
}
