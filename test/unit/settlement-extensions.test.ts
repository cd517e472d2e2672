import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUCKETS,
  bucketOf,
  contributionOf,
  KIND_IDLE_EVICTION_MS,
  NO_TOTALS,
  planKinds,
  suggestion,
  TRACKED_KINDS,
} from '../../functions/domain/accuracy.js';
import { DomainError } from '../../functions/domain/errors.js';
import { applyDelta } from '../../functions/domain/ledger.js';
import {
  eventRefundable,
  refundChange,
  refundChanges,
  reservationRefundable,
} from '../../functions/domain/refunds.js';
import {
  admissionRefusal,
  MAX_RESERVATION_AMOUNT_EXCEEDED,
  reasonCodeOf,
  refusalError,
} from '../../functions/domain/refusals.js';
import {
  chargeChanges,
  commitChanges,
  debtIncurredBy,
  withDebtOf,
} from '../../functions/domain/settlement.js';
import { anEvent, aReservation, budgetOf, budgetsOf, tokensLedger } from '../helpers/budgets.js';

// Issue 28: the pure rules of charges, refunds, the cap of one reservation and estimate accuracy.

const ledger = tokensLedger;
const tokens = (amount: number) => ({ unit: 'TOKENS' as const, amount });
const scopes = ['tenant:t', 'tenant:t/workspace:w'];
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return 'no error';
};

describe('chargeChanges and commitChanges with charges', () => {
  const budgets = budgetsOf(...scopes.map((s) => ledger(s, { reserved: 10 })));

  it('takes a charge from what is left of the hold first, the rest by the overage policy', () => {
    const r = aReservation(scopes, { overagePolicy: 'ALLOW_IF_AVAILABLE' });

    const within = chargeChanges(r, tokens(4), budgets);
    const beyond = chargeChanges({ ...r, held: tokens(6) }, tokens(9), budgets);

    expect(within.held).toEqual(tokens(6));
    expect(within.changes[0]?.delta).toEqual({ reserved: -4, spent: 4, remaining: 0 });
    expect(beyond.held).toEqual(tokens(0));
    expect(beyond.changes[0]?.delta).toEqual({ reserved: -6, spent: 9, remaining: -3 });
    expect(codeOf(() => chargeChanges(aReservation(scopes), tokens(11), budgets))).toBe(
      'BUDGET_EXCEEDED',
    );
  });

  it('makes charges and their commit move every ledger as one commit of the whole actual', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 4 }),
        fc.integer({ min: 0, max: 30 }),
        (parts, more) => {
          let r = aReservation(['tenant:t'], { overagePolicy: 'ALLOW_IF_AVAILABLE' });
          let l = ledger('tenant:t', { reserved: 10 });
          for (const part of parts) {
            const { changes, held } = chargeChanges(r, tokens(part), budgetsOf(l));
            l = applyDelta(l, changes[0]?.delta ?? {});
            const total = (r.charges?.total.amount ?? 0) + part;
            r = { ...r, held, charges: { count: parts.length, total: tokens(total) } };
          }
          const actual = (r.charges?.total.amount ?? 0) + more;
          const [commit] = commitChanges(r, tokens(actual), budgetsOf(l));
          const once = commitChanges(
            aReservation(['tenant:t'], { overagePolicy: 'ALLOW_IF_AVAILABLE' }),
            tokens(actual),
            budgetsOf(ledger('tenant:t', { reserved: 10 })),
          )[0];

          expect(applyDelta(l, commit?.delta ?? {})).toEqual(
            applyDelta(ledger('tenant:t', { reserved: 10 }), once?.delta ?? {}),
          );
        },
      ),
    );
  });

  it('refuses a commit below what was already charged with 400', () => {
    const r = aReservation(scopes, { held: tokens(4), charges: { count: 2, total: tokens(6) } });

    expect(codeOf(() => commitChanges(r, tokens(5), budgets))).toBe('INVALID_REQUEST');
    expect(commitChanges(r, tokens(6), budgets)[0]?.delta).toEqual({
      reserved: -4,
      spent: 0,
      remaining: 4,
    });
  });

  it('records the debt a charge ran up per hold and per event scope', () => {
    const changes = [
      {
        scope: 'tenant:t',
        unit: 'TOKENS' as const,
        delta: { debt: 3 },
        guard: { kind: 'exists' as const },
      },
    ];

    expect(withDebtOf(aReservation(scopes).holds, changes)[0]?.debtIncurred).toBe(3);
    expect(debtIncurredBy(changes)).toEqual({ 'tenant:t': 3 });
    expect(debtIncurredBy([])).toBeUndefined();
  });
});

