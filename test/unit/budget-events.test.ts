import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Ledger } from '../../functions/domain/budget.js';
import {
  type BudgetEvent,
  type BudgetEventType,
  type BudgetState,
  DEFAULT_THRESHOLDS,
  ledgerEvents,
  normalThresholds,
  reached,
  reachedEvents,
  refusalEvent,
  reservationEvents,
} from '../../functions/domain/budget-events.js';
import { budgetEventMessage } from '../../functions/domain/event-documents.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { BudgetEventMessage, EVENT_SCHEMAS } from '../../functions/outbound/schemas.js';
import { aReservation } from '../helpers/budgets.js';

const ledger = (
  allocated: number,
  used: { spent?: number; reserved?: number; debt?: number; overdraftLimit?: number } = {},
): Ledger => {
  const { spent = 0, reserved = 0, debt = 0, overdraftLimit = 0 } = used;
  return {
    scope: 'tenant:acme/workspace:w',
    unit: 'USD_MICROCENTS',
    allocated,
    spent,
    reserved,
    debt,
    overdraftLimit,
    remaining: allocated - spent - reserved - debt,
  };
};
const state = (
  { scope, unit, overdraftLimit, ...counters }: Ledger,
  extra: Partial<BudgetState> = {},
): BudgetState => ({ ref: { scope, unit }, counters, overdraftLimit, ...extra });

let record = 0;
const write = (before: BudgetState | undefined, after: BudgetState) =>
  ledgerEvents({ recordId: `rec-${++record}`, tenant: 'acme', at: 1_000, before, after });

const types = (events: readonly BudgetEvent[]) =>
  events.map((e) => (e.type === 'budget.threshold_crossed' ? `${e.type}:${e.threshold}` : e.type));

describe('reached', () => {
  it('compares (spent + reserved) with the threshold share of allocated exactly, past 2^53', () => {
    const big = Number.MAX_SAFE_INTEGER;

    expect(reached(ledger(1_000, { spent: 300, reserved: 200 }), 50)).toBe(true);
    expect(reached(ledger(1_000, { spent: 300, reserved: 199 }), 50)).toBe(false);
    expect(reached(ledger(big, { reserved: big - 1 }), 100)).toBe(false);
    expect(reached(ledger(big, { reserved: big }), 100)).toBe(true);
  });

  it('counts a budget with nothing allocated as past every threshold once anything is used', () => {
    expect(reached(ledger(0), 50)).toBe(false);
    expect(reached(ledger(0, { spent: 1 }), 50)).toBe(true);
  });
});

