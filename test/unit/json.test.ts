import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../functions/domain/errors.js';
import {
  exactJson,
  illFormedStringAt,
  MAX_JSON_DEPTH,
  parseExactJson,
  tooDeepAt,
} from '../../functions/domain/json.js';
import { mergeChanges } from '../../functions/domain/ledger.js';
import { effectivePermissions, SPEC_PERMISSIONS } from '../../functions/domain/permissions.js';
import { requestTarget } from '../../infra/local/server.js';

describe('parseExactJson and exactJson', () => {
  it('round-trips numbers a double cannot hold, tiny numbers and odd keys, text for text', () => {
    const text =
      '{"id":18446744073709551616,"neg":-99999999999999999999,"tiny":1e-200,"":1,"__proto__":{"a":[true,null]}}';

    const parsed = parseExactJson(text);

    expect(exactJson(parsed?.value)).toBe(text);
    expect(Object.keys(parsed?.value as object)).toContain('__proto__');
    // Only nested deep: the writer still finds it.
    const nested = '{"a":{"b":[1,{"n":[true,12345678901234567890]}]}}';
    expect(exactJson(parseExactJson(nested)?.value)).toBe(nested);
  });

  it('serializes like JSON.stringify for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(exactJson(v)).toBe(JSON.stringify(v));
      }),
    );
  });

  it('answers undefined for text that is not JSON', () => {
    for (const text of ['', '{', '{"a":1,}', 'NaN', '{"a":1} x', "{'a':1}"])
      expect(parseExactJson(text), text).toBeUndefined();
  });

  it('refuses nesting past the limit by path, before parsing (no stack overflow)', () => {
    const nested = (depth: number) => `${'{"k":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

    expect(parseExactJson(nested(MAX_JSON_DEPTH))).toBeDefined();
    expect(() => parseExactJson(nested(MAX_JSON_DEPTH + 1))).toThrow(DomainError);
    expect(() => parseExactJson('['.repeat(200_000))).toThrow(DomainError);
  });
});

describe('tooDeepAt', () => {
  it('names the path of the container that goes too deep, across objects and arrays', () => {
    expect(tooDeepAt('{"a":{"b":[1,2,{"c":{}}]}}', 4)).toBe('a.b.2.c');
    expect(tooDeepAt('{"a":{"b":[1,2,{"c":{}}]}}', 5)).toBeUndefined();
    expect(tooDeepAt('{"x":"{{{{{{","y":"[[[[["}', 2)).toBeUndefined();
    expect(tooDeepAt('{"q\\"":{"r":{}}}', 2)).toBe('q\\".r');
  });
});

describe('illFormedStringAt', () => {
  it('finds a lone surrogate in a value or a key, and accepts well-formed text', () => {
    expect(illFormedStringAt({ a: ['ok', 'x\ud800'] })).toBe('a.1');
    expect(illFormedStringAt({ 'k\udc00': 1 })).toBe('k\udc00');
    expect(illFormedStringAt({ emoji: '😀', text: 'é' })).toBeUndefined();
    expect(illFormedStringAt('\udbff')).toBe('(root)');
  });
});

describe('effectivePermissions', () => {
  it("adds budgets:write to a key holding all of SPEC's eight, and to no narrower key", () => {
    expect(effectivePermissions([...SPEC_PERMISSIONS])).toContain('budgets:write');
    expect(effectivePermissions(SPEC_PERMISSIONS.slice(1))).not.toContain('budgets:write');
    expect(effectivePermissions([])).toEqual([]);
    expect(effectivePermissions(['budgets:write', 'budgets:write'])).toEqual(['budgets:write']);
  });
});

describe('mergeChanges', () => {
  it('sums the deltas of changes to one ledger, keeping ledgers apart', () => {
    const release = (scope: string, amount: number) => ({
      scope,
      unit: 'TOKENS' as const,
      delta: { reserved: -amount, remaining: amount },
      guard: { kind: 'exists' as const },
    });

    const merged = mergeChanges([release('a', 1), release('b', 2), release('a', 3)]);

    expect(merged.map((c) => [c.scope, c.delta.reserved, c.delta.remaining])).toEqual([
      ['a', -4, 4],
      ['b', -2, 2],
    ]);
  });
});

describe('requestTarget (the local server, as API Gateway)', () => {
  it('decodes the path before matching, %2F included', () => {
    expect(requestTarget('/v1/admin/budgets/tenant%3Aa%2Fworkspace%3Ab/TOKENS/fund')?.path).toBe(
      '/v1/admin/budgets/tenant:a/workspace:b/TOKENS/fund',
    );
  });

  it('refuses what is not a path or not valid percent-encoding', () => {
    for (const target of ['//[', '*', 'http://x/', '/a%E0%A4%A', '/%', undefined])
      expect(requestTarget(target), String(target)).toBeUndefined();
  });
});
