/**
 * The closed vocabularies of the API the console offers in its menus. They mirror the
 * service's domain (test/unit/console.test.ts fails when they drift apart); the console does
 * not import functions/, which is server code.
 */
export const UNITS = ['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS'] as const;
export type Unit = (typeof UNITS)[number];

export const PERMISSIONS = [
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
  'reservations:list',
  'balances:read',
  'decide',
  'events:create',
  'budgets:write',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const TENANT_STATUSES = ['ACTIVE', 'SUSPENDED', 'CLOSED'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export const BUDGET_STATUSES = ['ACTIVE', 'FROZEN', 'CLOSED'] as const;
export type BudgetStatus = (typeof BUDGET_STATUSES)[number];

export const KEY_STATUSES = ['ACTIVE', 'REVOKED', 'EXPIRED'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const RESERVATION_STATUSES = ['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** Rolling budgets start again each period (UTC). */
export const PERIOD_KINDS = ['DAILY', 'WEEKLY', 'MONTHLY'] as const;
export type PeriodKind = (typeof PERIOD_KINDS)[number];

export const FUND_OPERATIONS = ['CREDIT', 'DEBIT', 'RESET', 'RESET_SPENT', 'REPAY_DEBT'] as const;
export type FundOperation = (typeof FUND_OPERATIONS)[number];

/** What each funding operation does, as the fund dialog explains it. */
export const FUND_OPERATION_HELP: Readonly<Record<FundOperation, string>> = {
  CREDIT: 'Adds the amount to the allocation.',
  DEBIT: 'Takes the amount off the allocation (never below what is spent, held and owed).',
  RESET: 'Sets the allocation to the amount.',
  RESET_SPENT: 'Starts a new period by hand: sets spent to the amount (usually 0).',
  REPAY_DEBT: 'Pays the amount off the debt.',
};

export const AUDIT_OPERATIONS = [
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
] as const;

export const AUDIT_RESOURCE_TYPES = ['tenant', 'budget', 'api_key', 'reservation'] as const;
