import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emptyLedger } from '../../functions/domain/budget.js';
import { emptyShards, respread } from '../../functions/domain/escrow.js';
import { fingerprint } from '../../functions/domain/fingerprint.js';
import { holdChange, releaseChange } from '../../functions/domain/ledger.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { reservationIdOf } from '../../functions/domain/reservation-id.js';
import { newApiKeyTransaction } from '../../functions/store/api-keys.js';
import { ledgerUpdate, placeChanges } from '../../functions/store/budgets/placement.js';
import { newLedgerTransaction } from '../../functions/store/budgets/writes.js';
import { chargeTransaction, refundTransaction } from '../../functions/store/charges.js';
import { idempotencyItem } from '../../functions/store/entities/idempotency.js';
import { chargeUpdate } from '../../functions/store/entities/reservation.js';
import { eventTransaction } from '../../functions/store/events.js';
import { putIfAbsent } from '../../functions/store/expressions.js';
import { keys } from '../../functions/store/keys.js';
import { recordedOutcomeOf, settledOutcome } from '../../functions/store/records.js';
import {
  expiryBatchTransaction,
  extensionTransaction,
  reserveTransaction,
  settleTransaction,
} from '../../functions/store/reservation-writes.js';
import { newTenantPut } from '../../functions/store/tenants.js';
import { classifyCancellation } from '../../functions/store/write.js';
import { outcomeToStore, replayOf } from '../../functions/use-cases/outcomes.js';
import { type Reserved, reservedCodec } from '../../functions/use-cases/reservations.js';
import { type Committed, committedCodec } from '../../functions/use-cases/settlements.js';
import { applyUpdate, itemSize, writeUnits } from '../bench/capacity.js';
import { anEvent, aReservation, budgetOf, budgetsOf } from '../helpers/budgets.js';
import { readable, setValues } from '../helpers/expressions.js';

/** A budget in TOKENS with `allocated` and nothing spent or held. */
const funded = (scope: string, allocated: number) => ({
  ...emptyLedger(scope, 'TOKENS'),
  allocated,
  remaining: allocated,
});

const scopes = ['tenant:t', 'tenant:t/workspace:w', 'tenant:t/workspace:w/agent:a'];
const reservation = aReservation(scopes, { subject: { workspace: 'w', agent: 'a' } });
const outcome = { fingerprint: 'f', result: {} };

/** A reserve's outcome as the use case hands it to the store (use-cases/reservations.ts). */
const reserveOutcome = (fingerprint: string, result: Reserved, r: Reservation = reservation) =>
  outcomeToStore(fingerprint, result, reservedCodec, { reservation: r });

/** What a replay of the reserve answers from the record, with the fingerprint `fingerprint`. */
const replayedReserve = (item: Record<string, unknown>, fingerprint: string) =>
  replayOf(recordedOutcomeOf(item), fingerprint, reservedCodec);

