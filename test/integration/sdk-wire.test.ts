import { describe, expect, it, onTestFinished } from 'vitest';
import type { z } from 'zod';
import { testClock } from '../helpers/clock.js';
import {
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
} from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';
import {
  type ClientClock,
  type Exchange,
  type GuardContext,
  recordingProxy,
  SdkCommitResponse,
  SdkCreateResponse,
  SdkExtendResponse,
  SdkWireClient,
  virtualClock,
} from '../helpers/sdk-wire.js';

// Issue 13, points 3 and 7: what the TypeScript SDK's guarded call (`withCycles`) sends, recorded
// by a proxy in front of the runtime server. Our client speaks the SDK's wire format and
// heartbeat schedule (test/helpers/sdk-wire.ts names the SDK files followed). Server time stands
// still unless a test's virtual client clock moves it, so both sides see the same elapsed time.
const serverClock = testClock({ frozen: true });
const stack = useTestStack({ clock: serverClock });

const RESERVE = 'POST /v1/reservations';
const EXTEND = 'POST /v1/reservations/{id}/extend';
const COMMIT = 'POST /v1/reservations/{id}/commit';
const RELEASE = 'POST /v1/reservations/{id}/release';

/** A tenant with a USD budget at its root, a proxy in front of the runtime server, the client. */
async function sdkFor(options: { clock?: ClientClock; dropFields?: readonly string[] } = {}) {
  const t: GivenTenant = await givenTenantWith(stack, { '': 10_000_000 });
  const proxy = await recordingProxy(stack.runtimeUrl, { dropFields: options.dropFields ?? [] });
  onTestFinished(() => proxy.close());
  const client = new SdkWireClient({
    baseUrl: proxy.url,
    apiKey: t.key,
    tenant: t.tenant,
    ...(options.clock && { clock: options.clock }),
  });
  return { t, proxy, client };
}

/** The requests as `METHOD path`, the reservation id replaced by `{id}`. */
const calls = (exchanges: readonly Exchange[]) =>
  exchanges.map((e) => `${e.method} ${e.path.replace(/^(\/v1\/reservations)\/[^/?]+/, '$1/{id}')}`);

const SCHEMA: Readonly<Record<string, z.ZodType>> = {
  [RESERVE]: SdkCreateResponse,
  [EXTEND]: SdkExtendResponse,
  [COMMIT]: SdkCommitResponse,
};

/**
 * Every answer is a 200 the SDK takes as a success: closed to the fields it reads (an unknown
 * one would make it retry or stop scheduling). Every request carries the SDK's headers.
 */
function expectSdkWire(exchanges: readonly Exchange[], key: string) {
  for (const [i, e] of exchanges.entries()) {
    const call = calls(exchanges)[i] ?? '';
    expect(e.status, `${call}: ${JSON.stringify(e.answer)}`).toBe(200);
    const schema = SCHEMA[call];
    if (schema) expect(schema.safeParse(e.answer).error?.issues ?? [], call).toEqual([]);
    expect(e.headers).toMatchObject({
      'content-type': 'application/json',
      'x-cycles-api-key': key,
      'x-idempotency-key': e.body?.idempotency_key,
    });
  }
}

