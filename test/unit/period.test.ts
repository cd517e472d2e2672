import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PERIOD_KINDS, type PeriodSpec, periodAt } from '../../functions/domain/period.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('periodAt', () => {
  it('cuts days at 00:00 UTC', () => {
    const p = periodAt({ kind: 'DAILY' }, at('2026-11-23T23:59:59.999Z'));
    expect([iso(p.start), iso(p.end)]).toEqual([
      '2026-11-23T00:00:00.000Z',
      '2026-11-24T00:00:00.000Z',
    ]);
  });

  it('starts weeks on the anchor weekday (Monday by default)', () => {
    // 2026-11-23 is a Monday.
    const monday = periodAt({ kind: 'WEEKLY' }, at('2026-11-25T12:00:00Z'));
    expect(iso(monday.start)).toBe('2026-11-23T00:00:00.000Z');
    const sunday = periodAt({ kind: 'WEEKLY', anchorDay: 7 }, at('2026-11-25T12:00:00Z'));
    expect([iso(sunday.start), iso(sunday.end)]).toEqual([
      '2026-11-22T00:00:00.000Z',
      '2026-11-29T00:00:00.000Z',
    ]);
  });

  it('starts months on the anchor day, across year ends', () => {
    const p = periodAt({ kind: 'MONTHLY', anchorDay: 15 }, at('2027-01-03T00:00:00Z'));
    expect([iso(p.start), iso(p.end)]).toEqual([
      '2026-12-15T00:00:00.000Z',
      '2027-01-15T00:00:00.000Z',
    ]);
    const first = periodAt({ kind: 'MONTHLY' }, at('2026-02-28T23:00:00Z'));
    expect([iso(first.start), iso(first.end)]).toEqual([
      '2026-02-01T00:00:00.000Z',
      '2026-03-01T00:00:00.000Z',
    ]);
  });

  it('refuses an anchor day the kind cannot have', () => {
    for (const spec of [
      { kind: 'DAILY', anchorDay: 1 },
      { kind: 'WEEKLY', anchorDay: 8 },
      { kind: 'MONTHLY', anchorDay: 29 },
      { kind: 'MONTHLY', anchorDay: 1.5 },
    ] as PeriodSpec[]) {
      expect(() => periodAt(spec, 0)).toThrow(/period_anchor_day/);
    }
  });

  const spec = fc.oneof(
    fc.constant<PeriodSpec>({ kind: 'DAILY' }),
    fc.integer({ min: 1, max: 7 }).map((anchorDay): PeriodSpec => ({ kind: 'WEEKLY', anchorDay })),
    fc
      .integer({ min: 1, max: 28 })
      .map((anchorDay): PeriodSpec => ({ kind: 'MONTHLY', anchorDay })),
    fc.constantFrom(...PERIOD_KINDS).map((kind): PeriodSpec => ({ kind })),
  );
  const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2200, 0, 1) });

  it('contains the instant, is the same from any instant inside it, and touches the next', () => {
    fc.assert(
      fc.property(spec, instant, (s, t) => {
        const p = periodAt(s, t);
        expect(p.start <= t && t < p.end).toBe(true);
        expect(periodAt(s, p.start)).toEqual(p);
        expect(periodAt(s, p.end - 1)).toEqual(p);
        expect(periodAt(s, p.end).start).toBe(p.end);
        expect(p.end - p.start).toBeGreaterThanOrEqual(86_400_000);
        expect(p.end - p.start).toBeLessThanOrEqual(31 * 86_400_000);
      }),
      { numRuns: 2_000 },
    );
  });
});