describe('reserveTransaction', () => {
  it('is one conditional hold per scope plus the reservation record: scopes + 1 items', () => {
    const { items } = reserveTransaction({
      reservation,
      holds: scopes.map((s) => holdChange(s, 'TOKENS', 10)),
      outcome,
    });

    expect(items).toHaveLength(scopes.length + 1);
    for (const item of items.slice(0, 3)) {
      expect(readable(item.Update).condition).toBe(
        'attribute_exists(pk) AND remaining >= 10 AND debt = 0 AND (attribute_not_exists(status) OR status = "ACTIVE")',
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
  const reserved: Reserved = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath: scopes[2] ?? '',
    reserved: { unit: 'TOKENS', amount: 10 },
    reservationId: reservationIdOf('rsv_1', 't', scopes[2] ?? '', 'TOKENS'),
    expiresAtMs: 61_000,
    balances,
  };

  it('stores a reservation’s balances compactly and replays exactly the result it was given', () => {
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: reserveOutcome('f', reserved),
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.result).toBeUndefined();
    expect(JSON.stringify(item).length).toBeLessThan(1_000);
    expect(replayedReserve(item, 'f')).toEqual(reserved);
  });

  it('keeps the caps of an ALLOW_WITH_CAPS reservation beside its compact balances', () => {
    const capped = { ...reserved, caps: { maxTokens: 512, toolAllowlist: ['search'] } };
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: reserveOutcome('f', capped),
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.result).toBeUndefined();
    expect(item.caps).toBe('{"maxTokens":512,"toolAllowlist":["search"]}');
    expect(replayedReserve(item, 'f')).toEqual(capped);
  });

  it('stores the whole result when the item could not rebuild it', () => {
    const odd = { ...reserved, expiresAtMs: 99 };
    const { items } = reserveTransaction({
      reservation,
      holds: [],
      outcome: reserveOutcome('f', odd),
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.balance_rows).toBeUndefined();
    expect(replayedReserve(item, 'f')).toEqual(odd);
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
  const reserved: Reserved = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath: scopes[2] ?? '',
    reserved: { unit: 'TOKENS', amount: 10 },
    reservationId: reservationIdOf('rsv_1', 't', scopes[2] ?? '', 'TOKENS'),
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
      outcome: reserveOutcome(hex, reserved),
    });
    const item = items[0]?.Put?.Item ?? {};

    expect(item.fingerprint).toBeInstanceOf(Uint8Array);
    expect((item.fingerprint as Uint8Array).byteLength).toBe(32);
    expect(replayedReserve(item, hex)).toEqual(reserved);
  });

  it('replays a reservation item of 0.3: text balances with a scope index, a hex fingerprint', () => {
    const item = {
      ...keys.reservation('rsv_1'),
      type: 'reservation',
      tenant: 't',
      scopes,
      unit: 'TOKENS',
      estimate: 10,
      created_at_ms: 1_000,
      ttl_ms: 60_000,
      fingerprint: hex,
      balances_compact: JSON.stringify(scopes.map((_, i) => [i, 1_000, 0, 10, 0, 0, 990])),
    };

    expect(replayedReserve(item, hex)).toEqual(reserved);
  });

  it('replays a settlement of 0.3: its operation named, text balances, a hex fingerprint', () => {
    const item = {
      ...keys.reservation('rsv_1'),
      type: 'reservation',
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

    expect(replayOf(settledOutcome(item, 'commit', 'c'), hex, committedCodec)).toEqual(committed);
    expect(settledOutcome(item, 'release', 'c')).toBeUndefined();
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
      outcome: reserveOutcome(
        fingerprint({ a: 1 }),
        {
          kind: 'reserved',
          affectedScopes: paths,
          scopePath: paths[2] ?? '',
          reserved: r.reserved,
          reservationId: r.reservationId,
          expiresAtMs: r.expiresAtMs,
          balances: paths.map((s) => big(s, 123_456_789, 1_000)),
        },
        r,
      ),
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
        outcome: outcomeToStore(
          fingerprint({ b: 2 }),
          {
            status: 'COMMITTED',
            charged: { unit: 'USD_MICROCENTS', amount: 800 },
            released: { unit: 'USD_MICROCENTS', amount: 200 },
            balances: paths.map((s) => big(s, 123_457_589, 0)),
          },
          committedCodec,
          {
            reservation: {
              ...r,
              status: 'COMMITTED',
              committed: { unit: 'USD_MICROCENTS', amount: 800 },
            },
          },
        ),
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

describe('chargeTransaction and refundTransaction', () => {
  const charged: Reservation = {
    ...reservation,
    held: { unit: 'TOKENS', amount: 6 },
    charges: { count: 1, total: { unit: 'TOKENS', amount: 4 } },
  };
  const charge = {
    chargeId: 'chg_1',
    reservationId: reservation.reservationId,
    sequence: 1,
    amount: { unit: 'TOKENS' as const, amount: 4 },
    createdAtMs: 2_000,
  };

  it('is the reservation (on its charges as read), the idempotency record, the charge and one change per scope', () => {
    const { items, layout } = chargeTransaction({
      reservation,
      charged,
      charge,
      changes: scopes.map((s) => releaseChange(s, 'TOKENS', 4)),
      idempotency: { scope: { tenant: 't', operation: 'charge', key: 'c' }, outcome },
      now: 2_000,
    });

    expect(items).toHaveLength(scopes.length + 3);
    expect(readable(items[0]?.Update).condition).toBe(
      'status = "ACTIVE" AND tenant = "t" AND deadline_ms > 2000 AND attribute_not_exists(charge_count) AND attribute_not_exists(held)',
    );
    expect(setValues(items[0]?.Update)).toMatchObject({ held: 6, charged: 4, charge_count: 1 });
    expect(items[1]?.Put?.Item?.pk).toBe(keys.idempotency('t', 'charge', 'c').pk);
    expect(items[2]?.Put?.Item).toMatchObject({ ...keys.charge('rsv_1', 1), charge_id: 'chg_1' });
    expect(layout.recordAt).toBe(1);
    // The next charge is conditioned on this one.
    expect(readable(chargeUpdate(charged, charged, 3_000).Update).condition).toContain(
      'charge_count = 1',
    );
  });

  it('conditions a refund on what was refunded and charged when read, and audits it', () => {
    const { items } = refundTransaction({
      of: { reservation: { ...charged, refunded: { unit: 'TOKENS', amount: 1 } }, refunded: 3 },
      changes: [],
      budgets: budgetsOf(),
      audit: {
        tenant: 't',
        actor: { kind: 'admin' },
        requestId: 'req',
        atMs: 2_000,
        action: 'reservation.refund',
        reservationId: 'rsv_1',
      },
      idempotency: { scope: { tenant: 't', operation: 'refund', key: 'r' }, outcome },
      now: 2_000,
    });

    expect(readable(items[0]?.Update).condition).toBe(
      'status = "ACTIVE" AND charge_count = 1 AND held = 6 AND refunded = 1',
    );
    expect(items[2]?.Put?.Item).toMatchObject({ type: 'audit', action: 'reservation.refund' });
  });

  it('keeps a 3-scope reservation with charges under 1 KB: running totals only', () => {
    const tenant = 't-0123456789ab';
    const r: Reservation = {
      ...reservation,
      reservationId: `rsv_${'0'.repeat(32)}`,
      tenant,
      idempotencyKey: randomUUID(),
      reserved: { unit: 'USD_MICROCENTS', amount: 987_654_321 },
      scopePath: `tenant:${tenant}/workspace:w/agent:a`,
      holds: scopes.map((s) => ({ scope: s.replace('tenant:t', `tenant:${tenant}`), shard: 0 })),
    };
    const put = reserveTransaction({ reservation: r, holds: [], outcome }).items[0]?.Put?.Item;
    const update = chargeUpdate(
      r,
      {
        ...r,
        held: { unit: 'USD_MICROCENTS', amount: 123_456_789 },
        charges: { count: 9_999, total: { unit: 'USD_MICROCENTS', amount: 864_197_532 } },
      },
      r.createdAtMs,
    ).Update;
    const before = put ?? {};
    const after = applyUpdate(
      before,
      update?.UpdateExpression ?? '',
      update?.ExpressionAttributeNames,
      update?.ExpressionAttributeValues,
    );

    expect(itemSize(after)).toBeLessThan(1_000);
    expect(writeUnits(before, after, true).table).toBe(2);
  });
});

describe('listing spread', () => {
  it('lists each reservation under one spread of every listing key, and a settle keeps it there', () => {
    const spreads = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = { ...reservation, reservationId: `rsv_${i}` };
      const put = reserveTransaction({ reservation: r, holds: [], outcome }).items[0]?.Put?.Item;
      const suffix = /(~\d)?$/.exec(String(put?.status_pk))?.[0] ?? '';
      spreads.add(suffix);
      // Not on byTenant: the tenant's listing is its status partitions merged.
      expect(put?.tenant_pk).toBeUndefined();
      expect(put).toMatchObject({
        status_pk: `T#t#ACTIVE${suffix}`,
        workspace_pk: `T#t#workspace#w${suffix}`,
        agent_pk: `T#t#agent#a${suffix}`,
      });
      const settle = settleTransaction({ reservation: r, to: 'RELEASED', now: 2_000, changes: [] });
      expect(setValues(settle.items[0]?.Update).status_pk).toBe(`T#t#RELEASED${suffix}`);
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
    const { condition, update } = readable(items[0]?.Update);
    // On the charges read, too: a charge racing the commit lands first or makes it read again.
    expect(condition).toBe(
      'status = "ACTIVE" AND tenant = "t" AND deadline_ms > 2000 AND attribute_not_exists(charge_count) AND attribute_not_exists(held) AND attribute_not_exists(active_children)',
    );
    // A committed reservation keeps where its holds were: a refund lands there.
    expect(update).toContain('REMOVE due_pk, due_sk, deadline_ms');
    expect(update).not.toContain('hold_shards');
    // The outcome rides on the reservation: no idempotency record of its own. The operation is
    // the status written (COMMITTED), so it is not stored again.
    const set = setValues(items[0]?.Update);
    expect(set).toMatchObject({ status: 'COMMITTED', settle_key: 'c', settle_fingerprint: 'f' });
    expect(set.settle_op).toBeUndefined();
    // A commit without metrics or metadata records no empty detail.
    expect(Object.keys(set).filter((a) => a.endsWith('_detail_json'))).toEqual([]);
  });

  it('stores a commit’s balances compactly on the reservation and replays exactly its result', () => {
    const committed: Committed = {
      status: 'COMMITTED',
      charged: { unit: 'TOKENS', amount: 7 },
      released: { unit: 'TOKENS', amount: 3 },
      balances: scopes.map((scope) => ({
        scope,
        unit: 'TOKENS' as const,
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
        outcome: outcomeToStore('f', committed, committedCodec, {
          reservation: { ...reservation, status: 'COMMITTED', committed: committed.charged },
        }),
      },
    });
    const item: Record<string, unknown> = {
      ...keys.reservation(reservation.reservationId),
      type: 'reservation',
      v: 1,
      scopes,
      unit: 'TOKENS',
      estimate: 10,
      status: 'COMMITTED',
      committed: 7,
      ...Object.fromEntries(
        Object.entries(setValues(items[0]?.Update)).filter(([a]) => a.startsWith('settle_')),
      ),
    };

    expect(item.settle_result).toBeUndefined();
    expect(item.settle_rows).toEqual([100, 7, 0, 0, 0, 100, 7, 0, 0, 0, 100, 7, 0, 0, 0]);
    expect(replayOf(settledOutcome(item, 'commit', 'c'), 'f', committedCodec)).toEqual(committed);
    expect(settledOutcome(item, 'commit', 'other')).toBeUndefined();
    expect(settledOutcome(item, 'release', 'c')).toBeUndefined();
  });

  it('conditions an expiry on the deadline having passed, with no idempotency record', () => {
    const items = expiryBatchTransaction([reservation], [], 70_000);

    expect(items).toHaveLength(1);
    expect(readable(items[0]?.Update).condition).toContain('deadline_ms <= 70000');
  });
});

describe('ledgerUpdate', () => {
  it('adds signed deltas and re-checks a snapshot exactly; debt added marks the debt watch', () => {
    const item = ledgerUpdate({
      scope: 'tenant:t',
      unit: 'TOKENS',
      delta: { reserved: -10, spent: 12, debt: 3, remaining: -5 },
      guard: { kind: 'snapshot', values: { remaining: 2, debt: 0, overdraftLimit: 100 } },
    });

    const { update, condition } = readable(item.Update);
    expect(update).toBe(
      'SET due_pk = "DEBT#1", due_sk = "tenant:t#TOKENS", spent = spent + 12, reserved = reserved + -10, debt = debt + 3, remaining = remaining + -5',
    );
    // Decided on exact values by the operator (a funding, a refund's credit): never on a closed budget.
    expect(condition).toBe(
      'attribute_exists(pk) AND remaining = 2 AND debt = 0 AND overdraft_limit = 100 AND attribute_not_exists(shards) AND (attribute_not_exists(status) OR status <> "CLOSED")',
    );
  });

  it('lands a refund only on a budget its tenant’s close has not closed (the closed-tenant rule)', () => {
    const refund = ledgerUpdate({
      scope: 'tenant:t',
      unit: 'TOKENS',
      delta: { spent: -5, remaining: 5 },
      guard: { kind: 'returns', spent: 5, debt: 0 },
    });
    const inClosedPeriod = ledgerUpdate({
      scope: 'tenant:t',
      unit: 'TOKENS',
      delta: { spent: -5, remaining: 5 },
      guard: { kind: 'returns', spent: 5, debt: 0 },
      period: { start: 1_000, closed: true },
    });

    expect(readable(refund.Update).condition).toBe(
      'attribute_exists(pk) AND spent >= 5 AND debt >= 0 AND (attribute_not_exists(status) OR status <> "CLOSED")',
    );
    // A closed period's ledger has no status of its own.
    expect(readable(inClosedPeriod.Update).condition).toBe(
      'attribute_exists(pk) AND spent >= 5 AND debt >= 0',
    );
  });
});

describe('eventTransaction', () => {
  it('is one debit per scope plus the event record: scopes + 1 items', () => {
    const { items } = eventTransaction({
      event: anEvent(scopes),
      charges: scopes.map((s) => ({
        scope: s,
        unit: 'TOKENS' as const,
        delta: { spent: 5, remaining: -5 },
        guard: { kind: 'covers' as const, amount: 5 },
      })),
      outcome,
    });

    expect(items).toHaveLength(scopes.length + 1);
    expect(readable(items[0]?.Update).condition).toBe('attribute_exists(pk) AND remaining >= 5');
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
    expect(readable(items[0]?.Update).condition).toBe(
      'status = "ACTIVE" AND tenant = "t" AND expires_at_ms = 61000 AND expires_at_ms > 2000',
    );
    expect(setValues(items[0]?.Update)).toMatchObject({
      expires_at_ms: 71_000,
      deadline_ms: 76_000,
    });
    expect(items[1]?.Put?.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });
});

describe('idempotencyItem', () => {
  it('stores the fingerprint and the result, and expires seven days later', () => {
    const put = putIfAbsent(
      idempotencyItem({ tenant: 't', operation: 'fund', key: 'k' }, outcome, 1_000),
    );

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

    // …and the overview's count of it, last.
    expect(items).toHaveLength(6);
    expect(items[5]?.Update?.Key).toMatchObject({ sk: '-' });
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
  it('stores a key only under an existing tenant that is not closed, and a tenant only once', () => {
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

    // Rule 2 of the reference's close: no new key for a CLOSED tenant.
    expect(items[0]?.ConditionCheck?.ConditionExpression).toBe(
      'attribute_exists(#pk) AND #status <> :status',
    );
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
      stored: { fingerprint: 'f', result: { form: 'whole', value: { a: 1 } } },
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

describe('recordedOutcomeOf', () => {
  it('decodes a result, and keeps the fingerprint of a 0.1.0 record that cannot be rendered', () => {
    expect(recordedOutcomeOf({ fingerprint: 'f', result: '{"a":1}' })).toEqual({
      fingerprint: 'f',
      result: { form: 'whole', value: { a: 1 } },
    });
    expect(recordedOutcomeOf({ fingerprint: 'f', response_body: '{}' })).toEqual({
      fingerprint: 'f',
      result: { form: 'unrenderable' },
    });
    expect(recordedOutcomeOf({ type: 'reservation' })).toBeUndefined();
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
    );

    expect(placed.items).toHaveLength(4);
    expect(readable(placed.items[0]?.Update).condition).toContain('shards = 4');
    expect(readable(placed.items[1]?.Update).condition).not.toContain('shards');
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