describe('the SDK guarded call on the wire', () => {
  it('makes exactly two runtime requests, reserve and commit, for a call within its TTL', async () => {
    const { t, proxy, client } = await sdkFor();

    const result = await client.guarded(
      { estimate: 1_000, actual: 800, actionKind: 'llm.completion', actionName: 'gpt-4o' },
      async (ctx) => `ran under ${ctx.reservationId} (${ctx.decision})`,
    );

    expect(result).toMatch(/^ran under \S+ \(ALLOW\)$/);
    expect(calls(proxy.exchanges)).toEqual([RESERVE, COMMIT]);
    expectSdkWire(proxy.exchanges, t.key);
    const [reserve, commit] = proxy.exchanges;
    expect(reserve?.body).toEqual({
      idempotency_key: expect.any(String),
      subject: { tenant: t.tenant },
      action: { kind: 'llm.completion', name: 'gpt-4o' },
      estimate: { unit: 'USD_MICROCENTS', amount: 1_000 },
      ttl_ms: 60_000,
      overage_policy: 'ALLOW_IF_AVAILABLE',
    });
    // The field the heartbeat is scheduled from: 60 s − 15 s of retry reserve puts the first
    // beat 45 s out, long after this call.
    expect(reserve?.answer?.remaining_ttl_ms).toBe(60_000);
    expect(commit?.body).toEqual({
      idempotency_key: expect.any(String),
      actual: { unit: 'USD_MICROCENTS', amount: 800 },
      metrics: { latency_ms: expect.any(Number) },
    });
    expect(commit?.answer).toMatchObject({
      status: 'COMMITTED',
      charged: { unit: 'USD_MICROCENTS', amount: 800 },
    });
    expect(client.warnings).toEqual([]);
  });

  // ttl 20 s, the SDK's default timeouts (2 + 5 s per attempt): retry_reserve = 2 × 7 s + 1 s =
  // 15 s, so a beat falls due 5 s after each answer's lead drops to 20 s. The first comes at
  // 5 s; it moves expiry to 40 s, leaving 35 s, so the next comes at 25 s.
  it.each([
    [4_999, [RESERVE, COMMIT]],
    [5_000, [RESERVE, EXTEND, COMMIT]],
    [24_999, [RESERVE, EXTEND, COMMIT]],
    [25_000, [RESERVE, EXTEND, EXTEND, COMMIT]],
  ])('schedules extends from remaining_ttl_ms: a %i ms call makes %j', async (ms, expected) => {
    const clock = virtualClock(serverClock);
    const { t, proxy, client } = await sdkFor({ clock });

    await client.guarded({ estimate: 1_000, ttlMs: 20_000 }, () => clock.advance(ms));

    expect(calls(proxy.exchanges)).toEqual(expected);
    expectSdkWire(proxy.exchanges, t.key);
    const extends_ = proxy.exchanges.filter((e) => e.path.endsWith('/extend'));
    for (const e of extends_) expect(e.body?.extend_by_ms).toBe(20_000);
    expect(extends_.map((e) => e.answer?.remaining_ttl_ms)).toEqual(
      [35_000, 35_000].slice(0, extends_.length),
    );
    expect(client.warnings).toEqual([]);
  });

  it('commits the estimate, marked as such, when no actual is given', async () => {
    const { proxy, client } = await sdkFor();

    await client.guarded({ estimate: 700 }, async () => 'ok');

    expect(proxy.exchanges[1]?.body).toMatchObject({
      actual: { unit: 'USD_MICROCENTS', amount: 700 },
      metadata: { actual_source: 'estimate' },
    });
    expect(proxy.exchanges[1]?.answer?.charged).toEqual({ unit: 'USD_MICROCENTS', amount: 700 });
  });

  it('releases instead of committing when the guarded function throws', async () => {
    const { t, proxy, client } = await sdkFor();

    const call = client.guarded({ estimate: 1_000 }, async () => {
      throw new Error('tool failed');
    });

    await expect(call).rejects.toThrow('tool failed');
    expect(calls(proxy.exchanges)).toEqual([RESERVE, RELEASE]);
    expectSdkWire(proxy.exchanges, t.key);
    expect(proxy.exchanges[1]?.body).toMatchObject({ reason: 'guarded_method_failed' });
    expect(proxy.exchanges[1]?.answer).toMatchObject({ status: 'RELEASED' });
  });

  it('extends at once when the lease is shorter than the retry reserve, then on schedule', async () => {
    const clock = virtualClock(serverClock);
    const { proxy, client } = await sdkFor({ clock });

    // ttl 10 s < 15 s of retry reserve: the first delay is 0 (one immediate extend is allowed);
    // that extend leaves 20 s, so the next beat is 5 s later, after this 4 s call.
    await client.guarded({ estimate: 1_000, ttlMs: 10_000 }, () => clock.advance(4_000));

    expect(calls(proxy.exchanges)).toEqual([RESERVE, EXTEND, COMMIT]);
    expect(proxy.exchanges[1]?.answer?.remaining_ttl_ms).toBe(20_000);
  });

  it('without remaining_ttl_ms (stripped by the proxy) extends right after the reserve', async () => {
    const clock = virtualClock(serverClock);
    const { proxy, client } = await sdkFor({ clock, dropFields: ['remaining_ttl_ms'] });

    await client.guarded({ estimate: 1_000, ttlMs: 20_000 }, () => clock.advance(4_000));

    // The SDK's fallback when the server gives no lease: the cost issue 13 removed.
    expect(calls(proxy.exchanges)).toEqual([RESERVE, EXTEND, COMMIT]);
    expect(proxy.exchanges[0]?.answer).not.toHaveProperty('remaining_ttl_ms');
  });

  it('hands the guarded function the caps of an ALLOW_WITH_CAPS answer, merged across scopes', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 10_000_000, {
      caps: { max_tokens: 4_000, tool_denylist: ['shell'] },
    });
    await givenBudget(stack, t, 'workspace:w', 10_000_000, {
      caps: { max_tokens: 1_000, cooldown_ms: 500 },
    });
    const proxy = await recordingProxy(stack.runtimeUrl, { dropFields: [] });
    onTestFinished(() => proxy.close());
    const client = new SdkWireClient({ baseUrl: proxy.url, apiKey: t.key, tenant: t.tenant });
    let seen: GuardContext | undefined;

    await client.guarded({ estimate: 1_000, subject: { workspace: 'w' } }, async (ctx) => {
      seen = ctx;
    });

    expect(seen).toMatchObject({
      decision: 'ALLOW_WITH_CAPS',
      caps: { max_tokens: 1_000, cooldown_ms: 500, tool_denylist: ['shell'] },
    });
    expect(calls(proxy.exchanges)).toEqual([RESERVE, COMMIT]);
    expectSdkWire(proxy.exchanges, t.key);
  });
});

