import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Ledger } from '../../functions/domain/budget.js';
import {
  type BudgetCaps,
  type Caps,
  capsApply,
  capsFor,
  mergeCaps,
  NO_TOOL,
} from '../../functions/domain/caps.js';
import { budgetOf, budgetsOf } from '../helpers/budgets.js';

/** The reference's Caps precedence: a non-empty allowlist wins, else a non-empty denylist. */
function toolAllowed(c: Caps, tool: string): boolean {
  if (c.toolAllowlist && c.toolAllowlist.length > 0) return c.toolAllowlist.includes(tool);
  if (c.toolDenylist && c.toolDenylist.length > 0) return !c.toolDenylist.includes(tool);
  return true;
}

/** `a` constrains at least as much as `b`: every limit tighter, every tool it allows allowed by b. */
function atLeastAsStrict(a: Caps, b: Caps, tools: readonly string[]): boolean {
  const tighter = (
    x: number | undefined,
    y: number | undefined,
    cmp: (x: number, y: number) => boolean,
  ) => y === undefined || (x !== undefined && cmp(x, y));
  return (
    tighter(a.maxTokens, b.maxTokens, (x, y) => x <= y) &&
    tighter(a.maxStepsRemaining, b.maxStepsRemaining, (x, y) => x <= y) &&
    tighter(a.cooldownMs, b.cooldownMs, (x, y) => x >= y) &&
    tools.every((t) => !toolAllowed(a, t) || toolAllowed(b, t))
  );
}

const ledger = (scope: string, allocated: number, remaining: number): Ledger => ({
  scope,
  unit: 'USD_MICROCENTS',
  allocated,
  spent: allocated - remaining,
  reserved: 0,
  debt: 0,
  overdraftLimit: 0,
  remaining,
});

describe('mergeCaps', () => {
  it('takes the smaller limits, the larger cooldown, the shared allowed tools and every denied one', () => {
    const tenant: Caps = {
      maxTokens: 4_096,
      maxStepsRemaining: 3,
      toolAllowlist: ['search', 'read_file', 'write_file'],
      toolDenylist: ['shell'],
      cooldownMs: 100,
    };
    const workspace: Caps = {
      maxTokens: 1_024,
      toolAllowlist: ['write_file', 'search', 'fetch'],
      toolDenylist: ['deploy'],
      cooldownMs: 5_000,
    };

    const merged = mergeCaps(tenant, workspace);

    expect(merged).toEqual({
      maxTokens: 1_024,
      maxStepsRemaining: 3,
      toolAllowlist: ['search', 'write_file'],
      toolDenylist: ['deploy', 'shell'],
      cooldownMs: 5_000,
    });
  });

  it('drops a tool one scope denies from another scope’s allowlist, which clients read alone', () => {
    const merged = mergeCaps({ toolAllowlist: ['search', 'shell'] }, { toolDenylist: ['shell'] });

    expect(merged).toEqual({ toolAllowlist: ['search'], toolDenylist: ['shell'] });
    expect(toolAllowed(merged, 'shell')).toBe(false);
  });

  it('answers an allowlist of no tool when the scopes share none, never an empty (unrestricted) list', () => {
    const merged = mergeCaps({ toolAllowlist: ['a'] }, { toolAllowlist: ['b'] });

    expect(merged).toEqual({ toolAllowlist: [NO_TOOL] });
    expect(['a', 'b', 'c'].some((t) => toolAllowed(merged, t))).toBe(false);
  });

  it('keeps one scope’s constraints as they are when the other has none, lists sorted and unique', () => {
    expect(mergeCaps({}, { toolDenylist: ['b', 'a', 'b'], maxStepsRemaining: 0 })).toEqual({
      maxStepsRemaining: 0,
      toolDenylist: ['a', 'b'],
    });
    expect(mergeCaps({}, {})).toEqual({});
  });

  const tool = fc.constantFrom('a', 'b', 'c', 'd', 'e');
  const list = fc.uniqueArray(tool, { minLength: 1, maxLength: 5 });
  const limit = fc.integer({ min: 0, max: 1_000 });
  const caps: fc.Arbitrary<Caps> = fc.record(
    {
      maxTokens: limit,
      maxStepsRemaining: limit,
      toolAllowlist: list,
      toolDenylist: list,
      cooldownMs: limit,
    },
    { requiredKeys: [] },
  );
  const universe = ['a', 'b', 'c', 'd', 'e', 'f'];

  it('is commutative and associative, and at least as strict as each input (property)', () => {
    fc.assert(
      fc.property(caps, caps, caps, (a, b, c) => {
        const ab = mergeCaps(a, b);
        expect(ab).toEqual(mergeCaps(b, a));
        expect(mergeCaps(ab, c)).toEqual(mergeCaps(a, mergeCaps(b, c)));
        expect(atLeastAsStrict(ab, a, universe)).toBe(true);
        expect(atLeastAsStrict(ab, b, universe)).toBe(true);
        // Stable: merging again with an input changes nothing.
        expect(mergeCaps(ab, a)).toEqual(ab);
      }),
      { numRuns: 500 },
    );
  });
});

