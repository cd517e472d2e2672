import { config } from '../config/settings.js';
import { type AppliedLimit, RetryLaterError } from '../domain/errors.js';
import {
  countersFor,
  decide,
  RATE_WINDOW_MS,
  type RateClass,
  type RateCounter,
  type RequestRateLimits,
  windowOf,
} from '../domain/rate-limits.js';
import { countRequest, getTenantRateLimits } from '../store/rate-counters.js';
import { TtlCache } from '../ttl-cache.js';
import type { RouteCaller } from './auth.js';

/**
 * Request-rate limits, applied right after authentication and before any budget work
 * (docs/decisions.md § Rate limits). A request with no limit of its key or tenant to count
 * against makes no DynamoDB call; one with any makes exactly one (store/rate-counters.ts),
 * except that a counter this container saw full answers 429 without a call until its window
 * ends (a flood past the limit costs nothing).
 *
 * A key's limits come with the key, a tenant's from its record (a projection of it, its own
 * small read: the tenant state of store/tenants.ts would bring its store into every bundle),
 * each cached per container for API_KEY_CACHE_TTL_MS (≤ 5 s): a change to either takes effect
 * everywhere within that bound.
 */
export async function admitRequest(
  caller: RouteCaller,
  rateClass: RateClass,
  now: number,
): Promise<AppliedLimit | undefined> {
  if (caller.kind !== 'tenant' || rateClass === 'settle') return undefined;
  const tenantLimits = await limitsOfTenant(caller.tenant, now);
  const counters = countersFor(rateClass, caller.keyId, caller.rateLimits, tenantLimits);
  if (counters.length === 0) return undefined;
  const window = windowOf(now);
  const known = knownFull(caller.tenant, window, counters);
  if (known) throw rateLimited(known, window + RATE_WINDOW_MS, now);
  const counted = await countRequest(caller.tenant, window, counters);
  const decision = decide(counters, counted.counts, counted.admitted, window);
  if (!decision.admitted) {
    noteFull(caller.tenant, window, decision.full);
    throw rateLimited(decision.full, decision.resetAtMs, now);
  }
  return { remaining: decision.remaining, resetAtMs: decision.resetAtMs };
}

const rateLimited = (full: RateCounter, resetAtMs: number, now: number) =>
  new RetryLaterError('RATE_LIMIT', Math.max(1, resetAtMs - now), {
    limit: { remaining: 0, resetAtMs, name: full.label },
  });

// Counters seen full in the current window, by tenant and counter, with the limit they were
// full at: a raised limit (seen within the cache bound) lets the next request count again.
let fullWindow = 0;
const full = new Map<string, number>();

function knownFull(
  tenant: string,
  window: number,
  counters: readonly RateCounter[],
): RateCounter | undefined {
  if (window !== fullWindow) return undefined;
  return counters.find((c) => full.get(`${tenant}\n${c.name}`) === c.limit);
}

function noteFull(tenant: string, window: number, counter: RateCounter): void {
  if (window !== fullWindow) {
    full.clear();
    fullWindow = window;
  }
  if (full.size >= CACHE_MAX) full.clear();
  full.set(`${tenant}\n${counter.name}`, counter.limit);
}

const CACHE_MAX = 10_000;
const tenants = new TtlCache<RequestRateLimits | undefined>(
  () => config.API_KEY_CACHE_TTL_MS,
  CACHE_MAX,
);

async function limitsOfTenant(tenant: string, now: number) {
  const hit = tenants.get(tenant, now);
  if (hit) return hit.value;
  const limits = await getTenantRateLimits(tenant);
  tenants.set(tenant, limits, now);
  return limits;
}

/** The headers of an admitted request a limit applied to (SPEC names both as optional). */
export const rateLimitHeaders = (limit: AppliedLimit | undefined): Record<string, string> =>
  limit
    ? {
        'x-ratelimit-remaining': String(limit.remaining),
        'x-ratelimit-reset': String(Math.ceil(limit.resetAtMs / 1000)),
      }
    : {};
