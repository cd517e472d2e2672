import { describe, expect, it } from 'vitest';
import { isOverLimit, type Ledger } from '../../functions/domain/budget.js';
import { DomainError } from '../../functions/domain/errors.js';
import {
  applyDelta,
  chargeAll,
  chargeLedger,
  fundChange,
  holdChange,
  holdsInvariant,
  type OveragePolicy,
  releaseChange,
} from '../../functions/domain/ledger.js';
import {
  firstRefusal,
  type RefusalCode,
  type ScopeRefusal,
  scopeRefusal,
} from '../../functions/domain/refusals.js';

const MAX = Number.MAX_SAFE_INTEGER;

interface Counters {
  allocated: number;
  spent?: number;
  reserved?: number;
  debt?: number;
  overdraftLimit?: number;
}

/** A ledger whose remaining follows the invariant remaining = allocated − spent − reserved − debt. */
function ledger(c: Counters, scope = 'tenant:acme/workspace:w'): Ledger {
  const spent = c.spent ?? 0;
  const reserved = c.reserved ?? 0;
  const debt = c.debt ?? 0;
  return {
    scope,
    unit: 'USD_MICROCENTS',
    allocated: c.allocated,
    spent,
    reserved,
    debt,
    overdraftLimit: c.overdraftLimit ?? 0,
    remaining: c.allocated - spent - reserved - debt,
  };
}

/** The counters a test compares, remaining included, so a drifted invariant shows up as a diff. */
const countersOf = (l: Ledger) => ({
  allocated: l.allocated,
  spent: l.spent,
  reserved: l.reserved,
  debt: l.debt,
  remaining: l.remaining,
});

const counters = (
  c: Required<Omit<Counters, 'overdraftLimit'>> & { remaining: number },
): ReturnType<typeof countersOf> => c;

describe('holdChange and releaseChange', () => {
  it('holds the amount as reserved and takes it from remaining, guarded by admission', () => {
    const before = ledger({ allocated: 1_000, spent: 100 });

    const change = holdChange(before.scope, before.unit, 300);
    const held = applyDelta(before, change.delta);

    expect(countersOf(held)).toEqual(
      counters({ allocated: 1_000, spent: 100, reserved: 300, debt: 0, remaining: 600 }),
    );
    expect(change.guard).toEqual({ kind: 'admit', amount: 300 });
    expect(holdsInvariant(held)).toBe(true);
  });

  it('returns the whole hold on release', () => {
    const before = ledger({ allocated: 1_000, spent: 100, reserved: 300 });

    const released = applyDelta(before, releaseChange(before.scope, before.unit, 300).delta);

    expect(countersOf(released)).toEqual(
      counters({ allocated: 1_000, spent: 100, reserved: 0, debt: 0, remaining: 900 }),
    );
    expect(holdsInvariant(released)).toBe(true);
  });

  it('a hold followed by its release leaves the ledger as it was', () => {
    const before = ledger({ allocated: 500, spent: 20, reserved: 30, debt: 5, overdraftLimit: 9 });

    const held = applyDelta(before, holdChange(before.scope, before.unit, 40).delta);
    const back = applyDelta(held, releaseChange(before.scope, before.unit, 40).delta);

    expect(back).toEqual(before);
  });
});

describe('scopeRefusal (admission of a new reservation)', () => {
  it.each<[string, Ledger | undefined, number, RefusalCode | undefined]>([
    ['a missing ledger (zero allocation)', undefined, 1, 'BUDGET_EXCEEDED'],
    ['a missing ledger even for a zero estimate', undefined, 0, 'BUDGET_EXCEEDED'],
    ['remaining below the estimate', ledger({ allocated: 100, spent: 50 }), 51, 'BUDGET_EXCEEDED'],
    ['remaining equal to the estimate', ledger({ allocated: 100, spent: 50 }), 50, undefined],
    [
      'an allocation lowered below spent',
      ledger({ allocated: 10, spent: 50 }),
      0,
      'BUDGET_EXCEEDED',
    ],
    [
      'debt above 0 even with remaining to spare',
      ledger({ allocated: 1_000, debt: 1, overdraftLimit: 10 }),
      1,
      'DEBT_OUTSTANDING',
    ],
    [
      'debt equal to the limit (not over it)',
      ledger({ allocated: 0, debt: 10, overdraftLimit: 10 }),
      1,
      'DEBT_OUTSTANDING',
    ],
    [
      'debt over the limit (is_over_limit)',
      ledger({ allocated: 0, debt: 11, overdraftLimit: 10 }),
      1,
      'OVERDRAFT_LIMIT_EXCEEDED',
    ],
  ])('on %s refuses with %s', (_, l, amount, expected) => {
    const refusal = scopeRefusal('tenant:acme', 'USD_MICROCENTS', l, amount);

    expect(refusal?.code).toBe(expected);
  });

  it('reports the evidence of the refused scope', () => {
    const l = ledger({ allocated: 100, spent: 70, overdraftLimit: 5 });

    const refusal = scopeRefusal(l.scope, l.unit, l, 40);

    expect(refusal).toEqual({
      code: 'BUDGET_EXCEEDED',
      scope: l.scope,
      unit: l.unit,
      remaining: 30,
      requested: 40,
      debt: 0,
      overdraftLimit: 5,
    });
  });

  it('marks a ledger over its limit only when debt passes overdraft_limit', () => {
    expect(isOverLimit(ledger({ allocated: 0, debt: 10, overdraftLimit: 10 }))).toBe(false);
    expect(isOverLimit(ledger({ allocated: 0, debt: 11, overdraftLimit: 10 }))).toBe(true);
    expect(isOverLimit(ledger({ allocated: 0 }))).toBe(false);
  });
});