describe('refundChange: debt first, then spent, then the allocation', () => {
  it('returns the debt the charge ran up first, across refunds', () => {
    const l = ledger('tenant:t', { spent: 100, debt: 30 });

    // 30 of debt incurred: the first 30 refunded come off debt, the rest off spent.
    expect(refundChange(l, 30, 0, 20).delta).toEqual({ spent: -0, debt: -20, remaining: 20 });
    expect(refundChange(l, 30, 20, 20).delta).toEqual({ spent: -10, debt: -10, remaining: 20 });
    expect(refundChange(l, 30, 0, 20).guard).toEqual({ kind: 'returns', spent: 0, debt: 20 });
  });

  it('credits the allocation with debt repaid since, and spent reset since', () => {
    const repaid = refundChange(ledger('tenant:t', { spent: 50, debt: 5 }), 30, 0, 40);
    const reset = refundChange(ledger('tenant:t', { spent: 10 }), 0, 0, 25);

    expect(repaid.delta).toEqual({ spent: -10, debt: -5, allocated: 25, remaining: 40 });
    expect(reset.delta).toEqual({ spent: -10, debt: -0, allocated: 15, remaining: 25 });
    // Decided on the exact values read.
    expect(reset.guard.kind).toBe('snapshot');
  });

  it('raises remaining by exactly the amount and never takes a counter below 0', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 500 }),
        fc.nat({ max: 500 }),
        fc.nat({ max: 500 }),
        fc.nat({ max: 300 }),
        fc.integer({ min: 1, max: 300 }),
        (spent, debt, incurred, before, amount) => {
          const l = ledger('tenant:t', { spent, debt });
          const after = applyDelta(l, refundChange(l, incurred, before, amount).delta);

          expect(after.remaining - l.remaining).toBe(amount);
          expect(after.spent).toBeGreaterThanOrEqual(0);
          expect(after.debt).toBeGreaterThanOrEqual(0);
          expect(after.remaining).toBe(after.allocated - after.spent - after.reserved - after.debt);
        },
      ),
    );
  });

  it('gives back at most what was charged and not yet refunded (400, naming what is left)', () => {
    const r = aReservation(scopes, {
      status: 'COMMITTED',
      committed: tokens(8),
      refunded: tokens(5),
    });
    const budgets = budgetsOf(...scopes.map((s) => ledger(s, { spent: 8 })));

    expect(refundChanges(reservationRefundable(r), 3, budgets)).toHaveLength(2);
    try {
      refundChanges(reservationRefundable(r), 4, budgets);
      expect.unreachable();
    } catch (error) {
      expect((error as DomainError).details).toMatchObject({ refundable: tokens(3) });
    }
  });

  it('refunds an event in the period of its creation', () => {
    const spec = { kind: 'DAILY' as const };
    const day = 20_000 * 86_400_000;
    const budget = budgetOf(ledger('tenant:t', { spent: 5 }), {
      period: { start: day, end: day + 86_400_000, spec, amount: 1_000 },
    });
    const e = anEvent(['tenant:t'], { createdAtMs: day + 5 });
    const yesterday = anEvent(['tenant:t'], { createdAtMs: day - 5 });

    expect(eventRefundable(e, budgetsOf(budget)).places[0]?.periodStart).toBe(day);
    const [late] = refundChanges(
      eventRefundable(yesterday, budgetsOf(budget)),
      1,
      budgetsOf(budget),
    );
    expect(late?.period).toEqual({ start: day - 86_400_000, closed: true });
  });
});

