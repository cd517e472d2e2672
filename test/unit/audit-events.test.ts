import { describe, expect, it } from 'vitest';
import type { ApiKey } from '../../functions/domain/api-keys.js';
import {
  AUDIT_OPERATIONS,
  type AuditAction,
  type AuditContext,
  type AuditEntry,
  TENANT_CLOSED_CASCADE,
} from '../../functions/domain/audit.js';
import { AUDIT_EVENTS, auditEvents } from '../../functions/domain/audit-events.js';
import type { Budget } from '../../functions/domain/budget.js';
import type { Policy } from '../../functions/domain/policies.js';
import type { Tenant } from '../../functions/domain/tenant.js';
import { defaultWebhookSecurity } from '../../functions/domain/webhook-security.js';
import { newSubscription } from '../../functions/domain/webhooks.js';
import { EVENT_SCHEMAS } from '../../functions/outbound/schemas.js';
import { auditItem, auditRecordOf } from '../../functions/store/entities/audit.js';
import { budgetOf } from '../helpers/budgets.js';
import { eventErrors } from '../helpers/reference-schemas.js';

// The lifecycle events of admin changes come from their audit records (the stream carries the
// record): every audited action, as the store writes and reads its record, means the events of
// its row in AUDIT_EVENTS, each valid against the reference's Event and EventData* schemas.

const by: AuditContext = {
  tenant: 'acme',
  actor: { kind: 'admin' },
  requestId: 'req-1',
  atMs: Date.UTC(2026, 0, 15, 12),
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
};
const budget: Budget = budgetOf({
  scope: 'tenant:acme/workspace:w',
  unit: 'USD_MICROCENTS',
  allocated: 1_000,
  spent: 100,
  reserved: 50,
  debt: 0,
  overdraftLimit: 0,
  remaining: 850,
});
const tenant: Tenant = {
  tenantId: 'acme',
  name: 'Acme',
  status: 'ACTIVE',
  createdAt: '2026-01-01T00:00:00.000Z',
};
const key: ApiKey = {
  keyId: 'key_1',
  keyPrefix: 'cyc_live_abcde',
  tenant: 'acme',
  name: 'agents',
  permissions: ['reservations:create', 'decide', 'webhooks:read'],
  createdAt: '2026-01-01T00:00:00.000Z',
  status: 'ACTIVE',
};
const subscription = newSubscription(
  'whsub_1',
  'acme',
  { url: 'https://hooks.example.com/secret-path', eventTypes: ['budget.exhausted'] },
  '2026-01-01T00:00:00.000Z',
);
const cascade = { detail: { cascade: TENANT_CLOSED_CASCADE } };
/** What a refund's audit record keeps (use-cases/refunds.ts). */
const refundDetail = {
  refund_id: 'rfd_1',
  amount: 30,
  unit: 'USD_MICROCENTS',
  reason: 'provider refunded a failed call',
  refunded_total: 30,
  charged: 80,
  scopes: ['tenant:acme', 'tenant:acme/workspace:w'],
};

const delegationDetail = {
  parent_reservation_id: 'rsv_parent',
  child_reservation_id: 'rsv_child',
  amount: 40,
  unit: 'USD_MICROCENTS',
  depth: 1,
  scopes: ['tenant:acme', 'tenant:acme/workspace:w', 'tenant:acme/workspace:w/agent:researcher'],
};

const policy: Policy = {
  policyId: 'pol_1',
  tenant: 'acme',
  name: 'agents',
  scopePattern: 'tenant:acme/agent:*',
  priority: 10,
  status: 'ACTIVE',
  createdAt: '2026-01-01T00:00:00.000Z',
  owner: 'operator',
};

