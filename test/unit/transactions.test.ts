import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emptyLedger } from '../../functions/domain/budget.js';
import { emptyShards, respread } from '../../functions/domain/escrow.js';
import { fingerprint } from '../../functions/domain/fingerprint.js';
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
import { keys } from '../../functions/store/keys.js';
import { ledgerUpdate, newLedgerTransaction } from '../../functions/store/ledgers.js';
import {
  expiryBatchTransaction,
  extensionTransaction,
  reserveTransaction,
  settleTransaction,
} from '../../functions/store/reservation-writes.js';
import { placeChanges } from '../../functions/store/shards.js';
import { newTenantPut } from '../../functions/store/tenants.js';
import { classifyCancellation } from '../../functions/store/write.js';
import { applyUpdate, itemSize, writeUnits } from '../bench/capacity.js';
import { budgetOf, budgetsOf } from '../helpers/budgets.js';

/** A budget in TOKENS with `allocated` and nothing spent or held. */
const funded = (scope: string, allocated: number) => ({
  ...emptyLedger(scope, 'TOKENS'),
  allocated,
  remaining: allocated,
});

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
  holds: scopes.map((scope) => ({ scope, shard: 0 })),
  overagePolicy: 'REJECT',
  ttlMs: 60_000,
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
        'attribute_exists(#pk) AND #remaining >= :g_amount AND #debt = :g_zero AND (attribute_not_exists(#bstatus) OR #bstatus = :bactive)',
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