describe('firstRefusal (precedence across scopes)', () => {
  const refusal = (code: RefusalCode, scope: string): ScopeRefusal => ({
    code,
    scope,
    unit: 'USD_MICROCENTS',
    remaining: 0,
    requested: 1,
    debt: 0,
    overdraftLimit: 0,
  });

  it.each<[RefusalCode[], RefusalCode | undefined]>([
    [
      ['BUDGET_EXCEEDED', 'DEBT_OUTSTANDING', 'OVERDRAFT_LIMIT_EXCEEDED'],
      'OVERDRAFT_LIMIT_EXCEEDED',
    ],
    [['OVERDRAFT_LIMIT_EXCEEDED', 'BUDGET_EXCEEDED'], 'OVERDRAFT_LIMIT_EXCEEDED'],
    [['DEBT_OUTSTANDING', 'OVERDRAFT_LIMIT_EXCEEDED'], 'OVERDRAFT_LIMIT_EXCEEDED'],
    [['BUDGET_EXCEEDED', 'DEBT_OUTSTANDING'], 'DEBT_OUTSTANDING'],
    [['DEBT_OUTSTANDING', 'BUDGET_EXCEEDED'], 'DEBT_OUTSTANDING'],
    [['BUDGET_EXCEEDED'], 'BUDGET_EXCEEDED'],
    [[], undefined],
  ])('of %j reports %s', (codes, expected) => {
    const refusals = codes.flatMap((code, i) => [undefined, refusal(code, `s${i}`)]);

    expect(firstRefusal(refusals)?.code).toBe(expected);
  });

  it('names the scope that carries the winning code', () => {
    const chosen = firstRefusal([
      refusal('BUDGET_EXCEEDED', 'tenant:a'),
      refusal('DEBT_OUTSTANDING', 'tenant:a/workspace:w'),
    ]);

    expect(chosen?.scope).toBe('tenant:a/workspace:w');
  });
});

// Reference ledger for charges: 1 000 allocated, 300 held by the reservation being committed,
// overdraft_limit 500, so remaining is 700 before the commit.
const held300 = () => ledger({ allocated: 1_000, reserved: 300, overdraftLimit: 500 });

type Expected =
  | { counters: ReturnType<typeof countersOf> }
  | { refused: 'BUDGET_EXCEEDED' | 'OVERDRAFT_LIMIT_EXCEEDED' };

