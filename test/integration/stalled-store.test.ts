import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { balancesOf } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import { givenTenantWith, reserveBody, scopeOf, usd } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

// The stack reaches DynamoDB Local through a proxy the tests make hang. Short timeouts keep the
// file fast; a deployment's defaults are 3 attempts of 1 s (functions/store/client.ts).
const ATTEMPT_MS = 300;
const ATTEMPTS = 2;
const proxy = await startStallProxy(inject('dynamoEndpoint'));
const stack = useTestStack({
  env: {
    DYNAMODB_ENDPOINT: proxy.url,
    DYNAMODB_ATTEMPT_TIMEOUT_MS: String(ATTEMPT_MS),
    DYNAMODB_CONNECT_TIMEOUT_MS: String(ATTEMPT_MS),
    DYNAMODB_MAX_ATTEMPTS: String(ATTEMPTS),
  },
});
const { reserve } = reservationsApi(stack);

// Every attempt times out, with the SDK's backoff between them (at most 100 ms × 2^n), and a
// busy test machine adds its own delay: the answer still comes well inside the 5 s timeout of
// the smallest function. (Without the timeouts, the request would hang until the test's own.)
const BOUND_MS = 3_000;

afterEach(() => {
  // The ledger audit after each test reads through the proxy.
  proxy.mode = { kind: 'pass' };
});
afterAll(() => proxy.close());

async function timed<T>(act: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await act();
  return [result, performance.now() - started];
}

describe('a DynamoDB call that never answers', () => {
  it('answers a read SPEC’s retryable 503 INTERNAL_ERROR with Retry-After, not a 500, within the bound', async () => {
    const t = await givenTenantWith(stack, { '': 1_000 });
    proxy.mode = { kind: 'stall' };

    const [res, elapsedMs] = await timed(() =>
      request('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`, { headers: t.headers }),
    );

    const body = expectError(res, 503, 'INTERNAL_ERROR');
    expect(body).toEqual({
      error: 'INTERNAL_ERROR',
      message: expect.stringContaining('did not answer in time'),
      request_id: res.headers.get('x-request-id'),
      details: { reason: 'TIMEOUT', retry_after_ms: 1_000 },
    });
    expect(res.headers.get('retry-after')).toBe('1');
    expect(elapsedMs).toBeGreaterThanOrEqual(ATTEMPTS * ATTEMPT_MS * 0.9);
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    expect(proxy.swallowed()).toBeGreaterThanOrEqual(ATTEMPTS);
  });

  it('answers an admin write the same way, and serves again once the table answers', async () => {
    proxy.mode = { kind: 'stall' };

    const [stalled, elapsedMs] = await timed(() =>
      request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
        headers: { 'x-admin-api-key': 'test-admin-key' },
        body: { tenant_id: `s-${randomUUID().slice(0, 8)}`, name: 'Stalled' },
      }),
    );
    proxy.mode = { kind: 'pass' };
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });

    expectError(stalled, 503, 'INTERNAL_ERROR');
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    expect((await reserve(t, { estimate: usd(10) })).status).toBe(200);
  });
});

describe('a write whose answer is lost', () => {
  it('answers 503; the retry with the same key replays the reservation, held once', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const body = reserveBody({ estimate: usd(100), idempotency_key: randomUUID() });
    proxy.mode = { kind: 'lose-answers', target: 'TransactWriteItems' };

    const lost = await reserve(t, body);
    proxy.mode = { kind: 'pass' };
    const landed = await balancesOf(stack, t);
    const retried = await reserve(t, body);
    const again = await reserve(t, body);

    expectError(lost, 503, 'INTERNAL_ERROR');
    expect(lost.headers.get('retry-after')).toBe('1');
    // The hold landed although the service never heard so...
    const reserved = (b: typeof landed, rel: string) =>
      b.get(`${scopeOf(t, rel)}#USD_MICROCENTS`)?.reserved;
    expect([reserved(landed, ''), reserved(landed, 'workspace:w')]).toEqual([usd(100), usd(100)]);
    // ...and the client's retry with the same key replays it instead of holding again.
    expect(retried.status).toBe(200);
    expect(again.body.reservation_id).toBe(retried.body.reservation_id);
    const after = await balancesOf(stack, t);
    expect([reserved(after, ''), reserved(after, 'workspace:w')]).toEqual([usd(100), usd(100)]);
  });
});
