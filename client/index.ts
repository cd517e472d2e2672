/**
 * The typed client of both servers, shared by the CLI (cli/) and the operator console
 * (console/): openapi-fetch over the types openapi-typescript generates from our own OpenAPI
 * documents (client/generated/, `npm run openapi`), plus what every caller needs around it:
 * credentials, SPEC's error body as `ApiError`, cursor pagination as async iteration, and
 * idempotency keys. Browser-safe: no Node import.
 */
import type { components as AdminComponents } from './generated/admin.js';
import type { components as RuntimeComponents } from './generated/runtime.js';

export * from './api.js';
export * from './errors.js';
export * from './pages.js';
export * from './vocabulary.js';

/** Every named schema of each document, e.g. `AdminSchemas['CreateBudgetBody']`. */
export type AdminSchemas = AdminComponents['schemas'];
export type RuntimeSchemas = RuntimeComponents['schemas'];

// The shapes callers name most, under the names the console and the CLI use for them.
export type Amount = AdminSchemas['Amount'];
export type SignedAmount = AdminSchemas['SignedAmount'];
export type Caps = AdminSchemas['Caps'];
export type Tenant = AdminSchemas['Tenant'];
export type TenantPage = AdminSchemas['TenantListResponse'];
export type Budget = AdminSchemas['BudgetLedger'];
export type BudgetPage = AdminSchemas['BudgetListResponse'];
/** What creating a budget answers: the reference's Budget, without ledger_id and status. */
export type CreatedBudget = AdminSchemas['Budget'];
export type ClosedPeriod = AdminSchemas['ClosedPeriod'];
export type ClosedPeriodPage = AdminSchemas['ClosedPeriodListResponse'];
export type FundRequest = AdminSchemas['FundBudgetBody'];
export type Funded = AdminSchemas['FundResponse'];
export type ApiKey = AdminSchemas['ApiKey'];
export type ApiKeyPage = AdminSchemas['ApiKeyListResponse'];
export type CreatedApiKey = AdminSchemas['ApiKeyCreateResponse'];
export type Reservation = AdminSchemas['ReservationSummary'];
export type ReservationPage = AdminSchemas['ReservationListResponse'];
export type AuditEntry = AdminSchemas['AuditLogEntry'];
export type AuditPage = AdminSchemas['AuditLogListResponse'];
export type Introspection = AdminSchemas['Introspection'];
export type KeyValidation = AdminSchemas['KeyValidation'];
export type Balance = RuntimeSchemas['Balance'];
export type BalancePage = RuntimeSchemas['BalanceResponse'];
export type ReservationDetail = RuntimeSchemas['ReservationDetail'];
export type EventDocument = AdminSchemas['Event'];
export type EventPage = AdminSchemas['EventListResponse'];
export type WebhookSubscription = AdminSchemas['WebhookSubscription'];
export type WebhookPage = AdminSchemas['WebhookListResponse'];
export type CreatedWebhook = AdminSchemas['WebhookCreateResponse'];
export type WebhookCreateRequest = AdminSchemas['WebhookCreateRequest'];
export type WebhookUpdateRequest = AdminSchemas['WebhookUpdateRequest'];
export type WebhookDelivery = AdminSchemas['WebhookDelivery'];
export type WebhookDeliveryPage = AdminSchemas['WebhookDeliveryListResponse'];
export type WebhookTestResult = AdminSchemas['WebhookTestResponse'];
export type WebhookSecurityConfig = AdminSchemas['WebhookSecurityConfig'];
export type ReplayAccepted = AdminSchemas['ReplayEventsResponse'];
export type WebhookBulkResult = AdminSchemas['WebhookBulkActionResponse'];
// Ours (x-extension budget-reservations): charges, refunds, estimate accuracy.
export type Charge = AdminSchemas['Charge'];
export type ChargePage = AdminSchemas['ChargeListResponse'];
export type Delegation = AdminSchemas['Delegation'];
export type DelegationPage = AdminSchemas['DelegationListResponse'];
export type Delegated = RuntimeSchemas['ReservationCreateResponse'];
export type Refunded = AdminSchemas['RefundResponse'];
export type EstimateAccuracy = AdminSchemas['EstimateAccuracyResponse'];
export type AccuracyFigures = AdminSchemas['AccuracyFigures'];
