import type { ApiKey } from './api-keys.js';
import { type Budget, budgetKey } from './budget.js';
import type { Tenant } from './tenant.js';

/** Who changed something: the operator's admin key, or a tenant API key by its id. */
export type Actor = { readonly kind: 'admin' } | { readonly kind: 'key'; readonly keyId: string };

export const actorName = (a: Actor): string => (a.kind === 'admin' ? 'admin' : a.keyId);

interface AuditBase {
  readonly tenant: string;
  readonly atMs: number;
  readonly actor: Actor;
  readonly requestId: string;
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
    | { readonly action: 'reservation.release'; readonly reservationId: string }
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
  'reservation.release': { operation: 'releaseReservation', resourceType: 'reservation' },
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

/** The id of what an entry changed: a tenant id, a key id, `<scope>#<unit>`, a reservation id. */
export function resourceIdOf(e: AuditEntry): string {
  if (
    e.action === 'reservation.release' ||
    e.action === 'reservation.refund' ||
    e.action === 'reservation.delegate'
  ) {
    return e.reservationId;
  }
  if (e.action === 'event.refund') return e.eventId;
  const { after } = e;
  if ('ref' in after) return budgetKey(after.ref);
  return 'keyId' in after ? after.keyId : after.tenantId;
}

/** An audit record as read back: the wire view renders it. */
export interface AuditRecord {
  readonly logId: string;
  readonly tenant: string;
  readonly atMs: number;
  readonly actor: string;
  readonly requestId: string;
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
}

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
  ...(detail && { detail }),
});
