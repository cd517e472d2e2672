import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UNITS } from '../../functions/domain/amounts.js';
import { derivedId } from '../../functions/domain/fingerprint.js';
import {
  hintedBudgets,
  MAX_RESERVATION_ID,
  reservationIdOf,
  reservationKeyId,
} from '../../functions/domain/reservation-id.js';
import { deriveScopes, type Subject } from '../../functions/domain/scopes.js';

const value = fc.stringMatching(/^[A-Za-z0-9_.-]{1,40}$/);
const subject = fc.record(
  {
    workspace: value,
    app: value,
    workflow: value,
    agent: value,
    toolset: value,
    dimensions: fc.dictionary(fc.stringMatching(/^[a-z0-9_.-]{1,12}$/), value, { maxKeys: 3 }),
  },
  { requiredKeys: [] },
);

describe('reservation ids', () => {
  it('name the record by the key alone and the budgets by the hint: every scope, root first, and the unit', () => {
    fc.assert(
      fc.property(value, subject, fc.constantFrom(...UNITS), (tenant, s, unit) => {
        const keyId = derivedId('rsv', tenant, 'k');
        const { scopes, scopePath } = deriveScopes(tenant, s as Subject);
        const id = reservationIdOf(keyId, tenant, scopePath, unit);

        expect(id.length).toBeLessThanOrEqual(MAX_RESERVATION_ID);
        expect(reservationKeyId(id)).toBe(keyId);
        // Too long for SPEC's 128 characters: the key alone, and the budgets are read after it.
        if (id === keyId) expect(hintedBudgets(id, tenant)).toBeUndefined();
        else expect(hintedBudgets(id, tenant)).toEqual({ scopes, unit });
      }),
    );
  });

  it('reads as the bench and the docs show it: `rsv_<32 hex>~<unit>~<level code><value>…`', () => {
    const keyId = derivedId('rsv', 'acme', 'k');
    const id = reservationIdOf(keyId, 'acme', 'tenant:acme/workspace:w/agent:a-1', 'TOKENS');

    expect(id).toBe(`${keyId}~1~ww~ga-1`);
    expect(reservationIdOf(keyId, 'acme', 'tenant:acme', 'USD_MICROCENTS')).toBe(`${keyId}~0`);
  });

  it('names no budgets for an id without a hint, or one that is not ours', () => {
    const keyId = derivedId('rsv', 'acme', 'k');

    expect(hintedBudgets(keyId, 'acme')).toBeUndefined();
    for (const bad of ['~9', '~0~x1', '~0~w', '~', '~00']) {
      expect(hintedBudgets(`${keyId}${bad}`, 'acme')).toBeUndefined();
    }
    // A path of another tenant is never hinted (it could not be its caller's budgets).
    expect(reservationIdOf(keyId, 'acme', 'tenant:other/workspace:w', 'TOKENS')).toBe(keyId);
  });
});