describe('chargeLedger on commit (held 300, remaining 700, overdraft_limit 500)', () => {
  const ALL: OveragePolicy[] = ['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT'];
  const cases: [string, OveragePolicy, number, Expected][] = [
    ...ALL.flatMap((policy): [string, OveragePolicy, number, Expected][] => [
      [
        'actual 0 returns the whole hold',
        policy,
        0,
        {
          counters: counters({
            allocated: 1_000,
            spent: 0,
            reserved: 0,
            debt: 0,
            remaining: 1_000,
          }),
        },
      ],
      [
        'actual below the hold returns the unused part',
        policy,
        200,
        {
          counters: counters({
            allocated: 1_000,
            spent: 200,
            reserved: 0,
            debt: 0,
            remaining: 800,
          }),
        },
      ],
      [
        'actual equal to the hold',
        policy,
        300,
        {
          counters: counters({
            allocated: 1_000,
            spent: 300,
            reserved: 0,
            debt: 0,
            remaining: 700,
          }),
        },
      ],
    ]),
    ['any overage', 'REJECT', 301, { refused: 'BUDGET_EXCEEDED' }],
    ['an overage remaining could cover', 'REJECT', 400, { refused: 'BUDGET_EXCEEDED' }],
    [
      'an overage remaining covers',
      'ALLOW_IF_AVAILABLE',
      900,
      {
        counters: counters({ allocated: 1_000, spent: 900, reserved: 0, debt: 0, remaining: 100 }),
      },
    ],
    [
      'an overage equal to remaining',
      'ALLOW_IF_AVAILABLE',
      1_000,
      {
        counters: counters({ allocated: 1_000, spent: 1_000, reserved: 0, debt: 0, remaining: 0 }),
      },
    ],
    ['an overage one above remaining', 'ALLOW_IF_AVAILABLE', 1_001, { refused: 'BUDGET_EXCEEDED' }],
    [
      'an overage remaining covers (no debt)',
      'ALLOW_WITH_OVERDRAFT',
      1_000,
      {
        counters: counters({ allocated: 1_000, spent: 1_000, reserved: 0, debt: 0, remaining: 0 }),
      },
    ],
    [
      'a partly covered overage: 700 to spent, 200 to debt',
      'ALLOW_WITH_OVERDRAFT',
      1_200,
      {
        counters: counters({
          allocated: 1_000,
          spent: 1_000,
          reserved: 0,
          debt: 200,
          remaining: -200,
        }),
      },
    ],
    [
      'a deficit equal to the overdraft limit',
      'ALLOW_WITH_OVERDRAFT',
      1_500,
      {
        counters: counters({
          allocated: 1_000,
          spent: 1_000,
          reserved: 0,
          debt: 500,
          remaining: -500,
        }),
      },
    ],
    [
      'a deficit one above the overdraft limit',
      'ALLOW_WITH_OVERDRAFT',
      1_501,
      { refused: 'OVERDRAFT_LIMIT_EXCEEDED' },
    ],
  ];

  it.each(cases)('%s under %s (actual %i)', (_, policy, actual, expected) => {
    const before = held300();

    const outcome = chargeLedger(before, 300, actual, policy);

    if ('refused' in expected) {
      expect(outcome).toMatchObject({
        kind: 'refused',
        refusal: { code: expected.refused, scope: before.scope, requested: actual - 300 },
      });
      return;
    }
    if (outcome.kind !== 'ok') throw new Error(`expected a charge, got ${JSON.stringify(outcome)}`);
    const charged = applyDelta(before, outcome.change.delta);
    expect(countersOf(charged)).toEqual(expected.counters);
    expect(holdsInvariant(charged)).toBe(true);
    // Everything the actual cost did not land in spent is debt: nothing is lost or created.
    expect(charged.spent - before.spent + (charged.debt - before.debt)).toBe(actual);
  });
});

describe('chargeLedger on commit against a ledger that is already short', () => {
  // 1 000 allocated, 900 spent, 300 held, debt 200 → remaining −400, overdraft_limit 500.
  const short = () =>
    ledger({ allocated: 1_000, spent: 900, reserved: 300, debt: 200, overdraftLimit: 500 });

  it.each<[OveragePolicy, number, Expected]>([
    [
      'ALLOW_WITH_OVERDRAFT',
      400,
      {
        counters: counters({
          allocated: 1_000,
          spent: 1_200,
          reserved: 0,
          debt: 300,
          remaining: -500,
        }),
      },
    ],
    [
      'ALLOW_WITH_OVERDRAFT',
      600,
      {
        counters: counters({
          allocated: 1_000,
          spent: 1_200,
          reserved: 0,
          debt: 500,
          remaining: -700,
        }),
      },
    ],
    ['ALLOW_WITH_OVERDRAFT', 601, { refused: 'OVERDRAFT_LIMIT_EXCEEDED' }],
    ['ALLOW_IF_AVAILABLE', 301, { refused: 'BUDGET_EXCEEDED' }],
    [
      'ALLOW_IF_AVAILABLE',
      250,
      {
        counters: counters({
          allocated: 1_000,
          spent: 1_150,
          reserved: 0,
          debt: 200,
          remaining: -350,
        }),
      },
    ],
  ])('under %s charges actual %i as %j', (policy, actual, expected) => {
    const before = short();

    const outcome = chargeLedger(before, 300, actual, policy);

    if ('refused' in expected) {
      expect(outcome.kind === 'refused' && outcome.refusal.code).toBe(expected.refused);
      return;
    }
    if (outcome.kind !== 'ok') throw new Error(`expected a charge, got ${JSON.stringify(outcome)}`);
    const charged = applyDelta(before, outcome.change.delta);
    expect(countersOf(charged)).toEqual(expected.counters);
    expect(holdsInvariant(charged)).toBe(true);
  });

  it('refuses an overdraft with a zero limit as soon as remaining does not cover', () => {
    const before = ledger({ allocated: 1_000, reserved: 300 });

    const covered = chargeLedger(before, 300, 1_000, 'ALLOW_WITH_OVERDRAFT');
    const oneOver = chargeLedger(before, 300, 1_001, 'ALLOW_WITH_OVERDRAFT');

    expect(covered.kind).toBe('ok');
    expect(oneOver.kind === 'refused' && oneOver.refusal.code).toBe('OVERDRAFT_LIMIT_EXCEEDED');
  });
});

