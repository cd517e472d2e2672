import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../functions/domain/policies.js';
import {
  countersFor,
  decide,
  policyCounters,
  RATE_WINDOW_MS,
  type RateClass,
  type RequestRateLimits,
  windowOf,
} from '../../functions/domain/rate-limits.js';

const limit = fc.option(fc.integer({ min: 1, max: 60_000 }), { nil: undefined });
const limits: fc.Arbitrary<RequestRateLimits> = fc.record({
  maxRequestsPerMinute: limit,
  maxReservationsPerMinute: limit,
  maxCommitsPerMinute: limit,
});
const rateClass = fc.constantFrom<RateClass>('request', 'reservation', 'commit', 'settle');

describe('rate limits (domain)', () => {
  it('counts a settling call against nothing, whatever the limits', () => {
    fc.assert(
      fc.property(limits, limits, (key, tenant) => {
        expect(countersFor('settle', 'key_1', key, tenant)).toEqual([]);
      }),
    );
  });

  it('never lets a key’s limit remove the tenant’s: every tenant limit that applies is counted', () => {
    fc.assert(
      fc.property(rateClass, limits, limits, (cls, key, tenant) => {
        const counters = countersFor(cls, 'key_1', key, tenant);
        const ofTenant = countersFor(cls, 'key_1', undefined, tenant);
        for (const c of ofTenant) expect(counters).toContainEqual(c);
      }),
    );
  });

  it('admits while every counter is within its limit, remaining the least left', () => {
    fc.assert(
      fc.property(rateClass, limits, limits, fc.nat(70_000), (cls, key, tenant, used) => {
        const counters = countersFor(cls, 'key_1', key, tenant);
        fc.pre(counters.length > 0);
        const counts = Object.fromEntries(
          counters.map((c) => [c.name, Math.min(c.limit, used + 1)]),
        );
        const decision = decide(counters, counts, true, 0);
        expect(decision).toMatchObject({ admitted: true, resetAtMs: RATE_WINDOW_MS });
        if (decision.admitted) {
          expect(decision.remaining).toBe(
            Math.min(...counters.map((c) => c.limit - Math.min(c.limit, used + 1))),
          );
        }
      }),
    );
  });

  it('names the counter that was full on a refusal', () => {
    const counters = countersFor(
      'reservation',
      'key_1',
      { maxRequestsPerMinute: 10 },
      {
        maxReservationsPerMinute: 2,
      },
    );
    const decision = decide(counters, { 'k.key_1.r': 5, 't.v': 2 }, false, 120_000);
    expect(decision).toEqual({
      admitted: false,
      full: { name: 't.v', limit: 2, label: 'tenant.max_reservations_per_minute' },
      resetAtMs: 180_000,
    });
  });

  it('aligns windows on the minute, the same in every container', () => {
    fc.assert(
      fc.property(fc.nat(2 ** 45), (now) => {
        const w = windowOf(now);
        expect(w % RATE_WINDOW_MS).toBe(0);
        expect(now - w).toBeGreaterThanOrEqual(0);
        expect(now - w).toBeLessThan(RATE_WINDOW_MS);
      }),
    );
  });

  it('counts a policy once, for the class it limits, when in force and matching a scope', () => {
    const policy = (id: string, over: Partial<Policy>): Policy => ({
      policyId: id,
      tenant: 'acme',
      name: id,
      scopePattern: 'workspace:w',
      priority: 0,
      status: 'ACTIVE',
      createdAt: '2026-01-01T00:00:00Z',
      owner: 'operator',
      rateLimits: { maxReservationsPerMinute: 12, maxCommitsPerMinute: 3 },
      ...over,
    });
    const policies = [
      policy('pol_a', {}),
      policy('pol_all', { scopePattern: 'tenant:acme/*' }),
      policy('pol_x', { scopePattern: 'workspace:x' }),
      policy('pol_off', { status: 'DISABLED' }),
      policy('pol_later', { effectiveFrom: '2027-01-01T00:00:00Z' }),
      policy('pol_caps', { rateLimits: undefined }),
    ];
    const scopes = ['tenant:acme', 'tenant:acme/workspace:w', 'tenant:acme/workspace:w/agent:a'];
    const now = Date.parse('2026-06-01T00:00:00Z');
    expect(policyCounters(policies, scopes, 'reservation', now)).toEqual([
      { name: 'p.pol_a.v', limit: 12, label: 'policy.pol_a.max_reservations_per_minute' },
      { name: 'p.pol_all.v', limit: 12, label: 'policy.pol_all.max_reservations_per_minute' },
    ]);
    expect(policyCounters(policies, scopes, 'commit', now).map((c) => c.name)).toEqual([
      'p.pol_a.c',
      'p.pol_all.c',
    ]);
    expect(policyCounters(policies, scopes, 'request', now)).toEqual([]);
    expect(policyCounters(policies, scopes, 'settle', now)).toEqual([]);
  });
});
