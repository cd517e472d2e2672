import { describe, expect, it } from 'vitest';
import type { ApiKey } from '../../functions/domain/api-keys.js';
import { SPEC_PERMISSIONS } from '../../functions/domain/permissions.js';
import { apiKeyItem, apiKeyOf, apiKeyPointerItem } from '../../functions/store/entities/api-key.js';
import { auditItem, auditRecordOf } from '../../functions/store/entities/audit.js';
import { eventItem, eventOf } from '../../functions/store/entities/event.js';
import { idempotencyItem } from '../../functions/store/entities/idempotency.js';
import {
  budgetOfItem,
  ledgerIndexItems,
  ledgerItem,
  shardItem,
} from '../../functions/store/entities/ledger.js';
import { closedPeriodItem, closedPeriodOf } from '../../functions/store/entities/period.js';
import { refusalItem, refusalOf } from '../../functions/store/entities/refusal.js';
import { reservationItem, reservationOf } from '../../functions/store/entities/reservation.js';
import { tenantItem, tenantOf } from '../../functions/store/entities/tenant.js';
import { keys } from '../../functions/store/keys.js';
import { anEvent, aReservation, budgetOf } from '../helpers/budgets.js';

// One module per item family declares its items (store/entities/*): what is written from now on
// carries the family's version `v` and decodes back to the value it encodes; items written before
// read through the family's upgrade of unversioned items, as they did before.

const scopes = ['tenant:t', 'tenant:t/workspace:w'];
const reservation = aReservation(scopes, {
  subject: { workspace: 'w' },
  holds: [
    { scope: 'tenant:t', shard: 0 },
    { scope: 'tenant:t/workspace:w', shard: 0, periodStart: 500 },
  ],
  metadata: { run: 'r-1', n: 18446744073709551616n.toString() },
});
const key: ApiKey = {
  keyId: 'key_1',
  keyPrefix: 'cyc_live_abcde',
  tenant: 't',
  name: 'agent',
  permissions: ['reservations:create'],
  createdAt: '2026-01-01T00:00:00.000Z',
  status: 'ACTIVE',
};
const event = anEvent(scopes, { metrics: { tokens: 5 }, metadata: { run: 'r-1' } });
const outcome = { fingerprint: 'f', result: {} };
const funded = { scope: 'tenant:t', unit: 'TOKENS' as const, allocated: 10, spent: 0 };
const ledger = { ...funded, reserved: 0, debt: 0, overdraftLimit: 0, remaining: 10 };

describe('items written from now on', () => {
  it('carry their family’s version, every family', () => {
    const budget = budgetOf(ledger, {
      period: { start: 0, end: 86_400_000, spec: { kind: 'DAILY' }, amount: 10 },
    });
    const items = [
      ledgerItem('t', budget, 'now'),
      shardItem(budget.ref, 1, { ...budget.counters, gated: false }),
      ...ledgerIndexItems('t', budget.ref, [{ kind: 'tenant', value: 't' }]),
      closedPeriodItem('t', budget),
      reservationItem(reservation, outcome),
      eventItem(event, outcome),
      idempotencyItem({ tenant: 't', operation: 'fund', key: 'k' }, outcome, 0),
      tenantItem({ tenantId: 't', name: 'T', status: 'ACTIVE', createdAt: 'now' }),
      apiKeyItem('hash', key),
      apiKeyPointerItem('hash', 'key_1'),
      auditItem({
        tenant: 't',
        atMs: 0,
        actor: { kind: 'admin' },
        requestId: 'r',
        action: 'reservation.release',
        reservationId: 'rsv_1',
      }),
      refusalItem({
        refusalId: 'ref_1',
        tenant: 't',
        atMs: 0,
        code: 'BUDGET_EXCEEDED',
        scope: 'tenant:t',
        unit: 'TOKENS',
        requested: 1,
        remaining: 0,
        subject: {},
        action: { kind: 'k', name: 'n' },
        suppressed: 0,
      }),
    ];

    for (const item of items) expect(item.v, String(item.type)).toBe(1);
  });

  it('decode to the values they encode', () => {
    const budget = budgetOf(ledger, {
      status: 'FROZEN',
      caps: { caps: { maxTokens: 5 }, belowRemainingBps: 100 },
      thresholds: [25],
    });

    expect(reservationOf(reservationItem(reservation, outcome))).toEqual(reservation);
    expect(eventOf(eventItem(event, outcome))).toEqual(event);
    expect(apiKeyOf(apiKeyItem('hash', key))).toEqual(key);
    expect(budgetOfItem({ ...ledgerItem('t', budget, 'now'), status: 'FROZEN' })).toEqual(budget);
    expect(
      tenantOf(tenantItem({ tenantId: 't', name: 'T', status: 'ACTIVE', createdAt: 'x' })),
    ).toEqual({ tenantId: 't', name: 'T', status: 'ACTIVE', createdAt: 'x', updatedAt: undefined });
  });

  it('keep a closed period’s counters as at the boundary, its debt moved on', () => {
    const budget = budgetOf(
      { ...ledger, spent: 4, debt: 3, remaining: 3 },
      { period: { start: 0, end: 86_400_000, spec: { kind: 'DAILY' }, amount: 10 } },
    );

    expect(closedPeriodOf(closedPeriodItem('t', budget))).toMatchObject({
      counters: { allocated: 10, spent: 4, reserved: 0, debt: 0, remaining: 6 },
      period: { start: 0, closed: true },
    });
  });

  it('refusal records round-trip', () => {
    const refusal = {
      refusalId: 'ref_1',
      tenant: 't',
      atMs: 5_000,
      code: 'BUDGET_FROZEN' as const,
      scope: 'tenant:t',
      unit: 'TOKENS' as const,
      requested: 3,
      remaining: 2,
      subject: { workspace: 'w' },
      action: { kind: 'k', name: 'n' },
      keyId: 'key_1',
      requestId: 'req',
      suppressed: 4,
    };

    expect(refusalOf(refusalItem(refusal))).toEqual(refusal);
  });
});

