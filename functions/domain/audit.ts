import type { ApiKey } from './api-keys.js';
import { type Budget, budgetKey } from './budget.js';
import type { Operator } from './caller.js';
import { SYSTEM_TENANT } from './events.js';
import type { Policy } from './policies.js';
import type { Tenant } from './tenant.js';
import type { WebhookSecurity } from './webhook-security.js';
import type { Subscription } from './webhooks.js';

/**
 * Who changed something: the bootstrap admin key (`onBehalfOf`: on a tenant's route, acting for
 * that tenant), a named operator credential (its key id and name), a tenant API key by its id,
 * or the service itself (a webhook auto-disabled, a budget that grew its escrow shards under
 * contention).
 */
export type Actor =
  | { readonly kind: 'admin'; readonly onBehalfOf?: boolean | undefined }
  | { readonly kind: 'operator'; readonly keyId: string; readonly name: string }
  | { readonly kind: 'key'; readonly keyId: string }
  | { readonly kind: 'system' };

/** The trail's `actor`: `admin`, `system`, or the key id of the operator credential or tenant key. */
export const actorName = (a: Actor): string =>
  a.kind === 'key' || a.kind === 'operator' ? a.keyId : a.kind;

/** The reference's actor types (AuditLogEntry, Event.actor): an operator credential is `admin`. */
export const actorTypeOf = (a: Actor) =>
  a.kind === 'key'
    ? ('api_key' as const)
    : a.kind === 'system'
      ? ('system' as const)
      : a.kind === 'admin' && a.onBehalfOf
        ? ('admin_on_behalf_of' as const)
        : ('admin' as const);

/**
 * Why a change was made by the service rather than asked for: part of a tenant's close (the
 * reference's `*_via_tenant_cascade` events). Kept in the record's `detail.cascade`.
 */
export const TENANT_CLOSED_CASCADE = 'tenant_closed' as const;

/** The actor of an operator's change: the credential it authenticated with. */
export const operatorActor = (operator: Operator | undefined): Actor =>
  operator ? { kind: 'operator', keyId: operator.keyId, name: operator.name } : { kind: 'admin' };

