import { describe, expect, it } from 'vitest';
import type { Ledger } from '../../functions/domain/budget.js';
import { requireOwnTenant } from '../../functions/domain/caller.js';
import { DomainError } from '../../functions/domain/errors.js';
import { callerScopes, NO_DIMENSIONS } from '../../functions/domain/scopes.js';
import { commitChanges, eventChanges, eventPolicy } from '../../functions/domain/settlement.js';
import { aReservation, budgetsOf, tokensLedger } from '../helpers/budgets.js';

const ledger = tokensLedger;
const byScope = (...ledgers: Ledger[]) => budgetsOf(...ledgers);
const changesOf = (charge: ReturnType<typeof eventChanges>) =>
  'changes' in charge ? charge.changes : [];
const refusalOf = (charge: ReturnType<typeof eventChanges>) =>
  'refusal' in charge ? charge.refusal.code : 'no refusal';
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return 'no error';
};

const caller = { tenant: 'acme', keyId: 'key_1', permissions: [] };

describe('requireOwnTenant', () => {
  it("accepts the caller's own tenant and refuses another with 403 FORBIDDEN", () => {
    expect(() => requireOwnTenant(caller, 'acme', 'scope tenant:acme')).not.toThrow();
    expect(codeOf(() => requireOwnTenant(caller, 'other', 'scope tenant:other'))).toBe('FORBIDDEN');
  });
});

describe('callerScopes', () => {
  it("derives the scopes under the key's tenant, and refuses another subject.tenant", () => {
    expect(callerScopes(caller, { workspace: 'w' }, NO_DIMENSIONS).scopes).toEqual([
      'tenant:acme',
      'tenant:acme/workspace:w',
    ]);
    expect(callerScopes(caller, { tenant: 'acme' }, NO_DIMENSIONS).scopePath).toBe('tenant:acme');
    expect(codeOf(() => callerScopes(caller, { tenant: 'other' }, NO_DIMENSIONS))).toBe(
      'FORBIDDEN',
    );
  });

  it('makes a dimension a scope only where the tenant budgets its key; the others are tags', () => {
    const subject = { workspace: 'w', dimensions: { run: 'r1', session: 'agent:main main@x' } };

    expect(callerScopes(caller, subject, new Set(['run'])).scopes).toEqual([
      'tenant:acme',
      'tenant:acme/workspace:w',
      'tenant:acme/workspace:w/dimensions:run=r1',
    ]);
    expect(callerScopes(caller, subject, NO_DIMENSIONS).scopePath).toBe('tenant:acme/workspace:w');
    // A budgeted key keeps the scope charset; a tag may hold any 1 to 256 characters.
    const bad = { workspace: 'w', dimensions: { session: 'agent:main' } };
    expect(codeOf(() => callerScopes(caller, bad, new Set(['session'])))).toBe('INVALID_REQUEST');
    const long = { workspace: 'w', dimensions: { session: 'x'.repeat(257) } };
    expect(codeOf(() => callerScopes(caller, long, NO_DIMENSIONS))).toBe('INVALID_REQUEST');
  });
});

describe('commitChanges', () => {
  const r = aReservation(['tenant:acme', 'tenant:acme/workspace:w'], {
    subject: { workspace: 'w' },
    reserved: { unit: 'TOKENS', amount: 300 },
    createdAtMs: 0,
    expiresAtMs: 60_000,
  });

  const ledgers = byScope(
    ledger('tenant:acme', { reserved: 300 }),
    ledger('tenant:acme/workspace:w', { reserved: 300 }),
  );

  it('charges every scope the actual and releases the rest of the hold', () => {
    const changes = commitChanges(r, { unit: 'TOKENS', amount: 200 }, ledgers);

    expect(changes.map((c) => c.delta)).toEqual([
      { reserved: -300, spent: 200, remaining: 100 },
      { reserved: -300, spent: 200, remaining: 100 },
    ]);
  });

  it('refuses another unit with 400 UNIT_MISMATCH and an overage under REJECT with 409', () => {
    expect(codeOf(() => commitChanges(r, { unit: 'CREDITS', amount: 1 }, ledgers))).toBe(
      'UNIT_MISMATCH',
    );
    expect(codeOf(() => commitChanges(r, { unit: 'TOKENS', amount: 301 }, ledgers))).toBe(
      'BUDGET_EXCEEDED',
    );
  });
});

describe('eventPolicy and eventChanges', () => {
  it('reads REJECT as ALLOW_IF_AVAILABLE for an event (nothing is held)', () => {
    expect(eventPolicy('REJECT')).toBe('ALLOW_IF_AVAILABLE');
    expect(eventPolicy('ALLOW_IF_AVAILABLE')).toBe('ALLOW_IF_AVAILABLE');
    expect(eventPolicy('ALLOW_WITH_OVERDRAFT')).toBe('ALLOW_WITH_OVERDRAFT');
  });

  it('debits every scope when remaining covers the actual, even under REJECT', () => {
    const charge = eventChanges(
      ['tenant:acme', 'tenant:acme/workspace:w'],
      { unit: 'TOKENS', amount: 400 },
      'REJECT',
      byScope(ledger('tenant:acme'), ledger('tenant:acme/workspace:w')),
    );

    expect(changesOf(charge).map((c) => c.delta.spent)).toEqual([400, 400]);
  });

  it('treats a missing ledger as zero allocation: 409 BUDGET_EXCEEDED', () => {
    const charge = eventChanges(
      ['tenant:acme', 'tenant:acme/workspace:w'],
      { unit: 'TOKENS', amount: 1 },
      'ALLOW_WITH_OVERDRAFT',
      byScope(ledger('tenant:acme')),
    );

    expect(refusalOf(charge)).toBe('BUDGET_EXCEEDED');
  });

  it('ranks an overdraft past its limit before a missing ledger', () => {
    const charge = eventChanges(
      ['tenant:acme', 'tenant:acme/workspace:w'],
      { unit: 'TOKENS', amount: 2_000 },
      'ALLOW_WITH_OVERDRAFT',
      byScope(ledger('tenant:acme', { overdraftLimit: 500 })),
    );

    expect(refusalOf(charge)).toBe('OVERDRAFT_LIMIT_EXCEEDED');
  });

  it('runs into debt up to overdraft_limit under ALLOW_WITH_OVERDRAFT', () => {
    const [change] = changesOf(
      eventChanges(
        ['tenant:acme'],
        { unit: 'TOKENS', amount: 1_200 },
        'ALLOW_WITH_OVERDRAFT',
        byScope(ledger('tenant:acme', { overdraftLimit: 500 })),
      ),
    );

    expect(change?.delta).toMatchObject({ spent: 1_000, debt: 200, remaining: -1_200 });
  });
});