describe('ledgerEvents', () => {
  it('reports each threshold crossed upward by one write, and exhaustion', () => {
    const before = state(ledger(1_000, { reserved: 400 }));
    const after = state(ledger(1_000, { reserved: 1_000 }));

    const events = write(before, after);

    expect(types(events)).toEqual([
      'budget.threshold_crossed:50',
      'budget.threshold_crossed:80',
      'budget.threshold_crossed:100',
      'budget.exhausted',
    ]);
  });

  it('reports nothing downward, nor for a write that stays on one side', () => {
    const high = state(ledger(1_000, { reserved: 900 }));
    const low = state(ledger(1_000, { reserved: 100 }));

    expect(write(high, low)).toEqual([]);
    expect(write(low, state(ledger(1_000, { spent: 50, reserved: 100 })))).toEqual([]);
  });

  it("uses the budget's own thresholds, and none when it has none", () => {
    const before = state(ledger(1_000, { reserved: 100 }), { thresholds: [25, 90] });
    const after = state(ledger(1_000, { reserved: 950 }), { thresholds: [25, 90] });

    expect(types(write(before, after))).toEqual([
      'budget.threshold_crossed:25',
      'budget.threshold_crossed:90',
    ]);
    expect(write({ ...before, thresholds: [] }, { ...after, thresholds: [] })).toEqual([]);
  });

  it('reports debt incurred and over-limit entered, a limit lowered below the debt included', () => {
    const before = state(ledger(100, { spent: 100, overdraftLimit: 500 }));
    const indebted = state(ledger(100, { spent: 100, debt: 300, overdraftLimit: 500 }));
    const lowered = state(ledger(100, { spent: 100, debt: 300, overdraftLimit: 200 }));

    const charged = write(before, indebted);
    const limited = write(indebted, lowered);

    expect(charged).toMatchObject([{ type: 'budget.debt_incurred', incurred: 300 }]);
    expect(types(limited)).toEqual(['budget.over_limit_entered']);
  });

  it('gives the same crossing the same id whatever write crosses it, and a new allocation a new one', () => {
    const low = state(ledger(1_000, { reserved: 400 }));
    const high = state(ledger(1_000, { reserved: 600 }));
    const funded = state(ledger(2_000, { reserved: 1_100 }));

    const first = write(low, high);
    const again = write(low, high);
    const refunded = write(state(ledger(2_000, { reserved: 900 })), funded);

    expect(first.map((e) => e.id)).toEqual(again.map((e) => e.id));
    expect(refunded[0]?.id).not.toBe(first[0]?.id);
    expect(first[0]?.id).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  it('gives debt events the id of the write, so each increase is its own event', () => {
    const before = state(ledger(0, { overdraftLimit: 1_000 }));
    const after = state(ledger(0, { debt: 10, overdraftLimit: 1_000 }));

    const [a] = ledgerEvents({ recordId: 'r1', tenant: 'acme', at: 0, before, after });
    const [b] = ledgerEvents({ recordId: 'r1', tenant: 'acme', at: 0, before, after });
    const [c] = ledgerEvents({ recordId: 'r2', tenant: 'acme', at: 0, before, after });

    expect(a?.id).toBe(b?.id);
    expect(c?.id).not.toBe(a?.id);
  });

  it('reports a rollover as no crossing, and the new period crosses its thresholds anew', () => {
    const day1 = { start: 0, end: 86_400_000 };
    const day2 = { start: 86_400_000, end: 172_800_000 };
    const lastOfDay1 = state(ledger(1_000, { spent: 900 }), { period: day1 });
    const firstOfDay2 = state(ledger(1_000), { period: day2 });
    const busyDay2 = state(ledger(1_000, { reserved: 600 }), { period: day2 });

    const rolled = write(lastOfDay1, firstOfDay2);
    const crossed = write(firstOfDay2, busyDay2);
    const [day1Crossing] = write(state(ledger(1_000), { period: day1 }), {
      ...busyDay2,
      period: day1,
    });

    expect(rolled).toEqual([]);
    expect(types(crossed)).toEqual(['budget.threshold_crossed:50']);
    expect(crossed[0]?.id).not.toBe(day1Crossing?.id);
  });

  it('reports a budget created with nothing used as crossing nothing', () => {
    expect(write(undefined, state(ledger(1_000)))).toEqual([]);
  });
});

describe('ledgerEvents over any sequence of writes (property)', () => {
  const steps = fc.array(
    fc.record({
      spent: fc.integer({ min: 0, max: 1_200 }),
      reserved: fc.integer({ min: 0, max: 1_200 }),
    }),
    { minLength: 1, maxLength: 40 },
  );

  it('reports each threshold exactly once per upward crossing, and one id per threshold', () => {
    fc.assert(
      fc.property(steps, fc.integer({ min: 1, max: 5_000 }), (writes, allocated) => {
        const states = [ledger(allocated), ...writes.map((w) => ledger(allocated, w))];
        const events = states.slice(1).flatMap((after, i) => {
          const before = states[i];
          return before ? write(state(before), state(after)) : [];
        });

        for (const threshold of DEFAULT_THRESHOLDS) {
          const upward = states.slice(1).filter((after, i) => {
            const before = states[i];
            return before && !reached(before, threshold) && reached(after, threshold);
          }).length;
          const crossings = events.filter(
            (e) => e.type === 'budget.threshold_crossed' && e.threshold === threshold,
          );
          expect(crossings).toHaveLength(upward);
          expect(new Set(crossings.map((e) => e.id)).size).toBe(Math.min(upward, 1));
        }
      }),
    );
  });
});

describe('reachedEvents (sharded budgets)', () => {
  it('reports every threshold reached, with the ids a write crossing it would have had', () => {
    const budget = state(ledger(1_000, { reserved: 850 }));

    const reachedNow = reachedEvents('acme', 0, budget);
    const crossed = write(state(ledger(1_000)), budget);

    expect(types(reachedNow)).toEqual([
      'budget.threshold_crossed:50',
      'budget.threshold_crossed:80',
    ]);
    expect(reachedNow.map((e) => e.id)).toEqual(crossed.map((e) => e.id));
  });
});

const reservation = (status: Reservation['status']): Reservation =>
  aReservation(['tenant:acme', 'tenant:acme/workspace:w'], {
    status,
    subject: { tenant: 'acme', workspace: 'w' },
    action: { kind: 'llm.call', name: 'chat' },
    reserved: { unit: 'TOKENS', amount: 500 },
    ...(status === 'EXPIRED' && { finalizedAtMs: 70_000 }),
  });

describe('reservationEvents', () => {
  it('reports ACTIVE → EXPIRED once per reservation, and no other transition', () => {
    const [expired] = reservationEvents(reservation('ACTIVE'), reservation('EXPIRED'), 0);

    expect(expired).toMatchObject({ type: 'reservation.expired', at: 70_000 });
    expect(reservationEvents(reservation('ACTIVE'), reservation('COMMITTED'), 0)).toEqual([]);
    expect(reservationEvents(reservation('EXPIRED'), reservation('EXPIRED'), 0)).toEqual([]);
  });
});

describe('budgetEventMessage', () => {
  it('renders every kind of event as its published schema describes it', () => {
    const events: BudgetEvent[] = [
      ...write(
        state(ledger(1_000, { overdraftLimit: 100 }), { period: { start: 0, end: 86_400_000 } }),
        state(ledger(1_000, { spent: 1_000, debt: 150, overdraftLimit: 100 }), {
          period: { start: 0, end: 86_400_000 },
        }),
      ),
      ...reservationEvents(reservation('ACTIVE'), reservation('EXPIRED'), 0),
      refusalEvent({
        refusalId: 'ref_1',
        tenant: 'acme',
        atMs: 5_000,
        code: 'BUDGET_EXCEEDED',
        scope: 'tenant:acme',
        unit: 'TOKENS',
        requested: 900,
        remaining: 10,
        subject: { tenant: 'acme' },
        action: { kind: 'llm.call', name: 'chat', tags: ['x'] },
        keyId: 'key_1',
        requestId: 'req-1',
        suppressed: 2,
      }),
    ];

    const messages = events.map(budgetEventMessage);

    expect(messages.map((m) => m.event_type)).toEqual([
      'budget.threshold_crossed',
      'budget.threshold_crossed',
      'budget.threshold_crossed',
      'budget.exhausted',
      'budget.debt_incurred',
      'budget.over_limit_entered',
      'reservation.expired',
      'reservation.denied',
    ]);
    for (const m of messages) {
      expect(
        () => EVENT_SCHEMAS[m.event_type as BudgetEventType].parse(m),
        m.event_type,
      ).not.toThrow();
      expect(BudgetEventMessage.parse(JSON.parse(JSON.stringify(m)))).toEqual(m);
    }
    expect(messages[1]?.data).toMatchObject({ threshold: 0.8, threshold_percent: 80 });
    expect(messages[7]).toMatchObject({
      actor: { type: 'api_key', key_id: 'key_1' },
      request_id: 'req-1',
      data: { reason_code: 'BUDGET_EXCEEDED', suppressed_count: 2 },
    });
  });
});

describe('normalThresholds', () => {
  it('sorts and removes duplicates', () => {
    expect(normalThresholds([80, 50, 80, 100])).toEqual([50, 80, 100]);
  });
});
