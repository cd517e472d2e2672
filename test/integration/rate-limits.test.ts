import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  givenBudgets,
  givenClosableTenant,
  reserveBody,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { captureOutput } from '../helpers/output.js';
import { rateLimitHelpers } from '../helpers/rate-limits.js';
import { useTestStack } from '../helpers/scaffold.js';

// Per-key and per-tenant request-rate limits (issue 25 point 1; docs/decisions.md § Rate
// limits), through the sockets, on a frozen server clock: every test starts at a window's start.
const CACHE_MS = 5_000;
const MINUTE = 60_000;
const clock = testClock({ frozen: true });
const stack = useTestStack({
  clock,
  env: { LOG_LEVEL: 'info', API_KEY_CACHE_TTL_MS: String(CACHE_MS) },
});

beforeEach(() => {
  // A fresh window, and past every cache of the previous test.
  clock.advanceTo((Math.floor(clock.now() / MINUTE) + 1) * MINUTE);
});

const { introspect, newKey, patchTenant, patchKey, expectRateLimited, dynamoCallsOf } =
  rateLimitHelpers(stack, clock, captureOutput());

describe('rate limits', () => {
  it('limits a key per minute: 429 with Retry-After and X-RateLimit-*, then a new window admits it', async () => {
    const t = await givenClosableTenant(stack);
    const key = await newKey(t, { max_requests_per_minute: 3 });
    expect(key.body.rate_limits).toEqual({ max_requests_per_minute: 3 });
    for (const remaining of ['2', '1', '0']) {
      const res = await introspect(key.headers);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(remaining);
    }
    clock.advance(20_000);
    expectRateLimited(await introspect(key.headers), 'key.max_requests_per_minute');
    // The tenant's other keys are not this key's limit.
    expect((await introspect(t.headers)).status).toBe(200);
    clock.advance(40_000);
    const next = await introspect(key.headers);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it('adds no DynamoDB call without a limit, one with one, none once the counter is seen full', async () => {
    const t = await givenClosableTenant(stack);
    await introspect(t.headers); // the key and the tenant's limits cached
    expect((await dynamoCallsOf(() => introspect(t.headers))).calls).toBe(0);
    const key = await newKey(t, { max_requests_per_minute: 1 });
    await introspect(key.headers);
    const limited = await newKey(t, { max_requests_per_minute: 2 });
    expect((await dynamoCallsOf(() => introspect(limited.headers))).calls).toBe(2); // key + count
    expect((await dynamoCallsOf(() => introspect(limited.headers))).calls).toBe(1);
    const refused = await dynamoCallsOf(() => introspect(limited.headers));
    expectRateLimited(refused.res, 'key.max_requests_per_minute');
    expect(refused.calls).toBe(1);
    for (let i = 0; i < 3; i++) {
      const again = await dynamoCallsOf(() => introspect(limited.headers));
      expectRateLimited(again.res, 'key.max_requests_per_minute');
      expect(again.calls).toBe(0);
    }
  });

  it('limits the tenant across its keys, and a key can only narrow it', async () => {
    const t = await givenClosableTenant(stack);
    expect((await patchTenant(t, { rate_limits: { max_requests_per_minute: 4 } })).status).toBe(
      200,
    );
    // A key that says more still stops at the tenant's.
    const wide = await newKey(t, { max_requests_per_minute: 1_000 });
    const other = await newKey(t);
    expect((await introspect(wide.headers)).headers.get('x-ratelimit-remaining')).toBe('3');
    expect((await introspect(other.headers)).headers.get('x-ratelimit-remaining')).toBe('2');
    expect((await introspect(wide.headers)).status).toBe(200);
    expect((await introspect(other.headers)).headers.get('x-ratelimit-remaining')).toBe('0');
    expectRateLimited(await introspect(wide.headers), 'tenant.max_requests_per_minute');
    expectRateLimited(await introspect(other.headers), 'tenant.max_requests_per_minute');
  });

  it('lets an agent never widen its own limits: the key and tenant routes are the operator’s', async () => {
    const t = await givenClosableTenant(stack);
    const key = await newKey(t, { max_requests_per_minute: 2 });
    const own = await patchKey(key.keyId, { rate_limits: null }, key.headers);
    expect(own.status).toBe(401);
    const tenant = await request('PATCH', `${stack.adminUrl}/v1/admin/tenants/${t.tenant}`, {
      headers: key.headers,
      body: { rate_limits: null },
    });
    expect(tenant.status).toBe(401);
    const got = await request('GET', `${stack.adminUrl}/v1/admin/api-keys/${key.keyId}`, {
      headers: adminHeaders,
    });
    expect(got.body.rate_limits).toEqual({ max_requests_per_minute: 2 });
  });

  it('takes a change into account within the cache bound', async () => {
    const t = await givenClosableTenant(stack);
    const key = await newKey(t);
    expect((await introspect(key.headers)).status).toBe(200); // key and tenant cached: no limits
    expect((await patchTenant(t, { rate_limits: { max_requests_per_minute: 1 } })).status).toBe(
      200,
    );
    const changed = await patchKey(key.keyId, { rate_limits: { max_commits_per_minute: 5 } });
    expect(changed.body.rate_limits).toEqual({ max_commits_per_minute: 5 });
    // Within the bound the cached state still answers; past it, every change applies.
    clock.advance(CACHE_MS - 1);
    for (let i = 0; i < 3; i++) expect((await introspect(key.headers)).status).toBe(200);
    clock.advance(1);
    expect((await introspect(key.headers)).headers.get('x-ratelimit-remaining')).toBe('0');
    expectRateLimited(await introspect(key.headers), 'tenant.max_requests_per_minute');
    // Lifting it (null) applies within the bound too, and the field leaves the tenant's body.
    const lifted = await patchTenant(t, { rate_limits: null });
    expect(lifted.body.rate_limits).toBeUndefined();
    clock.advance(CACHE_MS);
    expect((await introspect(key.headers)).status).toBe(200);
  });

  it('never starves the settling of granted holds: commit, release and extend pass a full tenant', async () => {
    const t = await givenClosableTenant(stack);
    await givenBudgets(stack, t, { '': 1_000_000, 'workspace:w': 1_000_000 });
    expect(
      (
        await patchTenant(t, {
          rate_limits: { max_requests_per_minute: 3, max_reservations_per_minute: 3 },
        })
      ).status,
    ).toBe(200);
    const reserve = () =>
      request('POST', `${stack.runtimeUrl}/v1/reservations`, {
        headers: t.headers,
        body: reserveBody(),
      });
    const held: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await reserve();
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      held.push(String(res.body.reservation_id));
    }
    // New work is refused, reads too (they count as requests)...
    expectRateLimited(await reserve(), 'tenant.max_requests_per_minute');
    expectRateLimited(await introspect(t.headers), 'tenant.max_requests_per_minute');
    // ... and every hold already granted still settles.
    const settle = (id: string, verb: string, body: Json) =>
      request('POST', `${stack.runtimeUrl}/v1/reservations/${id}/${verb}`, {
        headers: t.headers,
        body: { idempotency_key: randomUUID(), ...body },
      });
    expect((await settle(held[0] as string, 'extend', { extend_by_ms: 10_000 })).status).toBe(200);
    expect((await settle(held[0] as string, 'commit', { actual: usd(50) })).status).toBe(200);
    expect((await settle(held[1] as string, 'release', {})).status).toBe(200);
    expect((await settle(held[2] as string, 'commit', { actual: usd(100) })).status).toBe(200);
  });

  it('limits reservations and commits by their own limits', async () => {
    const t = await givenClosableTenant(stack);
    await givenBudgets(stack, t, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const key = await newKey(t, { max_reservations_per_minute: 2, max_commits_per_minute: 1 });
    const reserve = () =>
      request('POST', `${stack.runtimeUrl}/v1/reservations`, {
        headers: key.headers,
        body: reserveBody(),
      });
    const first = await reserve();
    const second = await reserve();
    expect([first.status, second.status]).toEqual([200, 200]);
    expectRateLimited(await reserve(), 'key.max_reservations_per_minute');
    // Reads are not reservations.
    expect((await introspect(key.headers)).status).toBe(200);
    const commit = (id: unknown) =>
      request('POST', `${stack.runtimeUrl}/v1/reservations/${id}/commit`, {
        headers: key.headers,
        body: { idempotency_key: randomUUID(), actual: usd(10) },
      });
    expect((await commit(first.body.reservation_id)).status).toBe(200);
    expectRateLimited(await commit(second.body.reservation_id), 'key.max_commits_per_minute');
    clock.advance(MINUTE);
    expect((await commit(second.body.reservation_id)).status).toBe(200);
  });

  it('refuses limits out of range, unknown fields, and limits on an operator credential', async () => {
    const t = await givenClosableTenant(stack);
    for (const rate_limits of [
      { max_requests_per_minute: 0 },
      { max_requests_per_minute: 60_001 },
      { max_requests_per_minute: 1.5 },
      { max_tokens_per_minute: 10 },
    ]) {
      const key = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
        headers: adminHeaders,
        body: { tenant_id: t.tenant, name: 'k', rate_limits },
      });
      expectError(key, 400, 'INVALID_REQUEST', 'admin');
      expectError(await patchTenant(t, { rate_limits }), 400, 'INVALID_REQUEST', 'admin');
    }
    const operator = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
      headers: adminHeaders,
      body: {
        tenant_id: '__system__',
        name: 'ops',
        permissions: ['admin:read'],
        rate_limits: { max_requests_per_minute: 10 },
      },
    });
    expectError(operator, 400, 'INVALID_REQUEST', 'admin');
  });
});

const usd = (amount: number) => ({ unit: 'USD_MICROCENTS', amount });