describe('chargeLedger on an event (nothing held)', () => {
  it.each<[OveragePolicy, Counters, number, Expected]>([
    [
      'ALLOW_IF_AVAILABLE',
      { allocated: 1_000, spent: 300 },
      700,
      {
        counters: counters({ allocated: 1_000, spent: 1_000, reserved: 0, debt: 0, remaining: 0 }),
      },
    ],
    ['ALLOW_IF_AVAILABLE', { allocated: 1_000, spent: 300 }, 701, { refused: 'BUDGET_EXCEEDED' }],
    ['REJECT', { allocated: 1_000 }, 1, { refused: 'BUDGET_EXCEEDED' }],
    [
      'REJECT',
      { allocated: 1_000 },
      0,
      {
        counters: counters({ allocated: 1_000, spent: 0, reserved: 0, debt: 0, remaining: 1_000 }),
      },
    ],
    [
      'ALLOW_WITH_OVERDRAFT',
      { allocated: 1_000, spent: 300, reserved: 100, overdraftLimit: 500 },
      900,
      {
        counters: counters({
          allocated: 1_000,
          spent: 900,
          reserved: 100,
          debt: 300,
          remaining: -300,
        }),
      },
    ],
    [
      'ALLOW_WITH_OVERDRAFT',
      { allocated: 1_000, spent: 300, reserved: 100, overdraftLimit: 500 },
      1_101,
      { refused: 'OVERDRAFT_LIMIT_EXCEEDED' },
    ],
  ])('under %s on %j charges %i as %j', (policy, counters, actual, expected) => {
    const before = ledger(counters);

    const outcome = chargeLedger(before, 0, actual, policy);

    if ('refused' in expected) {
      expect(outcome.kind === 'refused' && outcome.refusal.code).toBe(expected.refused);
      return;
    }
    if (outcome.kind !== 'ok') throw new Error(`expected a charge, got ${JSON.stringify(outcome)}`);
    const charged = applyDelta(before, outcome.change.delta);
    expect(countersOf(charged)).toEqual(expected.counters);
    expect(holdsInvariant(charged)).toBe(true);
  });
});

describe('chargeAll', () => {
  it('charges every scope by its own numbers', () => {
    const root = ledger({ allocated: 10_000, reserved: 300, overdraftLimit: 0 }, 'tenant:acme');
    const leaf = ledger(
      { allocated: 300, reserved: 300, overdraftLimit: 500 },
      'tenant:acme/app:a',
    );

    const result = chargeAll([root, leaf], 300, 500, 'ALLOW_WITH_OVERDRAFT');

    if (!('changes' in result)) throw new Error(`refused: ${JSON.stringify(result)}`);
    const [rootAfter, leafAfter] = result.changes.map((c, i) =>
      applyDelta([root, leaf][i] as Ledger, c.delta),
    );
    expect(result.changes.map((c) => c.scope)).toEqual(['tenant:acme', 'tenant:acme/app:a']);
    expect(rootAfter && countersOf(rootAfter)).toEqual(
      counters({ allocated: 10_000, spent: 500, reserved: 0, debt: 0, remaining: 9_500 }),
    );
    expect(leafAfter && countersOf(leafAfter)).toEqual(
      counters({ allocated: 300, spent: 300, reserved: 0, debt: 200, remaining: -200 }),
    );
  });

  it('charges no scope when one refuses, and names the refusing scope', () => {
    const root = ledger({ allocated: 10_000, reserved: 300 }, 'tenant:acme');
    const leaf = ledger({ allocated: 350, reserved: 300 }, 'tenant:acme/app:a');

    const result = chargeAll([root, leaf], 300, 400, 'ALLOW_IF_AVAILABLE');

    expect(result).toEqual({
      refusal: expect.objectContaining({ code: 'BUDGET_EXCEEDED', scope: 'tenant:acme/app:a' }),
    });
  });

  it('reports OVERDRAFT_LIMIT_EXCEEDED when any scope would pass its limit', () => {
    const root = ledger({ allocated: 300, reserved: 300, overdraftLimit: 1_000 }, 'tenant:acme');
    const leaf = ledger({ allocated: 300, reserved: 300, overdraftLimit: 10 }, 'tenant:acme/app:a');

    const result = chargeAll([root, leaf], 300, 311, 'ALLOW_WITH_OVERDRAFT');

    expect(result).toEqual({
      refusal: expect.objectContaining({
        code: 'OVERDRAFT_LIMIT_EXCEEDED',
        scope: 'tenant:acme/app:a',
      }),
    });
  });
});

