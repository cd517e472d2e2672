import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { budgetAt } from '../../functions/domain/budget.js';
import {
  chargeIntoParent,
  childScopes,
  delegate,
  releaseIntoParent,
} from '../../functions/domain/delegation.js';
import { DomainError } from '../../functions/domain/errors.js';
import type { OveragePolicy } from '../../functions/domain/ledger.js';
import { aReservation, budgetsOf, tokensLedger } from '../helpers/budgets.js';

// Issue 29: the pure rules of delegations (docs/decisions.md § Delegations).

const scopes = ['tenant:t', 'tenant:t/workspace:w'];
const tokens = (amount: number) => ({ unit: 'TOKENS' as const, amount });
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return 'no error';
};

/** A parent holding `estimate` on the workspace path, with a child of `amount` carved out of it. */
function tree(estimate: number, amount: number, policy: OveragePolicy) {
  const parent = aReservation(scopes, {
    reservationId: 'rsv_parent',
    reserved: tokens(estimate),
    overagePolicy: policy,
    subject: { workspace: 'w' },
  });
  const budgets = budgetsOf(...scopes.map((s) => tokensLedger(s, { reserved: estimate })));
  const d = delegate(
    parent,
    { idempotencyKey: 'c', amount: tokens(amount) },
    'rsv_child',
    [],
    budgets,
    2_000,
  );
  return { ...d, budgets };
}

describe('delegate', () => {
  it('moves the amount from the parent’s hold to the child: no ledger change on its scopes', () => {
    const { parent, child, holds } = tree(100, 40, 'REJECT');

    expect(parent.held).toEqual(tokens(60));
    // The child by its id, which names its budgets (domain/reservation-id.ts).
    expect(child.reservationId).toBe('rsv_child~1~ww');
    expect(parent.activeChildren).toEqual([child.reservationId]);
    expect(child.reserved).toEqual(tokens(40));
    expect(child.delegation).toEqual({ parentId: 'rsv_parent', depth: 1, inherited: 2 });
    expect(child.expiresAtMs).toBe(61_000);
    expect(holds).toEqual([]);
  });

  it('refuses more than the parent holds, past its expiry, and a level not below its path', () => {
    const parent = aReservation(scopes, { reserved: tokens(100), subject: { workspace: 'w' } });
    const budgets = budgetsOf(...scopes.map((s) => tokensLedger(s, { reserved: 100 })));
    const request = (amount: number) => ({ idempotencyKey: 'c', amount: tokens(amount) });

    expect(codeOf(() => delegate(parent, request(101), 'c', [], budgets, 2_000))).toBe(
      'BUDGET_EXCEEDED',
    );
    expect(codeOf(() => delegate(parent, request(1), 'c', [], budgets, 61_000))).toBe(
      'RESERVATION_EXPIRED',
    );
    expect(
      childScopes(
        { ...parent, scopePath: scopes[1] as string },
        {
          ...request(1),
          subject: { agent: 'a' },
        },
      ),
    ).toEqual(['tenant:t/workspace:w/agent:a']);
    expect(
      codeOf(() =>
        childScopes(
          { ...parent, scopePath: scopes[1] as string },
          {
            ...request(1),
            subject: { workspace: 'x' },
          },
        ),
      ),
    ).toBe('INVALID_REQUEST');
  });
});

describe('a child settling into its parent', () => {
  // On the parent's scopes, reserved is the parent's hold plus the child's: any settlement of the
  // child keeps it so (what leaves reserved is what was spent from the two holds).
  it('keeps reserved equal to the holds left, for any commit, charge or release', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 2_000 }),
        fc.constantFrom<OveragePolicy>('REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT'),
        fc.constantFrom('commit', 'charge', 'release'),
        (estimate, share, actual, policy, how) => {
          const amount = Math.max(1, Math.floor((estimate * share) / 100));
          const { parent, child, budgets } = tree(estimate, amount, policy);
          let into: ReturnType<typeof releaseIntoParent>;
          try {
            into =
              how === 'release'
                ? releaseIntoParent(child, parent, budgets)
                : chargeIntoParent(child, parent, actual, how === 'commit', budgets);
          } catch (error) {
            // Only an overage beyond both holds under REJECT, or beyond remaining, is refused.
            expect(error).toBeInstanceOf(DomainError);
            expect(actual).toBeGreaterThan(policy === 'REJECT' ? amount : estimate);
            return;
          }
          for (const s of scopes) {
            const before = budgetAt(budgets, s, 'TOKENS')?.counters.reserved ?? 0;
            const delta = into.changes.find((c) => c.scope === s)?.delta.reserved ?? 0;
            expect(before + delta).toBe(into.parentHeld + into.childHeld);
          }
          const spent = into.changes.find((c) => c.scope === scopes[0])?.delta.spent ?? 0;
          expect(spent).toBe(how === 'release' ? 0 : actual);
        },
      ),
    );
  });
});