describe('items written before versions (their upgrades)', () => {
  it('reads a reservation of 0.2: id and scope path copied, metadata as a map, no ttl_ms', () => {
    const item = {
      ...keys.reservation('rsv_1'),
      type: 'reservation',
      reservation_id: 'rsv_1',
      scope_path: 'tenant:t/workspace:w',
      tenant: 't',
      status: 'ACTIVE',
      idempotency_key: 'k',
      subject: { workspace: 'w' },
      action: { kind: 'llm', name: 'm' },
      unit: 'TOKENS',
      estimate: 10,
      created_at_ms: 1_000,
      expires_at_ms: 61_000,
      grace_period_ms: 5_000,
      scopes,
      overage_policy: 'REJECT',
      metadata: { run: 'r-1', n: 7 },
    };

    expect(reservationOf(item)).toEqual({
      ...reservation,
      holds: scopes.map((scope) => ({ scope, shard: 0 })),
      metadata: { run: 'r-1', n: 7 },
    });
  });

  it('reads an event of 0.1: metrics and metadata as maps', () => {
    const { v: _v, metrics_json: _m, metadata_json: _d, ...current } = eventItem(event, outcome);

    expect(eventOf({ ...current, metrics: { tokens: 5 }, metadata: { run: 'r-1' } })).toEqual(
      event,
    );
  });

  it('reads a key stored before revocation and budgets:write existed as live, with its rights', () => {
    const {
      v: _v,
      status: _s,
      ...before
    } = apiKeyItem('hash', { ...key, permissions: [...SPEC_PERMISSIONS] });

    expect(apiKeyOf(before)).toMatchObject({
      status: 'ACTIVE',
      permissions: [...SPEC_PERMISSIONS, 'budgets:write'],
    });
    // A versioned key holds what was stored: its rights were made effective when written.
    expect(apiKeyOf(apiKeyItem('hash', key)).permissions).toEqual(['reservations:create']);
  });

  it('reads an audit record of the budget-only trail with its operation and resource', () => {
    const item = {
      pk: 'AUDIT#t',
      sk: '000000000001000#req#x',
      type: 'audit',
      tenant: 't',
      at_ms: 1_000,
      actor: 'admin',
      request_id: 'req',
      action: 'budget.fund',
      scope: 'tenant:t',
      unit: 'TOKENS',
    };

    expect(auditRecordOf(item)).toMatchObject({
      logId: 't:000000000001000#req#x',
      operation: 'fundBudget',
      resourceType: 'budget',
      resourceId: 'tenant:t#TOKENS',
    });
  });
});