describe('capsApply', () => {
  const soft = (bps: number): BudgetCaps => ({ caps: { maxTokens: 1 }, belowRemainingBps: bps });

  it('applies always without a soft landing, else once remaining after the hold is below the share', () => {
    expect(capsApply({ caps: { maxTokens: 1 } }, 1_000, 1_000)).toBe(true);
    expect(capsApply(soft(2_000), 1_000, 201)).toBe(false);
    expect(capsApply(soft(2_000), 1_000, 200)).toBe(false);
    expect(capsApply(soft(2_000), 1_000, 199)).toBe(true);
    expect(capsApply(soft(2_000), 1_000, -5)).toBe(true);
  });

  it('compares exactly where a double would round (amounts near 2^53)', () => {
    const allocated = Number.MAX_SAFE_INTEGER;
    // bps 1: the threshold is allocated / 10 000 = 900719925474.0991; 900719925474 is below it.
    expect(capsApply(soft(1), allocated, 900_719_925_474)).toBe(true);
    expect(capsApply(soft(1), allocated, 900_719_925_475)).toBe(false);
    // bps 9 999: below allocated − 900719925474.0991; doubles compare these products as equal.
    expect(capsApply(soft(9_999), allocated, allocated - 900_719_925_475)).toBe(true);
    expect(capsApply(soft(9_999), allocated, allocated - 900_719_925_474)).toBe(false);
  });
});

describe('capsFor', () => {
  const scopes = ['tenant:t', 'tenant:t/workspace:w'];
  const tenant = ledger('tenant:t', 10_000, 10_000);
  const workspace = ledger('tenant:t/workspace:w', 1_000, 300);
  const hold = (amount: number) => ({ unit: 'USD_MICROCENTS' as const, amount });
  /** The two budgets, with the caps `configured` gives each scope. */
  const budgets = (configured: ReadonlyMap<string, BudgetCaps>) =>
    budgetsOf(
      ...[tenant, workspace, ledger('tenant:t/workspace:x', 1_000, 1_000)].map((l) =>
        budgetOf(l, { caps: configured.get(l.scope) }),
      ),
    );

  it('is undefined when no affected budget carries caps', () => {
    expect(capsFor(scopes, hold(100), budgets(new Map()))).toBeUndefined();
  });

  it('merges only the caps that apply after the hold', () => {
    const configured = new Map<string, BudgetCaps>([
      ['tenant:t', { caps: { maxTokens: 500 }, belowRemainingBps: 5_000 }],
      [
        'tenant:t/workspace:w',
        { caps: { maxTokens: 2_000, cooldownMs: 10 }, belowRemainingBps: 2_500 },
      ],
    ]);

    // Workspace: 300 − 100 = 200 of 1 000 is below 25 %; tenant: 9 900 of 10 000 is not below 50 %.
    expect(capsFor(scopes, hold(100), budgets(configured))).toEqual({
      maxTokens: 2_000,
      cooldownMs: 10,
    });
    // Workspace: 300 − 0 = 300 is not below 250.
    expect(capsFor(scopes, hold(0), budgets(configured))).toBeUndefined();
  });

  it('ignores caps of scopes the hold does not touch', () => {
    const configured = new Map<string, BudgetCaps>([
      ['tenant:t/workspace:x', { caps: { maxTokens: 1 } }],
    ]);

    expect(capsFor(scopes, hold(100), budgets(configured))).toBeUndefined();
  });
});
