import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { useAdmissionRuntime } from '../../infra/local/admission.js';
import { fakeAdmissionRuntime, runtimeAdmission } from '../helpers/admission-runtime.js';
import { L, ledgers } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import { givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

// Admission's Retry-After (infra/local/admission.ts): a reserve turned away is told to come back
// once those ahead of it have been let in (the queue, and the crowd already told to come back),
// not in a second whatever the backlog. The stack works on 2 requests at once with 8 waiting at
// most, reaches DynamoDB Local through a proxy the test makes hang (so the requests in flight and
// queued stay there), and its admission runs on a clock the test moves.
const clock = fakeAdmissionRuntime(0.5);
useAdmissionRuntime(clock.runtime);
const proxy = await startStallProxy(inject('dynamoEndpoint'));
const stack = useTestStack({
  env: {
    DYNAMODB_ENDPOINT: proxy.url,
    LOCAL_MAX_IN_FLIGHT: '2',
    LOCAL_ADMISSION_QUEUE: '8',
    DYNAMODB_ATTEMPT_TIMEOUT_MS: '1000',
    DYNAMODB_MAX_ATTEMPTS: '5',
  },
});
const { create: reserve, listed } = reservationsApi(stack);

afterAll(() => proxy.close());

describe('a reserve turned away behind a backlog', () => {
  it('is told to come back after the backlog, nothing written, and those queued are served', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    proxy.mode = { kind: 'stall' };
    const bodies = Array.from({ length: 10 }, () => reserveBody({ estimate: usd(10) }));
    const inFlight = bodies.slice(0, 2).map((body) => reserve(t, body));
    await vi.waitFor(() => expect(runtimeAdmission()?.inFlight).toBe(2), { timeout: 10_000 });
    const queued = bodies.slice(2).map((body) => reserve(t, body));
    await vi.waitFor(() => expect(runtimeAdmission()?.queued).toBe(8));

    // The queue is full: turned away at once. Nothing measured yet: 1 s.
    const early = reserveBody({ estimate: usd(10) });
    const first = await reserve(t, early);
    // A second later (the clock the admission reads), 8 still queued and nothing answered: the
    // next one turned away is told the time those ahead of it take at the rate measured (at
    // least 1 a second): 1 s + (8 queued + 0.5 a second turned away × 1 s) / 1 a second, half
    // way, 4.75 s, in whole seconds.
    clock.advance(1_000);
    const later = reserveBody({ estimate: usd(10) });
    const second = await reserve(t, later);
    proxy.mode = { kind: 'pass' };

    expectError(first, 429, 'LIMIT_EXCEEDED');
    expect(first.headers.get('retry-after')).toBe('1');
    expectError(second, 429, 'LIMIT_EXCEEDED');
    expect(second.headers.get('retry-after')).toBe('5');
    expect((await Promise.all([...inFlight, ...queued])).map((r) => r.status)).toEqual(
      Array(10).fill(200),
    );
    expect(await listed(t, early.idempotency_key)).toBeUndefined();
    expect(await listed(t, later.idempotency_key)).toBeUndefined();
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 100, 0, 9_900),
      'workspace:w': L(10_000, 0, 100, 0, 9_900),
    });
  });
});
