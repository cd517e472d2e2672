import type { AnyCommand } from '../spec.js';
import { audit } from './audit.js';
import { budgetPeriods, watchBudget } from './budget-history.js';
import * as budgets from './budgets.js';
import { createBudgetsMany, createKeysMany, createTenantsMany, fundMany } from './bulk.js';
import * as delegations from './delegations.js';
import * as events from './events.js';
import * as governance from './governance.js';
import * as keys from './keys.js';
import * as reservations from './reservations.js';
import { balances, introspect } from './runtime.js';
import * as settlement from './settlement.js';
import { health, openapi, showConfig } from './system.js';
import * as tenants from './tenants.js';
import * as webhooks from './webhooks.js';

/**
 * Every command, in the order --help lists them. A new operation's command is one more
 * `defineCommand` in its resource's file, listed here (docs/cli.md).
 */
export const commands: readonly AnyCommand[] = [
  tenants.listTenants,
  tenants.getTenant,
  tenants.createTenant,
  createTenantsMany,
  tenants.renameTenant,
  tenants.suspendTenant,
  tenants.resumeTenant,
  tenants.closeTenant,
  governance.bulkTenants,
  keys.listKeys,
  keys.getKey,
  keys.createKey,
  createKeysMany,
  keys.updateKey,
  keys.revokeKey,
  keys.validateKey,
  budgets.listBudgets,
  budgets.getBudget,
  budgets.createBudget,
  createBudgetsMany,
  budgets.fundBudget,
  fundMany,
  budgets.updateBudget,
  budgets.freezeBudget,
  budgets.unfreezeBudget,
  governance.bulkBudgets,
  budgetPeriods,
  watchBudget,
  governance.listPolicies,
  governance.getPolicy,
  governance.createPolicy,
  governance.updatePolicy,
  settlement.budgetAccuracy,
  reservations.listReservations,
  reservations.getReservation,
  reservations.releaseReservation,
  settlement.listCharges,
  delegations.listDelegations,
  delegations.delegateReservation,
  settlement.refundReservation,
  settlement.refundEvent,
  balances,
  introspect,
  audit,
  events.listEvents,
  events.getEvent,
  webhooks.listWebhooks,
  webhooks.getWebhook,
  webhooks.createWebhook,
  webhooks.updateWebhook,
  webhooks.pauseWebhook,
  webhooks.resumeWebhook,
  webhooks.deleteWebhook,
  webhooks.testWebhook,
  webhooks.listDeliveries,
  webhooks.replayWebhook,
  webhooks.bulkWebhooks,
  webhooks.webhookSecurity,
  governance.overview,
  health,
  openapi,
  showConfig,
];
