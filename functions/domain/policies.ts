import { type Caps, mergeCaps } from './caps.js';
import { invalidRequest } from './errors.js';
import type { OveragePolicy } from './ledger.js';
import { canonicalValue, LEVELS, type Level, MAX_SCOPE_LENGTH, SEGMENT_VALUE } from './scopes.js';
import type { TenantSettings } from './tenant.js';

// Policies (the reference's Policy): caps and reservation limits by scope pattern. Unlike the
// reference, which stores them, they are enforced: every reserve, dry run and decide under a
// matching policy gets its caps (merged with the budgets' by the strictest-wins rule) and its
// TTL limits; a request that names no overage policy or TTL gets the policy's default
// (docs/decisions.md § Policies); its rate limits count the reserves and commits of its scopes
// (domain/rate-limits.ts policyCounters, docs/decisions.md § Rate limits).

export const POLICY_STATUSES = ['ACTIVE', 'DISABLED'] as const;
export type PolicyStatus = (typeof POLICY_STATUSES)[number];

/** The reference's ReservationTtlOverride. */
export interface TtlOverride {
  readonly defaultTtlMs?: number | undefined;
  readonly maxTtlMs?: number | undefined;
  readonly maxExtensions?: number | undefined;
}

/** The reference's RateLimits: counted per policy by the rate limiter (domain/rate-limits.ts). */
export interface RateLimits {
  readonly maxReservationsPerMinute?: number | undefined;
  readonly maxCommitsPerMinute?: number | undefined;
}

export interface Policy {
  readonly policyId: string;
  readonly tenant: string;
  readonly name: string;
  readonly description?: string | undefined;
  /** Canonical: standard values in lowercase, as scope paths carry them. */
  readonly scopePattern: string;
  readonly priority: number;
  readonly caps?: Caps | undefined;
  readonly commitOveragePolicy?: OveragePolicy | undefined;
  readonly ttl?: TtlOverride | undefined;
  readonly rateLimits?: RateLimits | undefined;
  readonly status: PolicyStatus;
  readonly effectiveFrom?: string | undefined;
  readonly effectiveUntil?: string | undefined;
  readonly createdAt: string;
  readonly updatedAt?: string | undefined;
  /**
   * Who made it: the operator's policies are changed by the operator only, so a tenant key with
   * `policies:write` can add limits but never lift one it is held to.
   */
  readonly owner: 'operator' | 'tenant';
}

/** What a change may set; `null` removes an optional setting. */
export interface PolicyChange {
  readonly name?: string | undefined;
  readonly description?: string | null | undefined;
  readonly scopePattern?: string | undefined;
  readonly priority?: number | undefined;
  readonly caps?: Caps | null | undefined;
  readonly commitOveragePolicy?: OveragePolicy | null | undefined;
  readonly ttl?: TtlOverride | null | undefined;
  readonly rateLimits?: RateLimits | null | undefined;
  readonly status?: PolicyStatus | undefined;
  readonly effectiveFrom?: string | null | undefined;
  readonly effectiveUntil?: string | null | undefined;
}

/** At most this many policies per tenant: every reserve's admission reads them all (cached). */
export const MAX_POLICIES_PER_TENANT = 100;

const WILDCARD = '*';
const KINDS: readonly string[] = [...LEVELS, 'dimensions'];

/**
 * A scope pattern, canonical. Segments are `<level>:<value>` as in scope paths, where the value
 * may be `*` (any value at that level); a last segment `*` stands for one or more levels below
 * (the reference's "tenant:acme/*", all descendants). A pattern rooted at `tenant:` names the
 * policy's own tenant and matches from the root; any other pattern matches the end of a scope
 * path ("agent:*": every agent's scope; "workspace:eng/*": everything below workspace eng).
 */