describe('fundChange', () => {
  it.each<[string, Counters, 'CREDIT' | 'RESET' | 'REPAY_DEBT', number, Counters]>([
    [
      'CREDIT adds to the allocation (10M + 10M = 20M)',
      { allocated: 10_000_000 },
      'CREDIT',
      10_000_000,
      { allocated: 20_000_000 },
    ],
    [
      'CREDIT keeps spent, reserved and debt',
      { allocated: 1_000, spent: 200, reserved: 100, debt: 50, overdraftLimit: 60 },
      'CREDIT',
      500,
      { allocated: 1_500, spent: 200, reserved: 100, debt: 50 },
    ],
    [
      'RESET sets allocated; remaining = amount − reserved − spent − debt',
      { allocated: 1_000, spent: 300, reserved: 200, debt: 100, overdraftLimit: 100 },
      'RESET',
      2_000,
      { allocated: 2_000, spent: 300, reserved: 200, debt: 100 },
    ],
    [
      'RESET below spent + reserved lets remaining go negative',
      { allocated: 1_000, spent: 300, reserved: 200, debt: 100, overdraftLimit: 100 },
      'RESET',
      500,
      { allocated: 500, spent: 300, reserved: 200, debt: 100 },
    ],
    [
      'REPAY_DEBT below the debt reduces the debt only',
      { allocated: 1_000, spent: 1_000, debt: 100, overdraftLimit: 100 },
      'REPAY_DEBT',
      40,
      { allocated: 1_000, spent: 1_000, debt: 60 },
    ],
    [
      'REPAY_DEBT equal to the debt clears it',
      { allocated: 1_000, spent: 1_000, debt: 100, overdraftLimit: 100 },
      'REPAY_DEBT',
      100,
      { allocated: 1_000, spent: 1_000, debt: 0 },
    ],
    [
      'REPAY_DEBT above the debt credits the excess to the allocation',
      { allocated: 1_000, spent: 1_000, debt: 100, overdraftLimit: 100 },
      'REPAY_DEBT',
      150,
      { allocated: 1_050, spent: 1_000, debt: 0 },
    ],
    [
      'REPAY_DEBT without debt credits the whole amount',
      { allocated: 1_000, spent: 10 },
      'REPAY_DEBT',
      70,
      { allocated: 1_070, spent: 10 },
    ],
  ])('%s', (_, counters, operation, amount, expected) => {
    const before = ledger(counters);

    const funded = applyDelta(before, fundChange(before, operation, amount, MAX).delta);

    expect(funded).toEqual(ledger({ ...expected, overdraftLimit: counters.overdraftLimit }));
    expect(holdsInvariant(funded)).toBe(true);
  });

  it.each(['CREDIT', 'RESET', 'REPAY_DEBT'] as const)(
    'refuses %s when allocated would pass the largest amount',
    (operation) => {
      const before = ledger({ allocated: MAX - 5 });
      const amount = operation === 'RESET' ? MAX + 1 : 6;

      const fund = () => fundChange(before, operation, amount, MAX);

      expect(fund).toThrow(DomainError);
      expect(fund).toThrow(/largest amount/);
    },
  );

  it('guards CREDIT so that concurrent credits never pass the largest amount', () => {
    const before = ledger({ allocated: 100 });

    const change = fundChange(before, 'CREDIT', 50, 1_000);

    expect(change.guard).toEqual({ kind: 'maxAllocated', atMost: 950 });
  });
});

describe('holdsInvariant', () => {
  it('detects a ledger whose remaining drifted', () => {
    const l = ledger({ allocated: 100, spent: 10, reserved: 20, debt: 5 });

    expect(holdsInvariant(l)).toBe(true);
    expect(holdsInvariant({ ...l, remaining: l.remaining + 1 })).toBe(false);
  });
});