interface AuditBase {
  readonly tenant: string;
  readonly atMs: number;
  readonly actor: Actor;
  readonly requestId: string;
  /** The request's W3C trace id (domain/trace.ts), when it came in one. */
  readonly traceId?: string | undefined;
  readonly detail?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * One change, recorded in the same transaction as the change itself: what it was done to, and
 * the record before (absent for a creation) and after. docs/decisions.md § Audit trail.
 */
export type AuditEntry = AuditBase &
  (
    | {
        readonly action:
          | 'budget.create'
          | 'budget.fund'
          | 'budget.update'
          | 'budget.freeze'
          | 'budget.unfreeze'
          | 'budget.close';
        readonly before?: Budget | undefined;
        readonly after: Budget;
      }
    | {
        readonly action: 'tenant.create' | 'tenant.update';
        readonly before?: Tenant | undefined;
        readonly after: Tenant;
      }
    | {
        readonly action: 'api_key.create' | 'api_key.update' | 'api_key.revoke';
        readonly before?: ApiKey | undefined;
        readonly after: ApiKey;
      }
    | {
        readonly action: 'policy.create' | 'policy.update';
        readonly before?: Policy | undefined;
        readonly after: Policy;
      }
    | { readonly action: 'reservation.release'; readonly reservationId: string }
    | {
        /** A subscription created, changed (PATCH, pause, resume) or disabled after failures. */
        readonly action: 'webhook.create' | 'webhook.update' | 'webhook.disable';
        readonly before?: Subscription | undefined;
        readonly after: Subscription;
      }
    | { readonly action: 'webhook.delete'; readonly before: Subscription }
    | {
        readonly action: 'webhook_security.update';
        readonly before: WebhookSecurity;
        readonly after: WebhookSecurity;
      }
    /** A refund of what a reservation or an event charged (docs/decisions.md § Refunds). */
    | { readonly action: 'reservation.refund'; readonly reservationId: string }
    | { readonly action: 'event.refund'; readonly eventId: string }
    /** A delegation: the parent's id, the child's in `detail` (docs/decisions.md § Delegations). */
    | { readonly action: 'reservation.delegate'; readonly reservationId: string }
  );

export type AuditAction = AuditEntry['action'];

/** The reference's operation names and resource types, for the trail's readers. */
export const AUDIT_OPERATIONS = {
  'budget.create': { operation: 'createBudget', resourceType: 'budget' },
  'budget.fund': { operation: 'fundBudget', resourceType: 'budget' },
  'budget.update': { operation: 'updateBudget', resourceType: 'budget' },
  'budget.freeze': { operation: 'freezeBudget', resourceType: 'budget' },
  'budget.unfreeze': { operation: 'unfreezeBudget', resourceType: 'budget' },
  'budget.close': { operation: 'closeBudget', resourceType: 'budget' },
  'tenant.create': { operation: 'createTenant', resourceType: 'tenant' },
  'tenant.update': { operation: 'updateTenant', resourceType: 'tenant' },
  'api_key.create': { operation: 'createApiKey', resourceType: 'api_key' },
  'api_key.update': { operation: 'updateApiKey', resourceType: 'api_key' },
  'api_key.revoke': { operation: 'revokeApiKey', resourceType: 'api_key' },
  'policy.create': { operation: 'createPolicy', resourceType: 'policy' },
  'policy.update': { operation: 'updatePolicy', resourceType: 'policy' },
  'reservation.release': { operation: 'releaseReservation', resourceType: 'reservation' },
  'webhook.create': { operation: 'createWebhookSubscription', resourceType: 'webhook' },
  'webhook.update': { operation: 'updateWebhookSubscription', resourceType: 'webhook' },
  'webhook.delete': { operation: 'deleteWebhookSubscription', resourceType: 'webhook' },
  'webhook.disable': { operation: 'disableWebhookSubscription', resourceType: 'webhook' },
  'webhook_security.update': { operation: 'updateWebhookSecurityConfig', resourceType: 'config' },
  'reservation.refund': { operation: 'refundReservation', resourceType: 'reservation' },
  'event.refund': { operation: 'refundEvent', resourceType: 'event' },
  'reservation.delegate': { operation: 'delegateReservation', resourceType: 'reservation' },
} as const satisfies Record<AuditAction, { operation: string; resourceType: string }>;

export type AuditOperation = (typeof AUDIT_OPERATIONS)[AuditAction]['operation'];
export type AuditResourceType = (typeof AUDIT_OPERATIONS)[AuditAction]['resourceType'];
export const AUDIT_OPERATION_NAMES = Object.values(AUDIT_OPERATIONS).map((o) => o.operation);
export const AUDIT_RESOURCE_TYPES = [
  ...new Set(Object.values(AUDIT_OPERATIONS).map((o) => o.resourceType)),
] as [AuditResourceType, ...AuditResourceType[]];

/**
 * The id of what an entry changed: a tenant id, a key id, `<scope>#<unit>`, a policy id, a
 * reservation id.
 */
export function resourceIdOf(e: AuditEntry): string {
  if (
    e.action === 'reservation.release' ||
    e.action === 'reservation.refund' ||
    e.action === 'reservation.delegate'
  ) {
    return e.reservationId;
  }
  if (e.action === 'event.refund') return e.eventId;
  if (e.action === 'webhook.delete') return e.before.subscriptionId;
  if (e.action === 'webhook_security.update') return 'webhook-security';
  const { after } = e;
  if ('subscriptionId' in after) return after.subscriptionId;
  if ('ref' in after) return budgetKey(after.ref);
  if ('policyId' in after) return after.policyId;
  return 'keyId' in after ? after.keyId : after.tenantId;
}

/** The reference's sort keys of the audit listing. */
export const AUDIT_SORT_KEYS = [
  'timestamp',
  'operation',
  'resource_type',
  'tenant_id',
  'key_id',
  'status',
] as const;
export type AuditSortKey = (typeof AUDIT_SORT_KEYS)[number];

/** An audit record as read back: the wire view renders it. */
export interface AuditRecord {
  readonly logId: string;
  readonly tenant: string;
  readonly atMs: number;
  readonly actor: string;
  readonly actorType: ReturnType<typeof actorTypeOf>;
  /** A named operator credential's name (the person), beside its key id in `actor`. */
  readonly actorName?: string | undefined;
  readonly requestId: string;
  readonly traceId?: string | undefined;
  /** The inbound `traceparent`'s flags, when the request carried a valid one (kept downstream). */
  readonly traceFlags?: string | undefined;
  /** What was done (the entry's action); records older than the field have only `operation`. */
  readonly action?: AuditAction | undefined;
  readonly operation: string;
  readonly resourceType: AuditResourceType;
  readonly resourceId: string;
  readonly before?: Readonly<Record<string, unknown>> | undefined;
  readonly after?: Readonly<Record<string, unknown>> | undefined;
  readonly detail?: Readonly<Record<string, unknown>> | undefined;
}

/** Who made a change, in which request, when: what every record of one operation shares. */
export interface AuditContext {
  readonly tenant: string;
  readonly actor: Actor;
  readonly requestId: string;
  readonly atMs: number;
  readonly traceId?: string | undefined;
  /** Detail every record of the operation carries (a bulk action's name and key). */
  readonly detail?: Readonly<Record<string, unknown>> | undefined;
}

/** The operator-wide records (webhook security, `__system__` subscriptions) live under this tenant. */
export const SYSTEM_AUDIT_TENANT = SYSTEM_TENANT;

type BudgetAction = Extract<AuditEntry, { readonly after: Budget }>['action'];

/** The record of a change to one budget: the budget before (absent: created) and after. */
export const budgetAudit = (
  by: AuditContext,
  action: BudgetAction,
  before: Budget | undefined,
  after: Budget,
  detail?: Readonly<Record<string, unknown>>,
): AuditEntry => ({
  ...by,
  action,
  ...(before && { before }),
  after,
  ...((detail || by.detail) && { detail: { ...by.detail, ...detail } }),
});
