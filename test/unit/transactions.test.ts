import { describe, expect, it } from 'vitest';
import { holdChange, releaseChange } from '../../functions/domain/ledger.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { newApiKeyTransaction } from '../../functions/store/api-keys.js';
import { eventTransaction } from '../../functions/store/events.js';
import {
  idempotencyPut,
  settledOutcomeOf,
  storedOutcomeOf,
  UNRENDERABLE,
} from '../../functions/store/idempotency.js';
import { ledgerUpdate, newLedgerTransaction } from '../../functions/store/ledgers.js';
import {
  expiryBatchTransaction,
  extensionTransaction,
  reserveTransaction,
  settleTransaction,
} from '../../functions/store/reservation-writes.js';
import { newTenantPut } from '../../functions/store/tenants.js';
import { classifyCancellation } from '../../functions/store/write.js';

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
const outcome = { fingerprint: 'f', result: {} };

describe('reserveTransaction', () => {
  it('is one conditional hold per scope plus the reservation record: scopes + 1 items', () => {
    const { items } = reserveTransaction({
      reservation,
      holds: scopes.map((s) => holdChange(s, 'TOKENS', 10)),
      outcome,
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

describe('compact stored results', () => {
  const balances = scopes.map((scope, i) => ({
    scope,
    unit: 'TOKENS' as const,
    allocated: 1_000 * (i + 1),
    spent: 0,
    reserved: 10,
    debt: 0,
    overdraftLimit: 0,
    remaining: 1_000 * (i + 1) - 10,
  }));
  const reserved = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath: scopes[2],
    reserved: { unit: 'TOKENS', amount: 10 },
    reservationId: 'rsv_1',
    expiresAtMs: 61_000,
    balances,
  };

  it('stores a reservation’s balances compactly and replays exactly the result it was given', () => {
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: { fingerprint: 'f', result: reserved },
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.result).toBeUndefined();
    expect(JSON.stringify(item).length).toBeLessThan(1_000);
    expect(storedOutcomeOf(item)).toEqual({ fingerprint: 'f', result: reserved });
  });

  it('keeps the caps of an ALLOW_WITH_CAPS reservation beside its compact balances', () => {
    const capped = { ...reserved, caps: { maxTokens: 512, toolAllowlist: ['search'] } };
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: { fingerprint: 'f', result: capped },
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.result).toBeUndefined();
    expect(item.caps).toBe('{"maxTokens":512,"toolAllowlist":["search"]}');
    expect(storedOutcomeOf(item)).toEqual({ fingerprint: 'f', result: capped });
  });

  it('stores the whole result when the item could not rebuild it', () => {
    const odd = { ...reserved, expiresAtMs: 99 };
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: { fingerprint: 'f', result: odd },
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.balances_compact).toBeUndefined();
    expect(storedOutcomeOf(item)).toEqual({ fingerprint: 'f', result: odd });
  });
});

describe('listing spread', () => {
  it('lists each reservation under one spread of every listing key, and a settle keeps it there', () => {
    const spreads = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = { ...reservation, reservationId: `rsv_${i}` };
      const put = reserveTransaction({ reservation: r, holds: [], outcome }).items[0]?.Put?.Item;
      const suffix = /(~\d)?$/.exec(String(put?.tenant_pk))?.[0] ?? '';
      spreads.add(suffix);
      expect(put).toMatchObject({
        tenant_pk: `T#t${suffix}`,
        status_pk: `T#t#ACTIVE${suffix}`,
        workspace_pk: `T#t#workspace#w${suffix}`,
        agent_pk: `T#t#agent#a${suffix}`,
      });
      const settle = settleTransaction({ reservation: r, to: 'RELEASED', now: 2_000, changes: [] });
      expect(settle.items[0]?.Update?.ExpressionAttributeValues?.[':status_pk']).toBe(
        `T#t#RELEASED${suffix}`,
      );
    }
    // Spread 0 has no suffix: the key every reservation had before listings were spread.
    expect([...spreads].sort()).toEqual(['', '~1', '~2', '~3']);
  });
});

describe('settleTransaction', () => {
  it('conditions a commit on ACTIVE, the tenant and the deadline not yet passed: scopes + 1 items', () => {
    const { items } = settleTransaction({
      reservation,
      to: 'COMMITTED',
      now: 2_000,
      changes: scopes.map((s) => releaseChange(s, 'TOKENS', 10)),
      committed: { unit: 'TOKENS', amount: 7 },
      idempotency: { scope: { tenant: 't', operation: 'commit', key: 'c' }, outcome },
    });

    expect(items).toHaveLength(scopes.length + 1);
    expect(items[0]?.Update?.ConditionExpression).toBe(
      '#status = :active AND #tenant = :tenant AND #deadline > :now',
    );
    expect(items[0]?.Update?.UpdateExpression).toContain('REMOVE #due_pk, #due_sk');
    // The outcome rides on the reservation: no idempotency record of its own.
    expect(items[0]?.Update?.ExpressionAttributeValues).toMatchObject({
      ':settle_op': 'commit',
      ':settle_key': 'c',
      ':settle_fingerprint': 'f',
    });
  });

  it('stores a commit’s balances compactly on the reservation and replays exactly its result', () => {
    const committed = {
      status: 'COMMITTED',
      charged: { unit: 'TOKENS', amount: 7 },
      released: { unit: 'TOKENS', amount: 3 },
      balances: scopes.map((scope) => ({
        scope,
        unit: 'TOKENS',
        allocated: 100,
        spent: 7,
        reserved: 0,
        debt: 0,
        overdraftLimit: 0,
        remaining: 93,
      })),
    };
    const { items } = settleTransaction({
      reservation,
      to: 'COMMITTED',
      now: 2_000,
      changes: [],
      committed: { unit: 'TOKENS', amount: 7 },
      idempotency: {
        scope: { tenant: 't', operation: 'commit', key: 'c' },
        outcome: { fingerprint: 'f', result: committed },
      },
    });
    const values = items[0]?.Update?.ExpressionAttributeValues ?? {};
    const item: Record<string, unknown> = {
      scopes,
      unit: 'TOKENS',
      estimate: 10,
      committed: 7,
      ...Object.fromEntries(
        Object.entries(values)
          .filter(([k]) => k.startsWith(':settle_'))
          .map(([k, v]) => [k.slice(1), v]),
      ),
    };

    expect(item.settle_result).toBeUndefined();
    expect(settledOutcomeOf(item, 'commit', 'c')).toEqual({ fingerprint: 'f', result: committed });
    expect(settledOutcomeOf(item, 'commit', 'other')).toBeUndefined();
    expect(settledOutcomeOf(item, 'release', 'c')).toBeUndefined();
  });

  it('conditions an expiry on the deadline having passed, with no idempotency record', () => {
    const items = expiryBatchTransaction([reservation], [], 70_000);

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
    const { items } = eventTransaction({
      eventId: 'evt_1',
      tenant: 't',
      createdAtMs: 1_000,
      subject: { workspace: 'w' },
      action: { kind: 'llm', name: 'm' },
      actual: { unit: 'TOKENS', amount: 5 },
      scopes,
      overagePolicy: 'REJECT',
      charges: scopes.map((s) => ({
        scope: s,
        unit: 'TOKENS' as const,
        delta: { spent: 5, remaining: -5 },
        guard: { kind: 'covers' as const, amount: 5 },
      })),
      outcome,
    });

    expect(items).toHaveLength(scopes.length + 1);
    expect(items[0]?.Update?.ConditionExpression).toBe(
      'attribute_exists(#pk) AND #remaining >= :g_amount',
    );
  });
});

describe('extensionTransaction', () => {
  it('moves expiry, deadline and due key, conditioned on the expiry that was read', () => {
    const { items } = extensionTransaction({
      reservation,
      newExpiresAtMs: 71_000,
      now: 2_000,
      idempotency: { scope: { tenant: 't', operation: 'extend', key: 'e' }, outcome },
    });

    expect(items).toHaveLength(2);
    expect(items[0]?.Update?.ConditionExpression).toBe(
      '#status = :active AND #tenant = :tenant AND #expires = :seen AND #expires > :now',
    );
    expect(items[0]?.Update?.ExpressionAttributeValues).toMatchObject({
      ':seen': 61_000,
      ':expires': 71_000,
      ':deadline': 76_000,
    });
    expect(items[1]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });
});

describe('idempotencyPut', () => {
  it('stores the fingerprint and the result, and expires seven days later', () => {
    const put = idempotencyPut({ tenant: 't', operation: 'fund', key: 'k' }, outcome, 1_000);

    expect(put.Put?.Item).toMatchObject({ fingerprint: 'f', result: '{}', ttl: 604_801 });
    expect(put.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });
});

describe('newLedgerTransaction', () => {
  it('puts the ledger, one index entry per path segment and the audit record, under an existing tenant', () => {
    const ledger = {
      scope: 'tenant:t/workspace:w',
      unit: 'TOKENS' as const,
      allocated: 10,
      spent: 0,
      reserved: 0,
      debt: 0,
      overdraftLimit: 0,
      remaining: 10,
    };
    const items = newLedgerTransaction({
      tenant: 't',
      segments: [
        { kind: 'tenant', value: 't' },
        { kind: 'workspace', value: 'w' },
      ],
      ledger,
      createdAt: '2026-01-01T00:00:00.000Z',
      audit: {
        tenant: 't',
        atMs: 1_000,
        actor: { kind: 'key', keyId: 'key_1' },
        requestId: 'req-1',
        action: 'budget.create',
        scope: 'tenant:t/workspace:w',
        unit: 'TOKENS',
        after: ledger,
      },
    });

    expect(items).toHaveLength(5);
    for (const item of [...items.slice(0, 3), items[4]])
      expect(item?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
    expect(items[2]?.Put?.Item).toMatchObject({ type: 'ledger-index', level: 'workspace' });
    expect(items[3]?.ConditionCheck?.Key).toEqual({ pk: 'TENANT#t', sk: '-' });
    expect(items[4]?.Put?.Item).toMatchObject({
      type: 'audit',
      actor: 'key_1',
      request_id: 'req-1',
      action: 'budget.create',
      after: { allocated: 10, remaining: 10 },
    });
    expect(items[0]?.Put?.Item).not.toHaveProperty('caps');
  });

  it('puts a budget’s caps on its ledger item only, shard 0 of a sharded budget, as one text', () => {
    const ledger = {
      scope: 'tenant:t',
      unit: 'TOKENS' as const,
      allocated: 10,
      spent: 0,
      reserved: 0,
      debt: 0,
      overdraftLimit: 0,
      remaining: 10,
    };
    const items = newLedgerTransaction({
      tenant: 't',
      segments: [{ kind: 'tenant', value: 't' }],
      ledger,
      createdAt: '2026-01-01T00:00:00.000Z',
      audit: {
        tenant: 't',
        atMs: 1_000,
        actor: { kind: 'admin' },
        requestId: 'req-1',
        action: 'budget.create',
        scope: 'tenant:t',
        unit: 'TOKENS',
        after: ledger,
      },
      shards: 3,
      caps: { caps: { maxTokens: 256, toolDenylist: ['shell'] }, belowRemainingBps: 2_000 },
    });
    const puts = items.flatMap((i) => (i.Put ? [i.Put.Item] : []));

    expect(puts[0]).toMatchObject({
      type: 'ledger',
      shards: 3,
      caps: '{"maxTokens":256,"toolDenylist":["shell"]}',
      caps_bps: 2_000,
    });
    const shards = puts.filter((p) => p?.type === 'ledger-shard');
    expect(shards).toHaveLength(2);
    for (const shard of shards) expect(shard).not.toHaveProperty('caps');
  });
});

describe('newApiKeyTransaction and newTenantPut', () => {
  it('stores a key only under an existing tenant, and a tenant only once', () => {
    const key = {
      keyId: 'key_1',
      keyPrefix: 'cyc_live_abcde',
      tenant: 't',
      name: 'n',
      permissions: [],
      createdAt: '2026-01-01T00:00:00.000Z',
      status: 'ACTIVE' as const,
    };

    const items = newApiKeyTransaction('hash', key);
    const tenant = newTenantPut({ tenantId: 't', name: 'T', status: 'ACTIVE', createdAt: 'x' });

    expect(items[0]?.ConditionCheck?.ConditionExpression).toBe('attribute_exists(#pk)');
    expect(items[1]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
    expect(items[2]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
    expect(JSON.stringify(items)).not.toContain('cyc_live_abcdefgh');
    expect(tenant.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });
});

describe('classifyCancellation', () => {
  const ledgerItem = {
    type: 'ledger',
    scope: 'tenant:t',
    unit: 'TOKENS',
    allocated: 10,
    spent: 0,
    reserved: 8,
    debt: 0,
    overdraft_limit: 0,
    remaining: 2,
  };
  const layout = { recordAt: 2, proofs: [0, 1] };

  it('reads a failed record condition as a duplicate carrying the stored outcome', () => {
    const reasons = [
      { code: 'None' },
      { code: 'None' },
      { code: 'ConditionalCheckFailed', item: { fingerprint: 'f', result: '{"a":1}' } },
    ];

    expect(classifyCancellation(reasons, layout)).toEqual({
      kind: 'duplicate',
      stored: { fingerprint: 'f', result: { a: 1 } },
    });
  });

  it('reads failed ledger conditions as stale, with each ledger decoded as it was (or missing)', () => {
    const reasons = [
      { code: 'ConditionalCheckFailed', item: ledgerItem },
      { code: 'ConditionalCheckFailed' },
      { code: 'None' },
    ];

    const outcome = classifyCancellation(reasons, layout);

    expect(outcome).toEqual({
      kind: 'stale',
      refused: [
        { index: 0, ledger: expect.objectContaining({ scope: 'tenant:t', remaining: 2 }) },
        { index: 1, ledger: undefined },
      ],
    });
  });

  it('reads a failed reservation condition (before the ledgers) as stale with no ledger evidence', () => {
    const reasons = [{ code: 'ConditionalCheckFailed' }, { code: 'None' }, { code: 'None' }];

    expect(classifyCancellation(reasons, { recordAt: 2, proofs: [undefined, 0] })).toEqual({
      kind: 'stale',
      refused: [],
    });
  });

  it('reads a failed shard condition as stale with no evidence: a shard proves nothing of its budget', () => {
    const reasons = [{ code: 'ConditionalCheckFailed', item: ledgerItem }, { code: 'None' }];

    expect(classifyCancellation(reasons, { recordAt: 1, proofs: [undefined] })).toEqual({
      kind: 'stale',
      refused: [],
    });
  });
});

describe('storedOutcomeOf', () => {
  it('decodes a result, and keeps the fingerprint of a 0.1.0 record that cannot be rendered', () => {
    expect(storedOutcomeOf({ fingerprint: 'f', result: '{"a":1}' })).toEqual({
      fingerprint: 'f',
      result: { a: 1 },
    });
    expect(storedOutcomeOf({ fingerprint: 'f', response_body: '{}' })).toEqual({
      fingerprint: 'f',
      result: UNRENDERABLE,
    });
    expect(storedOutcomeOf({ type: 'reservation' })).toBeUndefined();
  });
});
