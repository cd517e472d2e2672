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
]);

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
  'releaseReservation',
  'refundReservation',
  'refundEvent',
  'delegateReservation',
]);

export const AUDIT_RESOURCE_TYPES = complete<AuditResourceType>()([
  'tenant',
  'budget',
  'api_key',
  'reservation',
  'event',
]);

/** `value` when it is one of `values`, else undefined: a filter read from a URL or a file. */
export const oneOf = <T extends string>(
  values: readonly T[],
  value: string | undefined,
): T | undefined => (values.includes(value as T) ? (value as T) : undefined);
