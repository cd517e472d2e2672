import { inForce, type Policy, patternMatches, type RateLimits } from './policies.js';

/**
 * Request-rate limits of a tenant and of its API keys (issue 25 point 1; docs/decisions.md §
 * Rate limits): the reference policy's two, and ours on every call. Absent: no limit (the edge's
 * per-key WAF rule is the only one, docs/decisions.md § Edge).
 */
export interface RequestRateLimits extends RateLimits {
  readonly maxRequestsPerMinute?: number | undefined;
}

/** Each limit's wire name, in the order a body lists them. */
export const RATE_LIMIT_FIELDS = {
  maxRequestsPerMinute: 'max_requests_per_minute',
  maxReservationsPerMinute: 'max_reservations_per_minute',
  maxCommitsPerMinute: 'max_commits_per_minute',
} as const satisfies Record<keyof RequestRateLimits, string>;

/**
 * What a route counts against. `reservation`: new holds and direct debits (requests and
 * reservations); `commit`: commits and charges (commits only: a bucket new work never fills);
 * `settle`: release and extend of holds already granted — never counted, so a tenant's own new
 * work cannot starve them (their number is bounded by the holds the reservation limit let
 * through and their extensions); `request`: everything else a tenant key calls.
 */
export type RateClass = 'request' | 'reservation' | 'commit' | 'settle';

/** Fixed windows of one minute, aligned on the epoch: every container agrees on them. */
export const RATE_WINDOW_MS = 60_000;

export const windowOf = (now: number): number => Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS;

/** One counter a request adds to, and the most it may reach within the window. */
export interface RateCounter {
  /**
   * `<owner>.<limit>`: `t` the tenant, `k.<key id>` a key, `p.<policy id>` a policy; `r`
   * requests, `v` reservations, `c` commits.
   */
  readonly name: string;
  readonly limit: number;
  /** The wire name of the limit, for the refusal's details: `key.max_requests_per_minute`. */
  readonly label: string;
}

const COUNTED: Record<RateClass, readonly (keyof RequestRateLimits)[]> = {
  request: ['maxRequestsPerMinute'],
  reservation: ['maxRequestsPerMinute', 'maxReservationsPerMinute'],
  commit: ['maxCommitsPerMinute'],
  settle: [],
};

const SHORT: Record<keyof RequestRateLimits, string> = {
  maxRequestsPerMinute: 'r',
  maxReservationsPerMinute: 'v',
  maxCommitsPerMinute: 'c',
};

/**
 * The counters a request of `rateClass` adds to: the key's and the tenant's, each only where a
 * limit is set. Both apply, so a key's limit only ever narrows its tenant's: a key counts
 * against its own limit and against the tenant's, whatever it says.
 */
export function countersFor(
  rateClass: RateClass,
  keyId: string,
  key: RequestRateLimits | undefined,
  tenant: RequestRateLimits | undefined,
): RateCounter[] {
  const counters: RateCounter[] = [];
  for (const limit of COUNTED[rateClass]) {
    const ofKey = key?.[limit];
    if (ofKey !== undefined) {
      counters.push({
        name: `k.${keyId}.${SHORT[limit]}`,
        limit: ofKey,
        label: `key.${RATE_LIMIT_FIELDS[limit]}`,
      });
    }
    const ofTenant = tenant?.[limit];
    if (ofTenant !== undefined) {
      counters.push({
        name: `t.${SHORT[limit]}`,
        limit: ofTenant,
        label: `tenant.${RATE_LIMIT_FIELDS[limit]}`,
      });
    }
  }
  return counters;
}

/**
 * The counters of the policies in force at `nowMs` whose pattern matches any of `scopes` and
 * that limit `rateClass` (a policy limits reservations and commits, not requests): one counter
 * per policy, shared by every scope it matches (the reference's "maximum reserve requests per
 * minute for matching scopes"; docs/decisions.md § Rate limits).
 */
