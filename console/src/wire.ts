import type {
  BudgetStatus,
  FundOperation,
  KeyStatus,
  PeriodKind,
  Permission,
  ReservationStatus,
  TenantStatus,
  Unit,
} from './constants.js';

/**
 * The wire shapes the console reads: the admin API's (the reference's names, snake_case) and
 * SPEC's Reservation. Only the fields the console shows; the server may send more.
 */
export interface Amount {
  readonly unit: Unit;
  readonly amount: number;
}

export interface Page {
  readonly has_more: boolean;
  readonly next_cursor?: string;
}

export interface Tenant {
  readonly tenant_id: string;
  readonly name: string;
  readonly status: TenantStatus;
  readonly created_at: string;
  readonly updated_at?: string;
}
export interface TenantPage extends Page {
  readonly tenants: readonly Tenant[];
}

export interface Caps {
  readonly max_tokens?: number;
  readonly max_steps_remaining?: number;
  readonly tool_allowlist?: readonly string[];
  readonly tool_denylist?: readonly string[];
  readonly cooldown_ms?: number;
}

export interface Budget {
  readonly ledger_id: string;
  readonly tenant_id: string;
  readonly scope: string;
  readonly unit: Unit;
  readonly status: BudgetStatus;
  readonly allocated: Amount;
  readonly spent: Amount;
  readonly reserved: Amount;
  readonly remaining: Amount;
  readonly debt: Amount;
  readonly overdraft_limit: Amount;
  readonly is_over_limit: boolean;
  readonly caps?: Caps;
  readonly caps_when_remaining_below_bps?: number;
  /** Rolling budgets: the rule and the current period. */
  readonly period?: PeriodKind;
  readonly period_anchor_day?: number;
  readonly period_start?: string;
  readonly period_end?: string;
  readonly created_at: string;
  readonly updated_at?: string;
}
export interface BudgetPage extends Page {
  readonly ledgers: readonly Budget[];
}

/** A closed period of a rolling budget, as it ended. */
export interface ClosedPeriod {
  readonly period_start: string;
  readonly period_end: string;
  readonly allocated: Amount;
  readonly spent: Amount;
  readonly reserved: Amount;
  readonly debt: Amount;
  readonly remaining: Amount;
}
export interface ClosedPeriodPage extends Page {
  readonly periods: readonly ClosedPeriod[];
}

export interface ApiKey {
  readonly key_id: string;
  readonly tenant_id: string;
  readonly key_prefix: string;
  readonly name: string;
  readonly description?: string;
  readonly permissions: readonly Permission[];
  readonly status: KeyStatus;
  readonly created_at: string;
  readonly expires_at?: string;
  readonly revoked_at?: string;
  readonly revoked_reason?: string;
}
export interface ApiKeyPage extends Page {
  readonly keys: readonly ApiKey[];
}
export interface CreatedApiKey {
  readonly key_id: string;
  readonly key_prefix: string;
  readonly key_secret: string;
  readonly tenant_id: string;
  readonly name: string;
}

export interface Reservation {
  readonly reservation_id: string;
  readonly status: ReservationStatus;
  readonly idempotency_key: string;
  readonly subject: Readonly<Record<string, unknown>>;
  readonly action: { readonly kind: string; readonly name: string };
  readonly reserved: Amount;
  readonly committed?: Amount;
  readonly created_at_ms: number;
  readonly expires_at_ms: number;
  readonly finalized_at_ms?: number;
  readonly scope_path: string;
}
export interface ReservationPage extends Page {
  readonly reservations: readonly Reservation[];
}

export interface AuditEntry {
  readonly log_id: string;
  readonly timestamp: string;
  readonly tenant_id: string;
  readonly key_id?: string;
  readonly operation: string;
  readonly resource_type: string;
  readonly resource_id: string;
  readonly request_id: string;
  readonly status: number;
  readonly metadata: {
    readonly actor: string;
    readonly before?: unknown;
    readonly after?: unknown;
    readonly detail?: unknown;
  };
}
export interface AuditPage extends Page {
  readonly logs: readonly AuditEntry[];
}

export interface FundRequest {
  readonly operation: FundOperation;
  readonly amount: Amount;
  readonly idempotency_key: string;
  readonly reason?: string;
}

export interface Introspection {
  readonly authenticated: boolean;
  readonly auth_type: 'admin' | 'tenant';
}
