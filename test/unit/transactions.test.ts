import { describe, expect, it } from 'vitest';
import { holdChange, releaseChange } from '../../functions/domain/ledger.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { eventTransaction } from '../../functions/store/events.js';
import { ledgerUpdate } from '../../functions/store/ledgers.js';
import { reserveTransaction, settleTransaction } from '../../functions/store/reservations.js';

const scopes = ['tenant:t', 'tenant:t/workspace:w', 'tenant:t/workspace:w/agent:a'];
const reservation: Reservation = {
  reservationId: 'rsv_1',
  tenant: 't',
  status: 'ACTIVE',
  idempotencyKey: 'k',
  subject: { workspace: 'w', agent: 'a' },
  action: { kind: 'llm', name: 'm' },
  reserved: { unit: 'TOKENS', amount: 10 },
  createdAtMs: 1_000,
  expiresAtMs: 61_000,
  gracePeriodMs: 5_000,
  scopePath: scopes[2] ?? '',
  affectedScopes: scopes,
  overagePolicy: 'REJECT',
};
const response = { fingerprint: 'f', statusCode: 200, body: {} };

describe('reserveTransaction', () => {
  it('is one conditional hold per scope plus the reservation record: scopes + 1 items', () => {
    const items = reserveTransaction({
      reservation,
      holds: scopes.map((s) => holdChange(s, 'TOKENS', 10)),
      response,
    });

    expect(items).toHaveLength(scopes.length + 1);
    for (const item of items.slice(0, 3)) {
      expect(item.Update?.ConditionExpression).toBe(
        'attribute_exists(#pk) AND #remaining >= :g_amount AND #debt = :g_zero',
      );
      expect(item.Update?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    }
    expect(items[3]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
    expect(items[3]?.Put?.Item).toMatchObject({
      status: 'ACTIVE',
      deadline_ms: 66_000,
      due_pk: expect.stringMatching(/^DUE#\d+$/),
    });
  });
});

describe('settleTransaction', () => {
  it('conditions a commit on ACTIVE, the tenant and the deadline not yet passed: scopes + 2 items', () => {
    const items = settleTransaction({
      reservation,
      to: 'COMMITTED',
      now: 2_000,
      changes: scopes.map((s) => releaseChange(s, 'TOKENS', 10)),
      committed: { unit: 'TOKENS', amount: 7 },
      idempotency: { scope: { tenant: 't', operation: 'commit', key: 'c' }, response },
    });

    expect(items).toHaveLength(scopes.length + 2);
    expect(items[0]?.Update?.ConditionExpression).toBe(
      '#status = :active AND #tenant = :tenant AND #deadline > :now',
    );
    expect(items[0]?.Update?.UpdateExpression).toContain('REMOVE #due_pk, #due_sk');
    expect(items[4]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });

  it('conditions an expiry on the deadline having passed, with no idempotency record', () => {
    const items = settleTransaction({ reservation, to: 'EXPIRED', now: 70_000, changes: [] });

    expect(items).toHaveLength(1);
    expect(items[0]?.Update?.ConditionExpression).toContain('#deadline <= :now');
  });
});

describe('ledgerUpdate', () => {
  it('adds signed deltas and re-checks a snapshot exactly', () => {
    const item = ledgerUpdate({
      scope: 'tenant:t',
      unit: 'TOKENS',
      delta: { reserved: -10, spent: 12, debt: 3, remaining: -5 },
      guard: { kind: 'snapshot', values: { remaining: 2, debt: 0, overdraftLimit: 100 } },
    });

    expect(item.Update?.UpdateExpression).toBe(
      'SET #spent = #spent + :d_spent, #reserved = #reserved + :d_reserved, #debt = #debt + :d_debt, #remaining = #remaining + :d_remaining',
    );
    expect(item.Update?.ConditionExpression).toBe(
      'attribute_exists(#pk) AND #remaining = :s_remaining AND #debt = :s_debt AND #overdraft_limit = :s_overdraft_limit',
    );
  });
});

describe('eventTransaction', () => {
  it('is one debit per scope plus the event record: scopes + 1 items', () => {
    const items = eventTransaction({
      eventId: 'evt_1',
      tenant: 't',
      record: {},
      charges: scopes.map((s) => ({
        scope: s,
        unit: 'TOKENS' as const,
        delta: { spent: 5, remaining: -5 },
        guard: { kind: 'covers' as const, amount: 5 },
      })),
      response,
    });

    expect(items).toHaveLength(scopes.length + 1);
    expect(items[0]?.Update?.ConditionExpression).toBe(
      'attribute_exists(#pk) AND #remaining >= :g_amount',
    );
  });
});
