import { config } from '../config/settings.js';
import { type AppliedLimit, RetryLaterError } from '../domain/errors.js';
import {
  countersFor,
  decide,
  RATE_WINDOW_MS,
  type RateClass,
  type RateCounter,
  type RequestCount,
  type RequestRateLimits,
  windowOf,
} from '../domain/rate-limits.js';
import { countRequest, getTenantRateLimits } from '../store/rate-counters.js';
import { TtlCache } from '../ttl-cache.js';
import type { RouteCaller } from './auth.js';

/**
 * Request-rate limits, applied right after authentication and before any budget work
 * (docs/decisions.md § Rate limits). A request with no limit of its key, tenant or policies to
 * count against makes no DynamoDB call; one with any makes exactly one (store/rate-counters.ts),
 * except that a counter this container saw full answers 429 without a call until its window
 * ends (a flood past the limit costs nothing).
 *
 * A plain request is counted here at once. A reserve or event (`reservation`) and a commit or
 * charge (`commit`) are counted once their use case knows their scopes, so that the policies
 * matching them join the key's and tenant's counters in the same write: the handler hands the
 * use case the request's count (`RequestCount`), and counts it itself if the use case failed
 * before it did (a 400 counts as today). A counter already seen full refuses them here, before
 * the body is parsed.
 *
 * A key's limits come with the key, a tenant's from its record (a projection of it, its own
 * small read: the tenant state of store/tenants.ts would bring its store into every bundle),
 * each cached per container for API_KEY_CACHE_TTL_MS (≤ 5 s): a change to either takes effect
 * everywhere within that bound (policies come with the tenant state, within its 5 s).
 */
export async function admitRequest(
  caller: RouteCaller,
  rateClass: RateClass,
  now: number,
): Promise<RequestCounter | undefined> {
  if (caller.kind !== 'tenant' || rateClass === 'settle') return undefined;
  const tenantLimits = await limitsOfTenant(caller.tenant, now);
  const counters = countersFor(rateClass, caller.keyId, caller.rateLimits, tenantLimits);
  const count = new RequestCounter(caller.tenant, counters, now);
  count.refuseKnownFull(counters);
  if (rateClass === 'request') await count.add([]);
  return count;
}

/** One request's count: its key's and tenant's counters, and its policies' once added. */
export class RequestCounter implements RequestCount {
  private readonly window: number;
  /** Names of the counters this request counted (or tried to). */
  private readonly counted = new Set<string>();
  /** Whether the key's and tenant's counters were counted (or tried). */
  done = false;
  /** The limit left after the count, the least of every counter's (headers). */
  applied: AppliedLimit | undefined;

  constructor(
    private readonly tenant: string,
    private readonly base: readonly RateCounter[],
    private readonly now: number,
  ) {
    this.window = windowOf(now);
  }

  async add(policies: readonly RateCounter[]): Promise<void> {
    const counters = [...(this.done ? [] : this.base), ...policies].filter(
      (c) => !this.counted.has(c.name),
    );
    this.done = true;
    for (const c of counters) this.counted.add(c.name);
    if (counters.length === 0) return;
    this.refuseKnownFull(counters);
    const counted = await countRequest(this.tenant, this.window, counters);
    const decision = decide(counters, counted.counts, counted.admitted, this.window);
    if (!decision.admitted) {
      seenFull.set(fullKey(this.tenant, this.window, decision.full), true, this.now);
      throw rateLimited(decision.full, decision.resetAtMs, this.now);
    }
    const remaining = Math.min(decision.remaining, this.applied?.remaining ?? Infinity);
    this.applied = { remaining, resetAtMs: decision.resetAtMs };
  }

  /** 429 without a call when this container saw one of `counters` full in this window. */
  refuseKnownFull(counters: readonly RateCounter[]): void {
    const full = counters.find((c) => seenFull.get(fullKey(this.tenant, this.window, c), this.now));
    if (full) throw rateLimited(full, this.window + RATE_WINDOW_MS, this.now);
  }
}

const rateLimited = (full: RateCounter, resetAtMs: number, now: number) =>
  new RetryLaterError('RATE_LIMIT', Math.max(1, resetAtMs - now), {
    limit: { remaining: 0, resetAtMs, name: full.label },
  });

/**
 * Counters seen full, by tenant, counter, the limit they were full at and the window: a count
 * only grows within its window, so every request counting against one is refused until the
 * window ends — unless the limit changed (a raised one, seen within the cache bound, lets the
 * next request count again).
 */
const seenFull = new TtlCache<true>(() => RATE_WINDOW_MS);
const fullKey = (tenant: string, window: number, c: RateCounter) =>
  `${tenant}\n${c.name}\n${c.limit}\n${window}`;

const tenants = new TtlCache<RequestRateLimits | undefined>(() => config.API_KEY_CACHE_TTL_MS);

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