export function canonicalPattern(pattern: string, tenant: string): string {
  const field = { field: 'scope_pattern' };
  if (pattern.length === 0 || pattern.length > MAX_SCOPE_LENGTH) {
    throw invalidRequest(`scope_pattern must be 1 to ${MAX_SCOPE_LENGTH} characters`, field);
  }
  const parts = pattern.split('/');
  const segments = parts.map((text, i) => {
    if (text === WILDCARD && i === parts.length - 1 && i > 0) return text;
    const colon = text.indexOf(':');
    const kind = text.slice(0, colon);
    const value = text.slice(colon + 1);
    if (colon < 0 || !KINDS.includes(kind)) {
      throw invalidRequest(
        `scope_pattern segment '${text}' must be <level>:<value>, <level>:*, or a last '*'`,
        field,
      );
    }
    if (kind === 'tenant' && i > 0) {
      throw invalidRequest('scope_pattern may name tenant: only as its first segment', field);
    }
    if (kind === 'tenant' && value !== tenant) {
      throw invalidRequest(`scope_pattern must name the policy's own tenant '${tenant}'`, field);
    }
    if (value !== WILDCARD && !validValue(kind, value)) {
      throw invalidRequest(`scope_pattern segment '${text}' has an invalid value`, field);
    }
    return `${kind}:${value === WILDCARD ? WILDCARD : canonicalValue(kind as Level, value)}`;
  });
  return segments.join('/');
}

const validValue = (kind: string, value: string): boolean => {
  if (kind !== 'dimensions') return SEGMENT_VALUE.test(value);
  const eq = value.indexOf('=');
  return eq > 0 && SEGMENT_VALUE.test(value.slice(0, eq)) && value.length > eq + 1;
};

const segmentMatches = (pattern: string, segment: string): boolean => {
  if (pattern === segment) return true;
  if (!pattern.endsWith(`:${WILDCARD}`)) return false;
  return segment.startsWith(pattern.slice(0, -1)) && segment.length > pattern.length - 1;
};

/** Whether a canonical pattern matches a canonical scope path. */
export function patternMatches(pattern: string, scope: string): boolean {
  const wanted = pattern.split('/');
  const path = scope.split('/');
  const descendants = wanted[wanted.length - 1] === WILDCARD;
  const fixed = descendants ? wanted.slice(0, -1) : wanted;
  const fitsAt = (start: number) => {
    const rest = path.length - start;
    if (descendants ? rest <= fixed.length : rest !== fixed.length) return false;
    return fixed.every((p, i) => segmentMatches(p, path[start + i] ?? ''));
  };
  if (fixed[0]?.startsWith('tenant:')) return fitsAt(0);
  // Relative: its segments anywhere below the tenant, ending the path (or above its end, '/*').
  for (let start = 1; start + fixed.length <= path.length; start++) if (fitsAt(start)) return true;
  return false;
}

/** In force at `nowMs`: ACTIVE, and inside its effective window (either end open). */
export function inForce(p: Policy, nowMs: number): boolean {
  if (p.status !== 'ACTIVE') return false;
  if (p.effectiveFrom !== undefined && Date.parse(p.effectiveFrom) > nowMs) return false;
  return p.effectiveUntil === undefined || Date.parse(p.effectiveUntil) > nowMs;
}

/** What the policies that apply to a request say, merged. */
export interface PolicyEffect {
  /** The caps of every applying policy, merged strictest-wins (domain/caps.ts mergeCaps). */
  readonly caps?: Caps | undefined;
  /** The default of the highest-priority policy that sets one. */
  readonly commitOveragePolicy?: OveragePolicy | undefined;
  readonly defaultTtlMs?: number | undefined;
  /** The smallest of every applying policy's: a limit is never lifted by another policy. */
  readonly maxTtlMs?: number | undefined;
  readonly maxExtensions?: number | undefined;
}

/** Priority first (higher first), then the more specific pattern, then the id: a total order. */
const byPrecedence = (a: Policy, b: Policy): number =>
  b.priority - a.priority ||
  b.scopePattern.length - a.scopePattern.length ||
  (a.policyId < b.policyId ? -1 : a.policyId > b.policyId ? 1 : 0);

const smallest = (values: readonly (number | undefined)[]): number | undefined => {
  const set = values.filter((v): v is number => v !== undefined);
  return set.length > 0 ? Math.min(...set) : undefined;
};

/**
 * The policies in force at `nowMs` whose pattern matches any scope the request affects, and
 * what they say together: defaults by precedence, limits and caps strictest-wins.
 */
