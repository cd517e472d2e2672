import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { runtimeAdmission } from '../helpers/admission-runtime.js';
import { givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

// Admission's wait (infra/local/admission.ts): past the 2 requests this stack works on at once,
// a reserve waits its turn; one whose client gave up while it waited gives its turn back at
// once, so the server's slots never leak. DynamoDB Local is reached through a proxy the test
// makes hang, so the two reserves in flight stay there for as long as the test needs.
const proxy = await startStallProxy(inject('dynamoEndpoint'));
const stack = useTestStack({
  env: {
    DYNAMODB_ENDPOINT: proxy.url,
    LOCAL_MAX_IN_FLIGHT: '2',
    DYNAMODB_ATTEMPT_TIMEOUT_MS: '1000',
    DYNAMODB_MAX_ATTEMPTS: '5',
  },
});
const { create: reserve } = reservationsApi(stack);

afterEach(() => {
  proxy.mode = { kind: 'pass' };
});
afterAll(() => proxy.close());

describe('a reserve waiting its turn', () => {
  it('gives its turn back when its client gives up, and the server serves on', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    proxy.mode = { kind: 'stall' };
    const inFlight = [reserveBody(), reserveBody()].map((body) => reserve(t, body));
    await vi.waitFor(() => expect(runtimeAdmission()?.inFlight).toBe(2), { timeout: 10_000 });
    const before = runtimeAdmission();

    const abort = new AbortController();
    const gaveUp = fetch(`${stack.runtimeUrl}/v1/reservations`, {
      method: 'POST',
      headers: { ...t.headers, 'content-type': 'application/json' },
      body: JSON.stringify(reserveBody({ estimate: usd(10) })),
      signal: abort.signal,
    }).catch((error: unknown) => error);
    await vi.waitFor(() => expect(runtimeAdmission()?.queued).toBe(1));
    abort.abort();
    await gaveUp;
    proxy.mode = { kind: 'pass' };

    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200]);
    // Its turn came after the two: admitted, released at once, nothing in flight left behind.
    await vi.waitFor(() =>
      expect(runtimeAdmission()).toMatchObject({
        inFlight: 0,
        queued: 0,
        admitted: { take: (before?.admitted.take ?? 0) + 1 },
      }),
    );
    expect((await reserve(t, reserveBody({ estimate: usd(10) }))).status).toBe(200);
  });
});