describe('stored formats', () => {
  const hex = 'ab'.repeat(32);
  const ledger = (scope: string, spent: number, reserved: number) => ({
    scope,
    unit: 'TOKENS' as const,
    allocated: 1_000,
    spent,
    reserved,
    debt: 0,
    overdraftLimit: 0,
    remaining: 1_000 - spent - reserved,
  });
  const reserved = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath: scopes[2],
    reserved: { unit: 'TOKENS', amount: 10 },
    reservationId: 'rsv_1',
    expiresAtMs: 61_000,
    balances: scopes.map((s) => ledger(s, 0, 10)),
  };
  const committed = {
    status: 'COMMITTED',
    charged: { unit: 'TOKENS', amount: 7 },
    released: { unit: 'TOKENS', amount: 3 },
    balances: scopes.map((s) => ledger(s, 7, 0)),
  };

  it('stores a SHA-256 fingerprint as its 32 bytes and reads back the hex it was given', () => {
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: { fingerprint: hex, result: reserved },
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.fingerprint).toBeInstanceOf(Uint8Array);
    expect((item.fingerprint as Uint8Array).byteLength).toBe(32);
    expect(storedOutcomeOf(item)).toEqual({ fingerprint: hex, result: reserved });
  });

  it('replays a reservation item of 0.3: text balances with a scope index, a hex fingerprint', () => {
    const item = {
      ...keys.reservation('rsv_1'),
      type: 'reservation',
      scopes,
      unit: 'TOKENS',
      estimate: 10,
      created_at_ms: 1_000,
      ttl_ms: 60_000,
      fingerprint: hex,
      balances_compact: JSON.stringify(scopes.map((_, i) => [i, 1_000, 0, 10, 0, 0, 990])),
    };

    expect(storedOutcomeOf(item)).toEqual({ fingerprint: hex, result: reserved });
  });

  it('replays a settlement of 0.3: its operation named, text balances, a hex fingerprint', () => {
    const item = {
      scopes,
      unit: 'TOKENS',
      estimate: 10,
      status: 'COMMITTED',
      committed: 7,
      settle_op: 'commit',
      settle_key: 'c',
      settle_fingerprint: hex,
      settle_balances: JSON.stringify(scopes.map((_, i) => [i, 1_000, 7, 0, 0, 0, 993])),
    };

    expect(settledOutcomeOf(item, 'commit', 'c')).toEqual({ fingerprint: hex, result: committed });
    expect(settledOutcomeOf(item, 'release', 'c')).toBeUndefined();
  });

  it('keeps a 3-scope reservation under 1 KB through its commit: 2 write units each', () => {
    // Sized by AWS's rules (test/bench/capacity.ts): UUID keys, a 14-character tenant.
    const tenant = 't-0123456789ab';
    const paths = [
      `tenant:${tenant}`,
      `tenant:${tenant}/workspace:w`,
      `tenant:${tenant}/workspace:w/agent:a`,
    ];
    const r: Reservation = {
      ...reservation,
      reservationId: `rsv_${'0'.repeat(32)}`,
      tenant,
      idempotencyKey: randomUUID(),
      action: { kind: 'llm.completion', name: 'bench-model' },
      reserved: { unit: 'USD_MICROCENTS', amount: 1_000 },
      createdAtMs: 1_795_396_563_582,
      expiresAtMs: 1_795_396_623_582,
      scopePath: paths[2] ?? '',
      holds: paths.map((scope) => ({ scope, shard: 0 })),
    };
    const big = (scope: string, spent: number, held: number) => ({
      ...ledger(scope, spent, held),
      unit: 'USD_MICROCENTS' as const,
      allocated: 987_654_321_012,
      remaining: 987_654_321_012 - spent - held,
    });
    const put = reserveTransaction({
      reservation: r,
      holds: [],
      outcome: {
        fingerprint: fingerprint({ a: 1 }),
        result: {
          kind: 'reserved',
          affectedScopes: paths,
          scopePath: paths[2],
          reserved: r.reserved,
          reservationId: r.reservationId,
          expiresAtMs: r.expiresAtMs,
          balances: paths.map((s) => big(s, 123_456_789, 1_000)),
        },
      },
    }).items[0]?.Put?.Item;
    const update = settleTransaction({
      reservation: r,
      to: 'COMMITTED',
      now: r.createdAtMs + 150,
      changes: [],
      committed: { unit: 'USD_MICROCENTS', amount: 800 },
      detail: {},
      idempotency: {
        scope: { tenant, operation: 'commit', key: randomUUID() },
        outcome: {
          fingerprint: fingerprint({ b: 2 }),
          result: {
            status: 'COMMITTED',
            charged: { unit: 'USD_MICROCENTS', amount: 800 },
            released: { unit: 'USD_MICROCENTS', amount: 200 },
            balances: paths.map((s) => big(s, 123_457_589, 0)),
          },
        },
      },
    }).items[0]?.Update;
    const before = put ?? {};
    const after = applyUpdate(
      before,
      update?.UpdateExpression ?? '',
      update?.ExpressionAttributeNames,
      update?.ExpressionAttributeValues,
    );

    expect(after.settle_rows).toBeDefined();
    expect(itemSize(before)).toBeLessThan(900);
    expect(itemSize(after)).toBeLessThan(1_000);
    expect(writeUnits(undefined, before, true).table).toBe(2);
    expect(writeUnits(before, after, true).table).toBe(2);
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
    expect(items[0]?.Update?.UpdateExpression).toContain(
      'REMOVE #due_pk, #due_sk, #deadline, #hold_shards',
    );
    // The outcome rides on the reservation: no idempotency record of its own. The operation is
    // the status written (COMMITTED), so it is not stored again.
    const values = items[0]?.Update?.ExpressionAttributeValues;
    expect(values).toMatchObject({
      ':to': 'COMMITTED',
      ':settle_key': 'c',
      ':settle_fingerprint': 'f',
    });
    expect(values?.[':settle_op']).toBeUndefined();
    // A commit without metrics or metadata records no empty detail.
    expect(items[0]?.Update?.UpdateExpression).not.toContain('#detail');
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
      status: 'COMMITTED',
      committed: 7,
      ...Object.fromEntries(
        Object.entries(values)
          .filter(([k]) => k.startsWith(':settle_'))
          .map(([k, v]) => [k.slice(1), v]),
      ),
    };

    expect(item.settle_result).toBeUndefined();
    expect(item.settle_rows).toEqual([100, 7, 0, 0, 0, 100, 7, 0, 0, 0, 100, 7, 0, 0, 0]);
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
      'attribute_exists(#pk) AND #remaining = :s_remaining AND #debt = :s_debt AND #overdraft_limit = :s_overdraft_limit AND attribute_not_exists(#shards)',
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
    const ledger = funded('tenant:t/workspace:w', 10);
    const items = newLedgerTransaction({
      tenant: 't',
      segments: [
        { kind: 'tenant', value: 't' },
        { kind: 'workspace', value: 'w' },
      ],
      budget: budgetOf(ledger),
      createdAt: '2026-01-01T00:00:00.000Z',
      audit: {
        tenant: 't',
        atMs: 1_000,
        actor: { kind: 'key', keyId: 'key_1' },
        requestId: 'req-1',
        action: 'budget.create',
        after: budgetOf(ledger),
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
    const ledger = funded('tenant:t', 10);
    const items = newLedgerTransaction({
      tenant: 't',
      segments: [{ kind: 'tenant', value: 't' }],
      budget: budgetOf(ledger, {
        caps: { caps: { maxTokens: 256, toolDenylist: ['shell'] }, belowRemainingBps: 2_000 },
        layout: { kind: 'sharded', shards: respread(emptyShards(3), ledger), gated: false },
      }),
      createdAt: '2026-01-01T00:00:00.000Z',
      audit: {
        tenant: 't',
        atMs: 1_000,
        actor: { kind: 'admin' },
        requestId: 'req-1',
        action: 'budget.create',
        after: budgetOf(ledger),
      },
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
        {
          index: 0,
          budget: expect.objectContaining({
            ref: { scope: 'tenant:t', unit: 'TOKENS' },
            counters: expect.objectContaining({ remaining: 2 }),
          }),
        },
        { index: 1, budget: undefined },
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

describe('writes to every shard of a budget', () => {
  const scope = 'tenant:t';
  const ledger = funded(scope, 400);
  const shards = respread(emptyShards(4), ledger);

  it('require the shard count they were laid out on, so a budget grown since reads again', () => {
    // 350 covers no shard of 100: the exact path rewrites all four.
    const placed = placeChanges(
      [holdChange(scope, 'TOKENS', 350)],
      budgetsOf(budgetOf(ledger, { layout: { kind: 'sharded', shards, gated: false } })),
      0,
      ledgerUpdate,
    );

    expect(placed.items).toHaveLength(4);
    expect(placed.items[0]?.Update?.ConditionExpression).toContain('#shards = :shards');
    expect(placed.items[0]?.Update?.ExpressionAttributeValues?.[':shards']).toBe(4);
    expect(placed.items[1]?.Update?.ConditionExpression).not.toContain('#shards');
  });

  it('take an unsharded change as no proof of a refusal once the budget has shards', () => {
    const sharded = { type: 'ledger', ...ledger, shards: 4, remaining: 10 };
    const outcome = classifyCancellation(
      [{ code: 'ConditionalCheckFailed', item: sharded }, { code: 'None' }],
      { recordAt: 1, proofs: [0] },
    );

    expect(outcome).toEqual({ kind: 'stale', refused: [] });
  });
});