/** One audit entry per action (and the variants that mean other events). */
const ENTRIES: readonly [AuditAction, AuditEntry, readonly string[]][] = [
  ['tenant.create', { ...by, action: 'tenant.create', after: tenant }, ['tenant.created']],
  [
    'tenant.update',
    { ...by, action: 'tenant.update', before: tenant, after: { ...tenant, status: 'SUSPENDED' } },
    ['tenant.suspended'],
  ],
  [
    'tenant.update',
    { ...by, action: 'tenant.update', before: tenant, after: { ...tenant, name: 'Acme Inc' } },
    ['tenant.updated'],
  ],
  [
    'tenant.update',
    { ...by, action: 'tenant.update', before: tenant, after: { ...tenant, status: 'CLOSED' } },
    ['tenant.closed'],
  ],
  ['policy.create', { ...by, action: 'policy.create', after: policy }, ['policy.created']],
  [
    'policy.update',
    { ...by, action: 'policy.update', before: policy, after: { ...policy, priority: 20 } },
    ['policy.updated'],
  ],
  ['policy.update', { ...by, action: 'policy.update', before: policy, after: { ...policy } }, []],
  ['api_key.create', { ...by, action: 'api_key.create', after: key }, ['api_key.created']],
  [
    'api_key.update',
    { ...by, action: 'api_key.update', before: key, after: { ...key, permissions: ['decide'] } },
    ['api_key.permissions_changed'],
  ],
  [
    'api_key.update',
    { ...by, action: 'api_key.update', before: key, after: { ...key, name: 'x' } },
    [],
  ],
  [
    'api_key.revoke',
    { ...by, action: 'api_key.revoke', before: key, after: { ...key, status: 'REVOKED' } },
    ['api_key.revoked'],
  ],
  [
    'api_key.revoke',
    {
      ...by,
      ...cascade,
      action: 'api_key.revoke',
      before: key,
      after: { ...key, status: 'REVOKED' },
    },
    ['api_key.revoked_via_tenant_cascade'],
  ],
  ['budget.create', { ...by, action: 'budget.create', after: budget }, ['budget.created']],
  ...(['CREDIT', 'DEBIT', 'RESET', 'RESET_SPENT', 'REPAY_DEBT'] as const).map(
    (operation, i): [AuditAction, AuditEntry, readonly string[]] => [
      'budget.fund',
      {
        ...by,
        action: 'budget.fund',
        before: budget,
        after: budget,
        detail: { operation, amount: 10 },
      },
      [
        [
          'budget.funded',
          'budget.debited',
          'budget.reset',
          'budget.reset_spent',
          'budget.debt_repaid',
        ][i] ?? '',
      ],
    ],
  ),
  [
    'budget.update',
    { ...by, action: 'budget.update', before: budget, after: budget },
    ['budget.updated'],
  ],
  [
    'budget.freeze',
    { ...by, action: 'budget.freeze', before: budget, after: { ...budget, status: 'FROZEN' } },
    ['budget.frozen'],
  ],
  [
    'budget.unfreeze',
    { ...by, action: 'budget.unfreeze', before: { ...budget, status: 'FROZEN' }, after: budget },
    ['budget.unfrozen'],
  ],
  [
    'budget.close',
    { ...by, action: 'budget.close', before: budget, after: { ...budget, status: 'CLOSED' } },
    ['budget.closed'],
  ],
  [
    'budget.close',
    {
      ...by,
      ...cascade,
      action: 'budget.close',
      before: budget,
      after: { ...budget, status: 'CLOSED' },
    },
    ['budget.closed_via_tenant_cascade'],
  ],
  ['reservation.release', { ...by, action: 'reservation.release', reservationId: 'rsv_1' }, []],
  [
    'reservation.release',
    {
      ...by,
      action: 'reservation.release',
      reservationId: 'rsv_1',
      detail: {
        cascade: TENANT_CLOSED_CASCADE,
        scope: budget.ref.scope,
        unit: 'USD_MICROCENTS',
        released: 50,
      },
    },
    ['reservation.released_via_tenant_cascade'],
  ],
  ...(
    [
      ['reservation.refund', { reservationId: 'rsv_1' }],
      ['event.refund', { eventId: 'evt_usage_1' }],
    ] as const
  ).map(([action, target]): [AuditAction, AuditEntry, readonly string[]] => [
    action,
    {
      ...by,
      actor: { kind: 'key', keyId: 'key_1' },
      action,
      ...target,
      detail: refundDetail,
    } as AuditEntry,
    ['custom.refund'],
  ]),
  [
    'reservation.delegate',
    {
      ...by,
      actor: { kind: 'key', keyId: 'key_1' },
      action: 'reservation.delegate',
      reservationId: 'rsv_parent',
      detail: delegationDetail,
    },
    ['custom.delegation'],
  ],
  ['webhook.create', { ...by, action: 'webhook.create', after: subscription }, ['webhook.created']],
  [
    'webhook.update',
    {
      ...by,
      actor: { kind: 'admin', onBehalfOf: true },
      action: 'webhook.update',
      before: subscription,
      after: { ...subscription, status: 'PAUSED' },
    },
    ['webhook.paused'],
  ],
  [
    'webhook.delete',
    { ...by, action: 'webhook.delete', before: subscription },
    ['webhook.deleted'],
  ],
  [
    'webhook.disable',
    {
      ...by,
      actor: { kind: 'system' },
      action: 'webhook.disable',
      before: subscription,
      after: { ...subscription, status: 'DISABLED' },
      detail: { delivery_id: 'dlv_1' },
    },
    ['webhook.disabled'],
  ],
  [
    'webhook.disable',
    {
      ...by,
      ...cascade,
      action: 'webhook.disable',
      before: subscription,
      after: { ...subscription, status: 'DISABLED' },
    },
    ['webhook.disabled_via_tenant_cascade'],
  ],
  [
    'webhook_security.update',
    {
      ...by,
      action: 'webhook_security.update',
      before: defaultWebhookSecurity(false),
      after: defaultWebhookSecurity(true),
    },
    [],
  ],
];

const eventsOf = (e: AuditEntry) => auditEvents(auditRecordOf(auditItem(e)));