describe('a delegated child driven by the unmodified SDK (issue 29)', () => {
  it('extends, commits and releases the child by its id; what it leaves returns to the parent', async () => {
    const clock = virtualClock(serverClock);
    const { t, proxy, client } = await sdkFor({ clock });
    const post = (path: string, body: Record<string, unknown>) =>
      request('POST', `${stack.runtimeUrl}${path}`, { headers: t.headers, body });
    const parent = await post('/v1/reservations', {
      idempotency_key: `parent-${t.tenant}`,
      subject: { tenant: t.tenant },
      action: { kind: 'agent.run', name: 'orchestrator' },
      estimate: { unit: 'USD_MICROCENTS', amount: 1_000 },
      ttl_ms: 120_000,
    });
    const parentId = String(parent.body.reservation_id);
    const delegate = (key: string, amount: number) =>
      post(`/v1/reservations/${parentId}/delegations`, {
        idempotency_key: key,
        amount: { unit: 'USD_MICROCENTS', amount },
        ttl_ms: 20_000,
      });
    const child = await delegate('child-1', 300);
    const failing = await delegate('child-2', 200);

    expect(SdkCreateResponse.safeParse(child.body).error?.issues ?? []).toEqual([]);
    await client.adopt(child.body, { estimate: 300, ttlMs: 20_000, actual: 120 }, () =>
      clock.advance(5_000),
    );
    const thrown = client.adopt(failing.body, { estimate: 200, ttlMs: 20_000 }, async () => {
      throw new Error('sub-agent failed');
    });

    await expect(thrown).rejects.toThrow('sub-agent failed');
    expect(calls(proxy.exchanges)).toEqual([EXTEND, COMMIT, RELEASE]);
    expectSdkWire(proxy.exchanges, t.key);
    expect(proxy.exchanges[0]?.answer?.remaining_ttl_ms).toBe(35_000);
    expect(proxy.exchanges[1]?.answer).toMatchObject({
      status: 'COMMITTED',
      released: { amount: 180 },
    });
    expect(proxy.exchanges[2]?.answer).toMatchObject({
      status: 'RELEASED',
      released: { amount: 200 },
    });
    // 1 000 − 300 − 200 + 180 + 200 back in the parent's hold; 120 spent.
    const charges = await request(
      'GET',
      `${stack.runtimeUrl}/v1/reservations/${parentId}/charges`,
      {
        headers: t.headers,
      },
    );
    expect(charges.body.held).toEqual({ unit: 'USD_MICROCENTS', amount: 880 });
    expect(client.warnings).toEqual([]);
  });
});
