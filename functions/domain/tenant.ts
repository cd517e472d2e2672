import { DomainError } from './errors.js';
import type { OveragePolicy } from './ledger.js';
import type { RequestRateLimits } from './rate-limits.js';

/** ACTIVE ↔ SUSPENDED, either → CLOSED (terminal); docs/decisions.md § Control plane. */
export const TENANT_STATUSES = ['ACTIVE', 'SUSPENDED', 'CLOSED'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

/** The reference's sort keys of the tenant listing. */
export const TENANT_SORT_KEYS = ['tenant_id', 'name', 'status', 'created_at'] as const;
export type TenantSortKey = (typeof TENANT_SORT_KEYS)[number];

/**
 * How a scope without a budget counts (docs/decisions.md § Unbudgeted scopes): SPEC's rule 6,
 * zero allocation (a reservation against it is refused 409 BUDGET_EXCEEDED), the default; or
 * the reference runtime's, skipped during enforcement, at least one derived scope budgeted
 * (404 NOT_FOUND otherwise).
 */
export const UNBUDGETED_SCOPES = ['ZERO_ALLOCATION', 'SKIP'] as const;
export type UnbudgetedScopes = (typeof UNBUDGETED_SCOPES)[number];

/**
 * The reference's reservation_expiry_policy, as far as it describes what happens here: a hold
 * returns to its budgets once its grace period has passed. MANUAL_CLEANUP (holds kept until
 * released) is refused: nothing here keeps an expired hold.
 */
export const EXPIRY_POLICIES = ['AUTO_RELEASE', 'GRACE_ONLY'] as const;
export type ExpiryPolicy = (typeof EXPIRY_POLICIES)[number];

/** The reference's tenant defaults and limits, and our unbudgeted-scope option; absent: unset. */
export interface TenantSettings {
  /** What a reserve or event that names no overage policy gets (else a policy's, else REJECT). */
  readonly defaultCommitOveragePolicy?: OveragePolicy | undefined;
  /** What a reserve that names no ttl_ms gets (else a policy's, else 60 s). */
  readonly defaultReservationTtlMs?: number | undefined;
  /** A longer ttl_ms is capped to it (not refused), as the reference does. */
  readonly maxReservationTtlMs?: number | undefined;
  /** Extensions a reservation may have; the next is 409 MAX_EXTENSIONS_EXCEEDED. */
  readonly maxReservationExtensions?: number | undefined;
  readonly reservationExpiryPolicy?: ExpiryPolicy | undefined;
  /** Absent: ZERO_ALLOCATION, SPEC's rule. */
  readonly unbudgetedScopes?: UnbudgetedScopes | undefined;
}

export interface Tenant {
  readonly tenantId: string;
  readonly name: string;
  readonly status: TenantStatus;
  readonly createdAt: string;
  /** Absent until the first change. */
  readonly updatedAt?: string | undefined;
  readonly parentTenantId?: string | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  /** Absent: every setting at its default. */
  readonly settings?: TenantSettings | undefined;
  /** Request-rate limits of the whole tenant (docs/decisions.md § Rate limits); absent: none. */
  readonly rateLimits?: RequestRateLimits | undefined;
  /** When it was last suspended; absent once reactivated. */
  readonly suspendedAt?: string | undefined;
  readonly closedAt?: string | undefined;
}

/** A setting's change: a value sets it, null unsets it (back to the default). */
export type SettingsChange = { readonly [K in keyof TenantSettings]?: TenantSettings[K] | null };

export interface TenantChange {
  readonly name?: string | undefined;
  readonly status?: TenantStatus | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  readonly settings?: SettingsChange | undefined;
  /** The new limits, whole (null or none set: no limits). */
  readonly rateLimits?: RequestRateLimits | null | undefined;
}

/**
 * The tenant after a change, or the reason it may not change: a CLOSED tenant stays CLOSED
 * (closing again is allowed: it resumes the close cascade), nothing else about it changes.
 */
export function changedTenant(t: Tenant, change: TenantChange, at: string): Tenant {
  const settings = changedSettings(t.settings ?? {}, change.settings ?? {});
  const next: Tenant = {
    ...t,
    ...(change.name !== undefined && { name: change.name }),
    ...(change.status !== undefined && { status: change.status }),
    ...(change.metadata !== undefined && { metadata: change.metadata }),
    settings: Object.keys(settings).length > 0 ? settings : undefined,
    ...(change.rateLimits !== undefined && {
      rateLimits:
        change.rateLimits && Object.keys(change.rateLimits).length > 0
          ? change.rateLimits
          : undefined,
    }),
  };
  if (same(next, t)) return t;
  if (t.status === 'CLOSED') throw tenantClosed(t.tenantId);
  const moved = next.status !== t.status;
  return {
    ...next,
    updatedAt: at,
    suspendedAt: next.status === 'SUSPENDED' ? (moved ? at : t.suspendedAt) : undefined,
    closedAt: next.status === 'CLOSED' ? at : undefined,
  };
}

const same = (a: Tenant, b: Tenant): boolean => JSON.stringify(a) === JSON.stringify(b);

function changedSettings(s: TenantSettings, c: SettingsChange): TenantSettings {
  const next: Record<string, unknown> = { ...s };
  for (const [key, value] of Object.entries(c)) {
    if (value === undefined) continue;
    if (value === null) delete next[key];
    else next[key] = value;
  }
  // Stored in one order, so an unchanged tenant compares equal whatever order a change named.
  return Object.fromEntries(
    SETTING_KEYS.flatMap((k) => (next[k] === undefined ? [] : [[k, next[k]]])),
  ) as TenantSettings;
}

const SETTING_KEYS: readonly (keyof TenantSettings)[] = [
  'defaultCommitOveragePolicy',
  'defaultReservationTtlMs',
  'maxReservationTtlMs',
  'maxReservationExtensions',
  'reservationExpiryPolicy',
  'unbudgetedScopes',
];

export const tenantClosed = (tenantId: string) =>
  new DomainError('TENANT_CLOSED', `tenant ${tenantId} is closed`, { tenant_id: tenantId });

/**
 * New work (a reservation, a decide, an event) is refused for a tenant that is not ACTIVE:
 * SUSPENDED answers 403 with the reason; CLOSED answers 409 TENANT_CLOSED (the reference's
 * code). Settling what is already held is never refused here.
 */
export function requireOpenForNewWork(tenantId: string, status: TenantStatus | undefined): void {
  if (status === 'SUSPENDED') {
    throw new DomainError('FORBIDDEN', `tenant ${tenantId} is suspended`, {
      reason: 'TENANT_SUSPENDED',
      tenant_id: tenantId,
    });
  }
  if (status === 'CLOSED') throw tenantClosed(tenantId);
}