export function policyEffect(
  policies: readonly Policy[],
  scopes: readonly string[],
  nowMs: number,
): PolicyEffect {
  const applying = policies
    .filter((p) => inForce(p, nowMs) && scopes.some((s) => patternMatches(p.scopePattern, s)))
    .sort(byPrecedence);
  if (applying.length === 0) return {};
  let caps: Caps | undefined;
  for (const p of applying) if (p.caps) caps = mergeCaps(caps ?? {}, p.caps);
  const first = <T>(pick: (p: Policy) => T | undefined) =>
    applying.map(pick).find((v) => v !== undefined);
  return {
    ...(caps && { caps }),
    ...defined(
      'commitOveragePolicy',
      first((p) => p.commitOveragePolicy),
    ),
    ...defined(
      'defaultTtlMs',
      first((p) => p.ttl?.defaultTtlMs),
    ),
    ...defined('maxTtlMs', smallest(applying.map((p) => p.ttl?.maxTtlMs))),
    ...defined('maxExtensions', smallest(applying.map((p) => p.ttl?.maxExtensions))),
  };
}

const defined = <K extends string, V>(key: K, value: V | undefined) =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;

/** The policy after a change, or itself when nothing changes. */
export function changedPolicy(p: Policy, c: PolicyChange, at: string): Policy {
  const next: Policy = {
    ...p,
    ...(c.name !== undefined && { name: c.name }),
    ...(c.scopePattern !== undefined && { scopePattern: c.scopePattern }),
    ...(c.priority !== undefined && { priority: c.priority }),
    ...(c.status !== undefined && { status: c.status }),
    ...optional('description', c.description, p.description),
    ...optional('caps', c.caps, p.caps),
    ...optional('commitOveragePolicy', c.commitOveragePolicy, p.commitOveragePolicy),
    ...optional('ttl', c.ttl, p.ttl),
    ...optional('rateLimits', c.rateLimits, p.rateLimits),
    ...optional('effectiveFrom', c.effectiveFrom, p.effectiveFrom),
    ...optional('effectiveUntil', c.effectiveUntil, p.effectiveUntil),
  };
  return JSON.stringify(next) === JSON.stringify(p) ? p : { ...next, updatedAt: at };
}

/** A change's optional field: absent keeps it, null removes it, a value replaces it. */
const optional = <K extends string, V>(key: K, change: V | null | undefined, was: V | undefined) =>
  ({ [key]: change === undefined ? was : change === null ? undefined : change }) as Record<
    K,
    V | undefined
  >;

/** A window whose end is not after its start is refused: it would never be in force. */
export function requireWindow(p: Pick<Policy, 'effectiveFrom' | 'effectiveUntil'>): void {
  if (
    p.effectiveFrom !== undefined &&
    p.effectiveUntil !== undefined &&
    Date.parse(p.effectiveUntil) <= Date.parse(p.effectiveFrom)
  ) {
    throw invalidRequest('effective_until must be after effective_from', {
      field: 'effective_until',
    });
  }
}

/** SPEC's defaults, where neither the request nor a policy nor the tenant says otherwise. */
export const DEFAULT_TTL_MS = 60_000;
export const DEFAULT_OVERAGE_POLICY: OveragePolicy = 'REJECT';

/** What a reservation or event is held to, the request's choices resolved. */
export interface Terms {
  readonly ttlMs: number;
  readonly overagePolicy: OveragePolicy;
  /** Extensions it may have; absent: no limit. */
  readonly maxExtensions?: number | undefined;
}

/**
 * The request's choice, else the applying policies', else the tenant's default, else SPEC's; a
 * TTL above the smallest maximum of the policies and the tenant is capped to it (the reference
 * caps rather than refuses), and the extension limit is the smallest of theirs.
 */
export function termsOf(
  asked: {
    readonly ttlMs?: number | undefined;
    readonly overagePolicy?: OveragePolicy | undefined;
  },
  settings: TenantSettings,
  effect: PolicyEffect,
): Terms {
  const ttl =
    asked.ttlMs ?? effect.defaultTtlMs ?? settings.defaultReservationTtlMs ?? DEFAULT_TTL_MS;
  const maxTtl = smallest([effect.maxTtlMs, settings.maxReservationTtlMs]);
  const maxExtensions = smallest([effect.maxExtensions, settings.maxReservationExtensions]);
  return {
    ttlMs: maxTtl === undefined ? ttl : Math.min(ttl, maxTtl),
    overagePolicy:
      asked.overagePolicy ??
      effect.commitOveragePolicy ??
      settings.defaultCommitOveragePolicy ??
      DEFAULT_OVERAGE_POLICY,
    ...(maxExtensions !== undefined && { maxExtensions }),
  };
}
