import { type AuditAction, type AuditRecord, TENANT_CLOSED_CASCADE } from './audit.js';
import {
  categoryOf,
  EVENT_SOURCE,
  type EventActor,
  type EventDocument,
  type EventType,
} from './events.js';
import { derivedId } from './fingerprint.js';

/**
 * The lifecycle events of admin changes, derived from their audit records (docs/decisions.md §
 * Events and webhooks). Every change writes its audit record in its own transaction, and the
 * table's stream carries the record to the consumer, so an event exists if and only if its
 * change committed; its id derives from the record, so a redelivered record is the same event.
 *
 * One row per audit action, typed `Record<AuditAction, …>`: a new audited change does not
 * compile until it says which events it means (none is an answer: `() => []`).
 */

type State = Readonly<Record<string, unknown>>;

/** What a row decides: the type, the scope, the payload; the envelope is common. */
interface EventSpec {
  readonly type: EventType;
  readonly scope?: string | undefined;
  readonly data: Readonly<Record<string, unknown>>;
  readonly correlationId?: string | undefined;
}

type Rule = (r: AuditRecord) => readonly EventSpec[];

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
/** Absent rather than undefined: a document never carries an undefined field. */
const definedOnly = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
const cascaded = (r: AuditRecord) => r.detail?.cascade === TENANT_CLOSED_CASCADE;
const tenantCloseCorrelation = (r: AuditRecord) => `tenant_close:${r.tenant}:${r.requestId}`;

/** Changed names among `fields`, between two recorded states. */
const changedFields = (before: State | undefined, after: State | undefined, fields: string[]) =>
  fields.filter((f) => JSON.stringify(before?.[f]) !== JSON.stringify(after?.[f]));

// --- tenants -----------------------------------------------------------------------------

const TENANT_STATUS_EVENTS: Readonly<Record<string, EventType>> = {
  SUSPENDED: 'tenant.suspended',
  ACTIVE: 'tenant.reactivated',
  CLOSED: 'tenant.closed',
};

const tenantUpdate: Rule = (r) => {
  const previous = str(r.before?.status);
  const next = str(r.after?.status);
  const statusChanged = previous !== next && next !== undefined;
  const type = statusChanged ? (TENANT_STATUS_EVENTS[next] ?? 'tenant.updated') : 'tenant.updated';
  const changed = changedFields(r.before, r.after, ['name']);
  if (!statusChanged && changed.length === 0) return [];
  return [
    {
      type,
      data: {
        tenant_id: r.tenant,
        ...(previous && { previous_status: previous }),
        ...(next && { new_status: next }),
        changed_fields: changed,
      },
      ...(type === 'tenant.closed' && { correlationId: tenantCloseCorrelation(r) }),
    },
  ];
};

// --- API keys ----------------------------------------------------------------------------

/** The reference's EventDataApiKey: never the secret, and `permissions` of its enum only. */
const keyData = (r: AuditRecord, previous?: string) => ({
  key_id: r.resourceId,
  ...(str(r.after?.name) && { key_name: str(r.after?.name) }),
  ...(previous && { previous_status: previous }),
  ...(str(r.after?.status) && { new_status: str(r.after?.status) }),
  permissions: referencePermissions(r.after?.permissions),
});

/**
 * Permissions as the reference's Permission enum spells them: SPEC's `decide` and
 * `events:create` have no value there and are left out of event payloads (the audit record
 * keeps them all).
 */
const REFERENCE_PERMISSIONS = new Set([
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
  'reservations:list',
  'balances:read',
  'budgets:read',
  'budgets:write',
  'policies:read',
  'policies:write',
  'webhooks:read',
  'webhooks:write',
  'events:read',
]);
const referencePermissions = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((p): p is string => REFERENCE_PERMISSIONS.has(p)) : [];