export function policyCounters(
  policies: readonly Policy[],
  scopes: readonly string[],
  rateClass: RateClass,
  nowMs: number,
): RateCounter[] {
  const limit =
    rateClass === 'reservation'
      ? 'maxReservationsPerMinute'
      : rateClass === 'commit'
        ? 'maxCommitsPerMinute'
        : undefined;
  if (!limit) return [];
  const counters: RateCounter[] = [];
  for (const p of policies) {
    const max = p.rateLimits?.[limit];
    if (max === undefined || !inForce(p, nowMs)) continue;
    if (!scopes.some((s) => patternMatches(p.scopePattern, s))) continue;
    counters.push({
      name: `p.${p.policyId}.${SHORT[limit]}`,
      limit: max,
      label: `policy.${p.policyId}.${RATE_LIMIT_FIELDS[limit]}`,
    });
  }
  return counters;
}

/**
 * One request's count, made by the edge (http/rate-limits.ts) with its key's and tenant's
 * counters; a reserve's or a commit's use case adds the counters of the policies of its scopes
 * once it knows them (before any budget write), and every counter is counted in one write.
 */
export interface RequestCount {
  /**
   * Counts the request against `policies`' counters and, the first time, the key's and tenant's
   * (each counter once per request); throws 429 RATE_LIMIT when one is full.
   */
  add(policies: readonly RateCounter[]): Promise<void>;
}

/** What counting a request decided: admitted, with what is left; or the counter that was full. */
export type RateDecision =
  | { readonly admitted: true; readonly remaining: number; readonly resetAtMs: number }
  | { readonly admitted: false; readonly full: RateCounter; readonly resetAtMs: number };

/**
 * The decision, from the counts after the request was added (admitted) or as they were when
 * a counter was already at its limit (refused: nothing was added).
 */
export function decide(
  counters: readonly RateCounter[],
  counts: Readonly<Record<string, number>>,
  admitted: boolean,
  window: number,
): RateDecision {
  const resetAtMs = window + RATE_WINDOW_MS;
  if (!admitted) {
    const full = counters.find((c) => (counts[c.name] ?? 0) >= c.limit) ?? counters[0];
    if (!full) throw new Error('a refusal names a counter');
    return { admitted: false, full, resetAtMs };
  }
  const remaining = Math.min(...counters.map((c) => c.limit - (counts[c.name] ?? 0)));
  return { admitted: true, remaining: Math.max(0, remaining), resetAtMs };
}

/** The limits of a body, as the domain names them (absent fields dropped). */
export const rateLimitsOf = (wire: {
  readonly max_requests_per_minute?: number | undefined;
  readonly max_reservations_per_minute?: number | undefined;
  readonly max_commits_per_minute?: number | undefined;
}): RequestRateLimits => ({
  ...(wire.max_requests_per_minute !== undefined && {
    maxRequestsPerMinute: wire.max_requests_per_minute,
  }),
  ...(wire.max_reservations_per_minute !== undefined && {
    maxReservationsPerMinute: wire.max_reservations_per_minute,
  }),
  ...(wire.max_commits_per_minute !== undefined && {
    maxCommitsPerMinute: wire.max_commits_per_minute,
  }),
});

/** Their wire form, each only when set; undefined when none is. */
export function wireRateLimits(limits: RequestRateLimits | undefined) {
  if (!limits) return undefined;
  const wire: Record<string, number> = {};
  for (const [name, field] of Object.entries(RATE_LIMIT_FIELDS)) {
    const value = limits[name as keyof RequestRateLimits];
    if (value !== undefined) wire[field] = value;
  }
  return Object.keys(wire).length > 0
    ? (wire as {
        max_requests_per_minute?: number;
        max_reservations_per_minute?: number;
        max_commits_per_minute?: number;
      })
    : undefined;
}

/** Limits as stored (a map of numbers on a tenant or key item), undefined when none is. */
export function rateLimitsFrom(stored: unknown): RequestRateLimits | undefined {
  if (!stored || typeof stored !== 'object' || Object.keys(stored).length === 0) return undefined;
  return Object.fromEntries(
    Object.entries(stored).map(([k, v]) => [k, Number(v)]),
  ) as RequestRateLimits;
}
