import type { components } from './generated/admin.js';

/**
 * The API's closed vocabularies as values, for menus, flag choices and validation. Each list is
 * checked against the generated types both ways: a value the server drops fails `satisfies`, a
 * value it adds fails `complete` (`npm run typecheck`).
 */
type Schemas = components['schemas'];

export type Unit = Schemas['Amount']['unit'];
export type Permission = NonNullable<Schemas['CreateApiKeyBody']['permissions']>[number];
export type TenantStatus = Schemas['Tenant']['status'];
export type BudgetStatus = Schemas['BudgetLedger']['status'];
export type KeyStatus = Schemas['ApiKey']['status'];
export type ReservationStatus = Schemas['ReservationStatus'];
export type PeriodKind = NonNullable<Schemas['BudgetLedger']['period']>;
export type FundOperation = Schemas['FundBudgetBody']['operation'];
export type AuditOperation = Schemas['AuditLogEntry']['operation'];
export type AuditResourceType = Schemas['AuditLogEntry']['resource_type'];
export type EventType = Schemas['Event']['event_type'];
export type EventCategory = Schemas['Event']['category'];
export type SubscriptionStatus = Schemas['WebhookSubscription']['status'];
export type DeliveryStatus = Schemas['WebhookDelivery']['status'];

type Missing<T, V extends readonly unknown[]> = Exclude<T, V[number]>;
/** `values` when it names every member of T; otherwise a type error naming the missing ones. */
const complete =
  <T extends string>() =>
  <const V extends readonly T[]>(
    values: V & ([Missing<T, V>] extends [never] ? unknown : { readonly missing: Missing<T, V> }),
  ): V =>
    values;

export const UNITS = complete<Unit>()(['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS']);

export const PERMISSIONS = complete<Permission>()([
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
  'reservations:list',
  'balances:read',
  'decide',
  'events:create',
  'budgets:write',
  'budgets:read',
  'policies:read',
  'policies:write',
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'admin:read',
  'admin:write',
  'admin:tenants:read',
  'admin:tenants:write',
  'admin:budgets:read',
  'admin:budgets:write',
  'admin:policies:read',
  'admin:policies:write',
  'admin:apikeys:read',
  'admin:apikeys:write',
  'admin:webhooks:read',
  'admin:webhooks:write',
  'admin:events:read',
  'admin:audit:read',
]);

/** What a tenant key made without a list holds: SPEC's eight and budgets:write. */
export const DEFAULT_PERMISSIONS = PERMISSIONS.slice(0, 9);
/** A named operator credential's permissions (owner OPERATORS). */
export const ADMIN_PERMISSIONS = PERMISSIONS.filter((p) => p.startsWith('admin:'));
/** The owner of named operator credentials (docs/decisions.md § Operators). */
export const OPERATORS = '__system__';

export const TENANT_STATUSES = complete<TenantStatus>()(['ACTIVE', 'SUSPENDED', 'CLOSED']);
export const BUDGET_STATUSES = complete<BudgetStatus>()(['ACTIVE', 'FROZEN', 'CLOSED']);
export const KEY_STATUSES = complete<KeyStatus>()(['ACTIVE', 'REVOKED', 'EXPIRED']);
export const RESERVATION_STATUSES = complete<ReservationStatus>()([
  'ACTIVE',
  'COMMITTED',
  'RELEASED',
  'EXPIRED',
]);
/** Rolling budgets start again each period (UTC). */
export const PERIOD_KINDS = complete<PeriodKind>()(['DAILY', 'WEEKLY', 'MONTHLY']);
export const FUND_OPERATIONS = complete<FundOperation>()([
  'CREDIT',
  'DEBIT',
  'RESET',
  'RESET_SPENT',
  'REPAY_DEBT',
]);

export const AUDIT_OPERATIONS = complete<AuditOperation>()([
  'createTenant',
  'updateTenant',
  'createApiKey',
  'updateApiKey',
  'revokeApiKey',
  'createBudget',
  'fundBudget',
  'updateBudget',
  'freezeBudget',
  'unfreezeBudget',
  'closeBudget',
  'createPolicy',
  'updatePolicy',
  'releaseReservation',
  'createWebhookSubscription',
  'updateWebhookSubscription',
  'deleteWebhookSubscription',
  'disableWebhookSubscription',
  'updateWebhookSecurityConfig',
  'refundReservation',
  'refundEvent',
  'delegateReservation',
]);

export const AUDIT_RESOURCE_TYPES = complete<AuditResourceType>()([
  'tenant',
  'budget',
  'api_key',
  'policy',
  'reservation',
  'webhook',
  'config',
  'event',
]);

export const EVENT_CATEGORIES = complete<EventCategory>()([
  'budget',
  'tenant',
  'api_key',
  'policy',
  'reservation',
  'system',
  'webhook',
]);
/** What a tenant's own subscriptions and event listing may name. */
export const TENANT_EVENT_CATEGORIES: readonly EventCategory[] = [
  'budget',
  'reservation',
  'tenant',
];

export const EVENT_TYPES = complete<EventType>()([
  'budget.created',
  'budget.updated',
  'budget.funded',
  'budget.debited',
  'budget.reset',
  'budget.reset_spent',
  'budget.debt_repaid',
  'budget.frozen',
  'budget.unfrozen',
  'budget.closed',
  'budget.closed_via_tenant_cascade',
  'budget.threshold_crossed',
  'budget.exhausted',
  'budget.over_limit_entered',
  'budget.over_limit_exited',
  'budget.debt_incurred',
  'budget.burn_rate_anomaly',
  'reservation.denied',
  'reservation.denial_rate_spike',
  'reservation.expired',
  'reservation.expiry_rate_spike',
  'reservation.commit_overage',
  'reservation.released_via_tenant_cascade',
  'tenant.created',
  'tenant.updated',
  'tenant.suspended',
  'tenant.reactivated',
  'tenant.closed',
  'tenant.settings_changed',
  'webhook.created',
  'webhook.updated',
  'webhook.paused',
  'webhook.resumed',
  'webhook.disabled',
  'webhook.deleted',
  'webhook.disabled_via_tenant_cascade',
  'api_key.created',
  'api_key.revoked',
  'api_key.revoked_via_tenant_cascade',
  'api_key.expired',
  'api_key.permissions_changed',
  'api_key.auth_failed',
  'api_key.auth_failure_rate_spike',
  'policy.created',
  'policy.updated',
  'policy.deleted',
  'system.store_connection_lost',
  'system.store_connection_restored',
  'system.high_latency',
  'system.webhook_delivery_failed',
  'system.webhook_test',
  'custom.refund',
  'custom.delegation',
]);

export const SUBSCRIPTION_STATUSES = complete<SubscriptionStatus>()([
  'ACTIVE',
  'PAUSED',
  'DISABLED',
]);
export const DELIVERY_STATUSES = complete<DeliveryStatus>()([
  'PENDING',
  'SUCCESS',
  'FAILED',
  'RETRYING',
]);

/** `value` when it is one of `values`, else undefined: a filter read from a URL or a file. */
export const oneOf = <T extends string>(
  values: readonly T[],
  value: string | undefined,
): T | undefined => (values.includes(value as T) ? (value as T) : undefined);