const keyRevoke: Rule = (r) =>
  cascaded(r)
    ? [
        {
          type: 'api_key.revoked_via_tenant_cascade',
          data: {
            key_id: r.resourceId,
            ...(str(r.after?.name) && { name: str(r.after?.name) }),
            prior_status: str(r.before?.status) ?? 'ACTIVE',
            new_status: 'REVOKED',
            cascade_reason: TENANT_CLOSED_CASCADE,
          },
          correlationId: tenantCloseCorrelation(r),
        },
      ]
    : [{ type: 'api_key.revoked', data: keyData(r, str(r.before?.status)) }];

const keyUpdate: Rule = (r) =>
  changedFields(r.before, r.after, ['permissions']).length > 0
    ? [{ type: 'api_key.permissions_changed', data: keyData(r, str(r.before?.status)) }]
    : // A new name or description has no event type of its own in the reference.
      [];

// --- budgets -----------------------------------------------------------------------------

/** A budget record's id is `<scope>#<unit>` (domain/budget.ts budgetKey). */
function budgetRef(r: AuditRecord) {
  const at = r.resourceId.lastIndexOf('#');
  return { scope: r.resourceId.slice(0, at), unit: r.resourceId.slice(at + 1) };
}

/** The ledger id views.ts answers for the same budget. */
const ledgerIdOf = (r: AuditRecord) => derivedId('ldg', r.tenant, r.resourceId);

const budgetState = (s: State | undefined) =>
  s && {
    allocated: num(s.allocated),
    remaining: num(s.remaining),
    debt: num(s.debt),
    spent: num(s.spent),
    reserved: num(s.reserved),
    status: str(s.status) ?? 'ACTIVE',
  };

type BudgetOperation =
  | 'CREDIT'
  | 'DEBIT'
  | 'RESET'
  | 'RESET_SPENT'
  | 'REPAY_DEBT'
  | 'STATUS_CHANGE'
  | 'CREATE'
  | 'UPDATE';

const budgetEvent =
  (type: EventType, operation: BudgetOperation): Rule =>
  (r) => {
    const { scope, unit } = budgetRef(r);
    const reason = str(r.detail?.reason);
    return [
      {
        type,
        scope,
        data: {
          ledger_id: ledgerIdOf(r),
          scope,
          unit,
          operation,
          ...(r.before && { previous_state: budgetState(r.before) }),
          ...(r.after && { new_state: budgetState(r.after) }),
          ...(type === 'budget.reset_spent' && { spent_override_provided: true }),
          ...(reason && { reason }),
        },
      },
    ];
  };

const FUNDING_EVENTS: Readonly<Record<string, EventType>> = {
  CREDIT: 'budget.funded',
  DEBIT: 'budget.debited',
  RESET: 'budget.reset',
  RESET_SPENT: 'budget.reset_spent',
  REPAY_DEBT: 'budget.debt_repaid',
};

const budgetFund: Rule = (r) => {
  const operation = str(r.detail?.operation) ?? 'CREDIT';
  const type = FUNDING_EVENTS[operation] ?? 'budget.funded';
  return budgetEvent(type, operation as BudgetOperation)(r);
};

const budgetClose: Rule = (r) => {
  if (!cascaded(r)) return budgetEvent('budget.closed', 'STATUS_CHANGE')(r);
  const { scope, unit } = budgetRef(r);
  return [
    {
      type: 'budget.closed_via_tenant_cascade',
      scope,
      data: {
        ledger_id: ledgerIdOf(r),
        scope,
        unit,
        prior_status: str(r.before?.status) ?? 'ACTIVE',
        new_status: 'CLOSED',
        cascade_reason: TENANT_CLOSED_CASCADE,
      },
      correlationId: tenantCloseCorrelation(r),
    },
  ];
};

/**
 * A release the close cascade forced: the reference's ledger-level aggregate, here one per
 * released reservation (each is its own audited release), naming the budget of its scope.
 */
const reservationRelease: Rule = (r) => {
  if (!cascaded(r)) return []; // an operator's single force-release has no event type
  const scope = str(r.detail?.scope);
  const unit = str(r.detail?.unit);
  return [
    {
      type: 'reservation.released_via_tenant_cascade',
      scope,
      data: {
        ...(scope && unit && { ledger_id: derivedId('ldg', r.tenant, `${scope}#${unit}`) }),
        ...(scope && { scope }),
        ...(unit && { unit }),
        ...(num(r.detail?.released) !== undefined && { released_amount: num(r.detail?.released) }),
        cascade_reason: TENANT_CLOSED_CASCADE,
      },
      correlationId: tenantCloseCorrelation(r),
    },
  ];
};

