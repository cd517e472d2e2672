/**
 * The protocol's events (cycles-governance-admin v0.1.25, normative: `Event`, `EventType`,
 * `EventCategory`, the `EventData*` payloads): what the service emits, stores for
 * EVENT_RETENTION_DAYS, lists and delivers to webhook subscriptions. docs/decisions.md § Events
 * and webhooks.
 *
 * An event is one immutable document, the reference's `Event` exactly (snake_case, closed
 * envelope): the stream consumer renders it once, the table keeps it, the listings answer it
 * and every delivery sends its bytes. So it keeps the wire's names here too, where the rest of
 * the domain is camelCase: there is no second shape of it to map.
 */

export const EVENT_CATEGORIES = [
  'budget',
  'tenant',
  'api_key',
  'policy',
  'reservation',
  'system',
  'webhook',
] as const;
export type EventCategory = (typeof EVENT_CATEGORIES)[number];

/**
 * The reference's EventType enum, in its order, then ours (`custom.`, below). One literal list:
 * a spread would keep it in every bundle that imports this module.
 */
export const EVENT_TYPES = [
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
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Ours, under the reference's `custom.` prefix ("custom event types MUST use a custom. prefix";
 * consumers ignore types they do not know), each in the reference category it belongs to: a
 * refund gives budget back (docs/decisions.md § Refunds); a delegation makes a child reservation
 * (§ Delegations).
 */
export const CUSTOM_EVENT_CATEGORIES = {
  'custom.refund': 'budget',
  'custom.delegation': 'reservation',
} as const satisfies Record<Extract<EventType, `custom.${string}`>, EventCategory>;
export type CustomEventType = keyof typeof CUSTOM_EVENT_CATEGORIES;

const isCustomType = (type: EventType): type is CustomEventType =>
  Object.hasOwn(CUSTOM_EVENT_CATEGORIES, type);

/** The category of a type: the part before its first dot (a custom type's: its table's). */
export const categoryOf = (type: EventType): EventCategory =>
  isCustomType(type)
    ? CUSTOM_EVENT_CATEGORIES[type]
    : (type.slice(0, type.indexOf('.')) as EventCategory);

/**
 * What a tenant may see and subscribe to (the reference's TENANT-ACCESSIBLE BOUNDARY): its
 * budgets, reservations and its own lifecycle. Keys, policies, webhooks and the system are the
 * operator's.
 */
export const TENANT_CATEGORIES: readonly EventCategory[] = ['budget', 'reservation', 'tenant'];
export const isTenantCategory = (c: EventCategory): boolean => TENANT_CATEGORIES.includes(c);
export const isTenantEventType = (t: EventType): boolean => isTenantCategory(categoryOf(t));

/** The owner of operator-wide subscriptions and the tenant of system events. */
export const SYSTEM_TENANT = '__system__';

/** The envelope's `source`: every event of this service says so. */
export const EVENT_SOURCE = 'budget-reservations';

export const ACTOR_TYPES = [
  'admin',
  'api_key',
  'admin_on_behalf_of',
  'system',
  'scheduler',
] as const;
export type EventActor = {
  readonly type: (typeof ACTOR_TYPES)[number];
  readonly key_id?: string;
};

/** The reference's `Event`: closed, absent rather than null. */
export interface EventDocument {
  /** Stable: the same change seen again (a redelivered stream record) has the same id. */
  readonly event_id: string;
  readonly event_type: EventType;
  readonly category: EventCategory;
  /** ISO 8601, UTC, milliseconds. */
  readonly timestamp: string;
  readonly tenant_id: string;
  readonly scope?: string;
  readonly actor?: EventActor;
  readonly source: string;
  readonly data?: Readonly<Record<string, unknown>>;
  readonly correlation_id?: string;
  readonly request_id?: string;
  readonly trace_id?: string;
}

/** How long events (and deliveries) are kept by default: the reference recommends 90 days hot. */
export const DEFAULT_EVENT_RETENTION_DAYS = 30;