describe('max_reservation_amount', () => {
  it('refuses an estimate above a budget’s cap as BUDGET_EXCEEDED with its reason, before a short remaining', () => {
    const capped = budgetOf(ledger('tenant:t/workspace:w', { allocated: 50 }), {
      maxReservationAmount: 100,
    });
    const budgets = budgetsOf(ledger('tenant:t', { allocated: 50 }), capped);

    const refusal = admissionRefusal(scopes, tokens(101), budgets);

    expect(refusal).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      scope: scopes[1],
      maxReservationAmount: 100,
    });
    expect(refusal && reasonCodeOf(refusal)).toBe(MAX_RESERVATION_AMOUNT_EXCEEDED);
    expect(refusal && refusalError(refusal).details).toMatchObject({
      reason: MAX_RESERVATION_AMOUNT_EXCEEDED,
      max_reservation_amount: 100,
    });
    expect(admissionRefusal(scopes, tokens(50), budgets)).toBeUndefined();
  });

  it('yields to a stronger refusal of the same budget (debt, frozen)', () => {
    const owing = budgetOf(ledger('tenant:t', { debt: 1, overdraftLimit: 5 }), {
      maxReservationAmount: 1,
    });

    expect(admissionRefusal(['tenant:t'], tokens(10), budgetsOf(owing))?.code).toBe(
      'DEBT_OUTSTANDING',
    );
  });
});

describe('estimate accuracy', () => {
  it('buckets actual ÷ estimate exactly, even past 2^53', () => {
    expect(bucketOf(10, 100)).toBe(0);
    expect(bucketOf(11, 100)).toBe(1);
    expect(bucketOf(100, 100)).toBe(5);
    expect(bucketOf(501, 100)).toBe(BUCKETS - 1);
    expect(bucketOf(0, 0)).toBe(0);
    expect(bucketOf(1, 0)).toBe(BUCKETS - 1);
    const big = Number.MAX_SAFE_INTEGER;
    expect(bucketOf(big, big - 1)).toBe(6);
  });

  it('counts a commit, a charged release and an unspent expiry as they settled', () => {
    const base = aReservation(scopes, { reserved: tokens(100), createdAtMs: 0 });

    const committed = contributionOf({
      ...base,
      status: 'COMMITTED',
      committed: tokens(50),
      finalizedAtMs: 2_000,
    });
    const charged = contributionOf({
      ...base,
      status: 'RELEASED',
      charges: { count: 1, total: tokens(30) },
      finalizedAtMs: 1_000,
    });
    const expired = contributionOf({ ...base, status: 'EXPIRED', finalizedAtMs: 1_000 });

    expect(committed?.totals).toMatchObject({ settled: 1, actual: 50n, idleUnitMs: 100_000n });
    expect(committed?.budgets).toEqual(scopes.map((s) => `${s}#TOKENS`));
    expect(committed?.ratio).toBe(0.5);
    expect(charged?.totals).toMatchObject({
      settled: 1,
      actual: 30n,
      released: 0,
      idleUnitMs: 70_000n,
    });
    expect(expired?.totals).toMatchObject({ settled: 0, expired: 1, idleUnitMs: 100_000n });
    expect(expired?.ratio).toBeUndefined();
    expect(contributionOf(base)).toBeUndefined();
  });

  it('suggests the estimate that would have covered 95 % of the actuals', () => {
    const histogram = [...NO_TOTALS.histogram];
    histogram[5] = 19; // ≤ 100 %
    histogram[9] = 1; // ≤ 200 %
    const t = { ...NO_TOTALS, settled: 20, estimate: 2_000n, histogram };

    expect(suggestion(t)).toEqual({ ratioPercent: 100, estimate: 100n });
    histogram[5] = 18;
    histogram[9] = 2;
    expect(suggestion({ ...t, histogram })).toEqual({ ratioPercent: 200, estimate: 200n });
    histogram[BUCKETS - 1] = 20;
    expect(suggestion({ ...t, settled: 40, histogram })).toBeUndefined();
    expect(suggestion(NO_TOTALS)).toBeUndefined();
  });

  it(`tracks ${TRACKED_KINDS} kinds, the busiest new ones first, and frees the place of one idle for a week`, () => {
    const now = 10 * KIND_IDLE_EVICTION_MS;
    const full = {
      kinds: new Map(
        Array.from({ length: TRACKED_KINDS }, (_, i) => [`k${i}`, i === 3 ? 0 : now] as const),
      ),
      version: 4,
    };

    const plan = planKinds(
      full,
      new Map([
        ['a', 1],
        ['b', 5],
        ['k1', 2],
      ]),
      now,
    );
    const room = planKinds({ kinds: new Map(), version: 0 }, new Map([['x', 1]]), now);

    expect([...plan.own].sort()).toEqual(['b', 'k1']);
    expect(plan).toMatchObject({ admitted: ['b'], evicted: ['k3'] });
    expect(room).toMatchObject({ admitted: ['x'], evicted: [] });
  });
});
