import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { runtimeAdmission } from '../helpers/admission-runtime.js';
import { L, ledgers } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import { givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { errorOf } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

// Admission of the local servers (infra/local/admission.ts, docs/decisions.md § Contention): a
// reserve past the requests the server works on at once is answered 429 CONCURRENCY at once,
// before any DynamoDB call, while commits have a pool of their own. The stack takes 2 requests
// at a time with no queue and reaches DynamoDB Local through a proxy the test makes hang, so the
// two reserves it sends stay in flight for as long as the test needs: no timing is asserted.
const proxy = await startStallProxy(inject('dynamoEndpoint'));
const stack = useTestStack({
  env: {
    DYNAMODB_ENDPOINT: proxy.url,
    LOCAL_MAX_IN_FLIGHT: '2',
    LOCAL_ADMISSION_QUEUE: '0',
    // A stalled attempt gives up after 1 s and the next one goes through once the proxy passes.
    DYNAMODB_ATTEMPT_TIMEOUT_MS: '1000',
    DYNAMODB_MAX_ATTEMPTS: '5',
  },
});
const { create: reserve, commit, listed } = reservationsApi(stack);

afterEach(() => {
  proxy.mode = { kind: 'pass' };
});
afterAll(() => proxy.close());

describe('a local server at its limit', () => {
  it('answers a reserve 429 CONCURRENCY at once with Retry-After and writes nothing, and still admits a commit', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const granted = await reserve(t, reserveBody({ estimate: usd(100) }));
    expect(granted.status).toBe(200);
    const before = runtimeAdmission();

    proxy.mode = { kind: 'stall' };
    const stuck = [reserveBody({ estimate: usd(10) }), reserveBody({ estimate: usd(10) })];
    const inFlight = stuck.map((body) => reserve(t, body));
    await vi.waitFor(() => expect(runtimeAdmission()?.inFlight).toBe(2), { timeout: 10_000 });
    // The store hangs: an answer now can only come from before any DynamoDB call.
    const turnedAway = reserveBody({ estimate: usd(10) });
    const shed = await reserve(t, turnedAway);
    const settling = commit(t, granted.body.reservation_id, { actual: usd(60) });
    await vi.waitFor(() =>
      expect(runtimeAdmission()?.admitted.settle).toBe((before?.admitted.settle ?? 0) + 1),
    );
    proxy.mode = { kind: 'pass' };

    expectError(shed, 429, 'LIMIT_EXCEEDED');
    const { reason, retry_after_ms: ms = 0 } = errorOf(shed).details as Record<string, number>;
    expect(reason).toBe('CONCURRENCY');
    // Whole seconds, at least 1, as the header carries them (sized from the backlog).
    expect(ms % 1_000).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(1_000);
    expect(shed.headers.get('retry-after')).toBe(String(ms / 1_000));
    expect(Number(shed.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 5);
    expect(shed.headers.get('x-ratelimit-remaining')).toBeNull();
    expect((await settling).status).toBe(200);
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200]);
    expect(await listed(t, turnedAway.idempotency_key)).toBeUndefined();
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 60, 20, 0, 9_920),
      'workspace:w': L(10_000, 60, 20, 0, 9_920),
    });
  });

  it('answers health while it turns work away', async () => {
    const t = await givenTenantWith(stack, { '': 10_000 });
    proxy.mode = { kind: 'stall' };
    const inFlight = [reserveBody(), reserveBody()].map((body) =>
      reserve(t, { ...body, subject: { tenant: t.tenant } }),
    );
    await vi.waitFor(() => expect(runtimeAdmission()?.inFlight).toBe(2), { timeout: 10_000 });

    const shed = await reserve(t, { ...reserveBody(), subject: { tenant: t.tenant } });
    proxy.mode = { kind: 'pass' };
    const health = await fetch(`${stack.runtimeUrl}/actuator/health`);

    expect(shed.status).toBe(429);
    expect(health.status).toBe(200);
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200]);
  });
});
