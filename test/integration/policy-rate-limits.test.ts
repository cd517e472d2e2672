import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudgets,
  givenClosableTenant,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { captureOutput } from '../helpers/output.js';
import { rateLimitHelpers } from '../helpers/rate-limits.js';
import { useTestStack } from '../helpers/scaffold.js';

// Policies' rate limits (issue 25; docs/decisions.md § Rate limits): a policy's
// max_reservations_per_minute and max_commits_per_minute count the reserves, events, commits and
// charges of the scopes it matches, in the same counting write as the key's and tenant's limits.
// Through the sockets, on a frozen server clock: every test starts at a window's start (a file of
// its own: the 429's X-RateLimit-Reset must stay near real time).
const MINUTE = 60_000;
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock, env: { LOG_LEVEL: 'info', API_KEY_CACHE_TTL_MS: '5000' } });

beforeEach(() => {
  // A fresh window, and past every cache of the previous test.
  clock.advanceTo((Math.floor(clock.now() / MINUTE) + 1) * MINUTE);
});

const { introspect, newKey, patchTenant, expectRateLimited, dynamoCallsOf } = rateLimitHelpers(
  stack,
  clock,
  captureOutput(),
);
type Limits = Json;

describe('policy rate limits', () => {
  const TENANT_STATE_MS = 5_000;
  async function policy(t: GivenTenant, scope: string, rateLimits: Limits) {
    const res = await request('POST', `${stack.adminUrl}/v1/admin/policies`, {
      headers: adminHeaders,
      body: {
        tenant_id: t.tenant,
        name: `p-${randomUUID()}`,
        scope_pattern: scope,
        rate_limits: rateLimits,
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return String(res.body.policy_id);
  }
  const patchPolicy = (id: string, body: Json) =>
    request('PATCH', `${stack.adminUrl}/v1/admin/policies/${id}`, { headers: adminHeaders, body });
  const reserve = (headers: Record<string, string>, workspace = 'w') =>
    request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers,
      body: reserveBody({ subject: { workspace } }),
    });
  const settle = (headers: Record<string, string>, id: string, verb: string, body: Json) =>
    request('POST', `${stack.runtimeUrl}/v1/reservations/${id}/${verb}`, {
      headers,
      body: { idempotency_key: randomUUID(), ...body },
    });
  async function givenLimitedTenant() {
    const t = await givenClosableTenant(stack);
    await givenBudgets(stack, t, { '': 1e9, 'workspace:w': 1e9, 'workspace:x': 1e9 });
    return t;
  }
  /** Policies are read with the tenant's state: past its cache bound, they apply. */
  const pastTheBound = () => clock.advance(TENANT_STATE_MS);

  it('refuses the 13th reservation of a matching scope, not one of a scope it does not match', async () => {
    const t = await givenLimitedTenant();
    const id = await policy(t, 'workspace:w', { max_reservations_per_minute: 12 });
    pastTheBound();
    for (let i = 0; i < 12; i++) {
      const res = await reserve(t.headers);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(11 - i));
    }
    expectRateLimited(await reserve(t.headers), `policy.${id}.max_reservations_per_minute`);
    // Another workspace is not the policy's; an event under w is a reservation too.
    const other = await reserve(t.headers, 'x');
    expect(other.status).toBe(200);
    expect(other.headers.get('x-ratelimit-remaining')).toBeNull();
    const event = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers: t.headers,
      body: {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'llm.completion', name: 'model-x' },
        actual: usd(1),
      },
    });
    expectRateLimited(event, `policy.${id}.max_reservations_per_minute`);
    // The next window admits it again.
    clock.advance(MINUTE);
    expect((await reserve(t.headers)).status).toBe(200);
  });

  it('counts the key’s, the tenant’s and the policies’ limits in one write, and refuses from memory once full', async () => {
    const t = await givenLimitedTenant();
    const quiet = await givenLimitedTenant();
    await policy(t, `tenant:${t.tenant}/*`, { max_reservations_per_minute: 3 });
    await policy(t, 'workspace:x', { max_reservations_per_minute: 1 }); // not this scope
    expect((await patchTenant(t, { rate_limits: { max_requests_per_minute: 100 } })).status).toBe(
      200,
    );
    const key = await newKey(t, { max_reservations_per_minute: 5 });
    pastTheBound();
    // Caches warm (key, tenant state, budgets' shards) on both tenants, then compare.
    await reserve(key.headers);
    await reserve(quiet.headers);
    const unlimited = await dynamoCallsOf(() => reserve(quiet.headers));
    const limited = await dynamoCallsOf(() => reserve(key.headers));
    expect(unlimited.res.status).toBe(200);
    expect(limited.res.status).toBe(200);
    // Key 5 - 2, tenant 100 - 2, policy 3 - 2: the least left.
    expect(limited.res.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(limited.calls).toBe((unlimited.calls as number) + 1);
    expect((await reserve(key.headers)).status).toBe(200);
    // Full: one counting call refuses, then every further request of the window none.
    const refused = await dynamoCallsOf(() => reserve(key.headers));
    expect(refused.calls).toBe(1);
    for (let i = 0; i < 5; i++) {
      const again = await dynamoCallsOf(() => reserve(key.headers));
      expect((again.res.body.details as Json).limit).toMatch(
        /^policy\..*\.max_reservations_per_minute$/,
      );
      expectError(again.res, 429, 'LIMIT_EXCEEDED', 'runtime');
      expect(again.calls).toBe(0);
    }
    // Requests other than reservations still pass, counted against the tenant's limit alone.
    expect((await introspect(key.headers)).status).toBe(200);
  });

  it('takes a policy change into account within the tenant state’s bound', async () => {
    const t = await givenLimitedTenant();
    expect((await reserve(t.headers)).status).toBe(200); // no policy: the state cached
    const id = await policy(t, 'workspace:w', { max_reservations_per_minute: 1 });
    clock.advance(TENANT_STATE_MS - 1);
    for (let i = 0; i < 3; i++) expect((await reserve(t.headers)).status).toBe(200);
    clock.advance(1);
    expect((await reserve(t.headers)).status).toBe(200);
    expectRateLimited(await reserve(t.headers), `policy.${id}.max_reservations_per_minute`);
    // Raised: the counter seen full at 1 is counted again once the new limit is seen.
    expect(
      (await patchPolicy(id, { rate_limits: { max_reservations_per_minute: 3 } })).status,
    ).toBe(200);
    pastTheBound();
    expect((await reserve(t.headers)).headers.get('x-ratelimit-remaining')).toBe('1');
    // Disabled: no longer counted.
    expect((await patchPolicy(id, { status: 'DISABLED' })).status).toBe(200);
    pastTheBound();
    for (let i = 0; i < 3; i++) expect((await reserve(t.headers)).status).toBe(200);
  });

  it('limits commits of its scopes, found by the id’s hint or by the reservation read, and never settling otherwise', async () => {
    const t = await givenLimitedTenant();
    const id = await policy(t, 'workspace:w', { max_commits_per_minute: 2 });
    pastTheBound();
    const held: string[] = [];
    for (let i = 0; i < 4; i++) held.push(String((await reserve(t.headers)).body.reservation_id));
    const elsewhere = String((await reserve(t.headers, 'x')).body.reservation_id);
    expect(held[0]).toContain('~');
    const commit = (rid: string) => settle(t.headers, rid, 'commit', { actual: usd(10) });
    expect((await commit(held[0] as string)).status).toBe(200);
    // The id without its hint: the scopes come from the reservation read, counted all the same.
    const bare = (held[1] as string).slice(0, (held[1] as string).indexOf('~'));
    const second = await commit(bare);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('0');
    expectRateLimited(await commit(held[2] as string), `policy.${id}.max_commits_per_minute`);
    const charge = await settle(t.headers, held[2] as string, 'charges', { amount: usd(1) });
    expectRateLimited(charge, `policy.${id}.max_commits_per_minute`);
    // A hold of another scope commits; the held ones still release and extend.
    expect((await commit(elsewhere)).status).toBe(200);
    expect(
      (await settle(t.headers, held[2] as string, 'extend', { extend_by_ms: 1_000 })).status,
    ).toBe(200);
    expect((await settle(t.headers, held[3] as string, 'release', {})).status).toBe(200);
    // The refused commit goes through in the next window (its hold is still open).
    clock.advance(MINUTE);
    expect((await commit(held[2] as string)).status).toBe(200);
  });
});