describe('lifecycle events from audit records', () => {
  it('has an entry here for every audited action', () => {
    const covered = new Set(ENTRIES.map(([action]) => action));
    expect([...covered].sort()).toEqual(Object.keys(AUDIT_OPERATIONS).sort());
    expect(Object.keys(AUDIT_EVENTS).sort()).toEqual(Object.keys(AUDIT_OPERATIONS).sort());
  });

  it.each(
    ENTRIES.map(
      ([action, entry, types]) => [action, types.join(',') || '(none)', entry, types] as const,
    ),
  )('%s → %s, valid against the reference schemas', (_action, _types, entry, types) => {
    const events = eventsOf(entry);

    expect(events.map((e) => e.event_type)).toEqual(types);
    for (const event of events) {
      expect(eventErrors(event), event.event_type).toEqual([]);
      expect(event).toMatchObject({
        tenant_id: 'acme',
        request_id: 'req-1',
        trace_id: by.traceId,
        source: 'budget-reservations',
      });
      expect(event.event_id).toMatch(/^evt_[0-9a-f]{32}$/);
    }
  });

  it('derives the same ids from the same record (a redelivered stream record), others from another', () => {
    const entry: AuditEntry = { ...by, action: 'tenant.create', after: tenant };

    const once = eventsOf(entry);
    const again = eventsOf(entry);
    const later = eventsOf({ ...entry, atMs: by.atMs + 1 });

    expect(again).toEqual(once);
    expect(later[0]?.event_id).not.toBe(once[0]?.event_id);
  });

  it('says who acted: the key, the operator on a tenant’s behalf, the service', () => {
    const key1 = eventsOf({
      ...by,
      actor: { kind: 'key', keyId: 'key_9' },
      action: 'budget.create',
      after: budget,
    });
    const [paused] = eventsOf(
      ENTRIES.find(([, e]) => e.action === 'webhook.update')?.[1] as AuditEntry,
    );
    const [disabled] = eventsOf(
      ENTRIES.find(
        ([, e]) => e.action === 'webhook.disable' && e.actor.kind === 'system',
      )?.[1] as AuditEntry,
    );

    expect(key1[0]?.actor).toEqual({ type: 'api_key', key_id: 'key_9' });
    expect(paused?.actor).toEqual({ type: 'admin_on_behalf_of' });
    expect(paused?.correlation_id).toBe('webhook_update:whsub_1:req-1');
    expect(disabled).toMatchObject({
      actor: { type: 'system' },
      correlation_id: 'webhook_auto_disable:whsub_1:dlv_1',
      data: { disable_reason: 'consecutive_failures_exceeded_threshold', new_status: 'DISABLED' },
    });
  });

  it('never carries a webhook URL past its origin, nor a permission outside the reference enum', () => {
    const [created] = eventsOf({ ...by, action: 'webhook.create', after: subscription });
    const [key1] = eventsOf({ ...by, action: 'api_key.create', after: key });

    expect(JSON.stringify(created)).not.toContain('secret-path');
    expect(key1?.data).toMatchObject({ permissions: ['reservations:create', 'webhooks:read'] });
  });

  it('makes a refund our custom.refund, category budget, on the deepest scope refunded, in the published schema', () => {
    const [reservation] = eventsOf({
      ...by,
      actor: { kind: 'key', keyId: 'key_1' },
      action: 'reservation.refund',
      reservationId: 'rsv_1',
      detail: refundDetail,
    });
    const [usage] = eventsOf({
      ...by,
      action: 'event.refund',
      eventId: 'evt_usage_1',
      detail: refundDetail,
    });

    expect(reservation).toMatchObject({
      event_type: 'custom.refund',
      category: 'budget',
      scope: 'tenant:acme/workspace:w',
      actor: { type: 'api_key', key_id: 'key_1' },
      data: { ...refundDetail, reservation_id: 'rsv_1' },
    });
    expect(reservation?.data).not.toHaveProperty('event_id');
    expect(usage).toMatchObject({
      actor: { type: 'admin' },
      data: { event_id: 'evt_usage_1', refund_id: 'rfd_1' },
    });
    expect(usage?.data).not.toHaveProperty('reservation_id');
    expect(EVENT_SCHEMAS['custom.refund'].parse(reservation)).toEqual(reservation);
  });

  it('makes a delegation our custom.delegation, category reservation, naming parent and child, in the published schema', () => {
    const [event] = eventsOf({
      ...by,
      actor: { kind: 'key', keyId: 'key_1' },
      action: 'reservation.delegate',
      reservationId: 'rsv_parent',
      detail: delegationDetail,
    });

    expect(event).toMatchObject({
      event_type: 'custom.delegation',
      category: 'reservation',
      scope: 'tenant:acme/workspace:w/agent:researcher',
      actor: { type: 'api_key', key_id: 'key_1' },
      data: delegationDetail,
    });
    expect(EVENT_SCHEMAS['custom.delegation'].parse(event)).toEqual(event);
  });
});