// --- refunds -----------------------------------------------------------------------------

/**
 * A refund (docs/decisions.md § Refunds) as our `custom.refund`, category budget: what it gave
 * back on every scope charged (the record's detail, written by use-cases/refunds.ts), the scope
 * the leaf of those.
 */
const refund: Rule = (r) => {
  const d = r.detail ?? {};
  const scopes = Array.isArray(d.scopes) ? d.scopes.map(String) : [];
  return [
    {
      type: 'custom.refund',
      scope: scopes.at(-1),
      data: definedOnly({
        refund_id: str(d.refund_id) ?? '',
        [r.resourceType === 'event' ? 'event_id' : 'reservation_id']: r.resourceId,
        unit: str(d.unit),
        amount: num(d.amount),
        refunded_total: num(d.refunded_total),
        charged: num(d.charged),
        reason: str(d.reason) ?? '',
        scopes,
      }),
    },
  ];
};

// --- delegations -------------------------------------------------------------------------

/**
 * A delegation (docs/decisions.md § Delegations) as our `custom.delegation`, category
 * reservation: the parent and the child it made, what moved and where (the record's detail,
 * written by use-cases/delegations.ts), the scope the child's deepest.
 */
const delegation: Rule = (r) => {
  const d = r.detail ?? {};
  const scopes = Array.isArray(d.scopes) ? d.scopes.map(String) : [];
  return [
    {
      type: 'custom.delegation',
      scope: scopes.at(-1),
      data: definedOnly({
        parent_reservation_id: str(d.parent_reservation_id) ?? r.resourceId,
        child_reservation_id: str(d.child_reservation_id) ?? '',
        unit: str(d.unit),
        amount: num(d.amount),
        depth: num(d.depth),
        scopes,
      }),
    },
  ];
};

// --- webhooks ----------------------------------------------------------------------------

const webhookData = (r: AuditRecord, extra: Record<string, unknown> = {}) => ({
  subscription_id: r.resourceId,
  tenant_id: r.tenant,
  ...(str(r.before?.status) && { previous_status: str(r.before?.status) }),
  ...(str(r.after?.status) && { new_status: str(r.after?.status) }),
  changed_fields: Array.isArray(r.detail?.changed_fields) ? r.detail.changed_fields : [],
  ...extra,
});

/** The reference's correlation ids of webhook events (revision 0.1.25.33). */
const bulkAction = (r: AuditRecord) => str(r.detail?.bulk_action);

const webhookUpdate: Rule = (r) => {
  const previous = str(r.before?.status);
  const next = str(r.after?.status);
  const type: EventType =
    previous === next
      ? 'webhook.updated'
      : next === 'PAUSED'
        ? 'webhook.paused'
        : 'webhook.resumed';
  const bulk = bulkAction(r);
  return [
    {
      type,
      data: webhookData(r),
      correlationId: bulk
        ? `webhook_bulk_action:${bulk}:${r.requestId}`
        : `webhook_update:${r.resourceId}:${r.requestId}`,
    },
  ];
};

const webhookDelete: Rule = (r) => {
  const bulk = bulkAction(r);
  return [
    {
      type: 'webhook.deleted',
      data: webhookData(r),
      correlationId: bulk
        ? `webhook_bulk_action:${bulk}:${r.requestId}`
        : `webhook_delete:${r.resourceId}`,
    },
  ];
};

const webhookDisable: Rule = (r) =>
  cascaded(r)
    ? [
        {
          type: 'webhook.disabled_via_tenant_cascade',
          data: {
            subscription_id: r.resourceId,
            ...(str(r.after?.name) && { name: str(r.after?.name) }),
            prior_status: str(r.before?.status) ?? 'ACTIVE',
            new_status: 'DISABLED',
            cascade_reason: TENANT_CLOSED_CASCADE,
          },
          correlationId: tenantCloseCorrelation(r),
        },
      ]
    : [
        {
          type: 'webhook.disabled',
          data: webhookData(r, { disable_reason: 'consecutive_failures_exceeded_threshold' }),
          correlationId: `webhook_auto_disable:${r.resourceId}:${str(r.detail?.delivery_id) ?? r.requestId}`,
        },
      ];

// --- policies ----------------------------------------------------------------------------

/** The fields of a policy whose change a `policy.updated` names. */
const POLICY_FIELDS = [
  'name',
  'description',
  'scope_pattern',
  'priority',
  'caps',
  'overage_policy',
  'ttl',
  'rate_limits',
  'status',
  'effective_from',
  'effective_until',
];

/** The reference's EventDataPolicy. */
const policyEvent =
  (type: 'policy.created' | 'policy.updated'): Rule =>
  (r) => {
    const changed =
      type === 'policy.updated' ? changedFields(r.before, r.after, POLICY_FIELDS) : [];
    if (type === 'policy.updated' && changed.length === 0) return [];
    return [
      {
        type,
        data: {
          policy_id: r.resourceId,
          ...(str(r.after?.name) && { name: str(r.after?.name) }),
          ...(str(r.after?.scope_pattern) && { scope_pattern: str(r.after?.scope_pattern) }),
          changed_fields: changed,
        },
      },
    ];
  };

/** Every audited change and the events it means. */
export const AUDIT_EVENTS: { readonly [A in AuditAction]: Rule } = {
  'tenant.create': (r) => [
    {
      type: 'tenant.created',
      data: {
        tenant_id: r.tenant,
        new_status: str(r.after?.status) ?? 'ACTIVE',
        changed_fields: [],
      },
    },
  ],
  'tenant.update': tenantUpdate,
  'policy.create': policyEvent('policy.created'),
  'policy.update': policyEvent('policy.updated'),
  'api_key.create': (r) => [{ type: 'api_key.created', data: keyData(r) }],
  'api_key.update': keyUpdate,
  'api_key.revoke': keyRevoke,
  'budget.create': budgetEvent('budget.created', 'CREATE'),
  'budget.fund': budgetFund,
  'budget.update': budgetEvent('budget.updated', 'UPDATE'),
  'budget.freeze': budgetEvent('budget.frozen', 'STATUS_CHANGE'),
  'budget.unfreeze': budgetEvent('budget.unfrozen', 'STATUS_CHANGE'),
  'budget.close': budgetClose,
  'reservation.release': reservationRelease,
  'reservation.refund': refund,
  'event.refund': refund,
  'reservation.delegate': delegation,
  'webhook.create': (r) => [
    {
      type: 'webhook.created',
      data: webhookData(r),
      correlationId: `webhook_create:${r.resourceId}`,
    },
  ],
  'webhook.update': webhookUpdate,
  'webhook.delete': webhookDelete,
  'webhook.disable': webhookDisable,
  // A security setting of the operator's: the audit trail has it; no event type names it.
  'webhook_security.update': () => [],
};

const actorOf = (r: AuditRecord): EventActor =>
  r.actorType === 'api_key' ? { type: 'api_key', key_id: r.actor } : { type: r.actorType };

/** The events an audit record means, as the protocol's documents. */
export function auditEvents(r: AuditRecord): EventDocument[] {
  if (r.action === undefined) return []; // written before records named their action
  return AUDIT_EVENTS[r.action](r).map((spec) => ({
    event_id: derivedId('evt', spec.type, r.logId),
    event_type: spec.type,
    category: categoryOf(spec.type),
    timestamp: new Date(r.atMs).toISOString(),
    tenant_id: r.tenant,
    ...(spec.scope !== undefined && { scope: spec.scope }),
    actor: actorOf(r),
    source: EVENT_SOURCE,
    data: spec.data,
    ...(spec.correlationId !== undefined && { correlation_id: spec.correlationId }),
    ...(r.requestId !== '' && { request_id: r.requestId }),
    ...(r.traceId !== undefined && { trace_id: r.traceId }),
  }));
}
