import {
  type AccuracyTotals,
  BUCKETS,
  NO_TOTALS,
  type TrackedKinds,
} from '../../domain/accuracy.js';
import type { Item } from '../expressions.js';

// The estimate accuracy family (domain/accuracy.ts): per budget, a `KINDS` item naming the kinds
// tracked on their own (kind → when it last settled, and a version), one item of totals per
// tracked kind, and one for all other kinds. Written only by the stream consumer, by ADD, so
// concurrent batches add up; sums are DynamoDB numbers (38 digits), read back as bigint.

/** Written on every item of the family from this version on. */
export const ACCURACY_VERSION = 1;

/** The attribute of each total, and of histogram bucket i (`h0` …). */
export const bucketAttribute = (i: number): string => `h${i}`;

/** The totals as the numbers an update ADDs (all of them: an absent attribute starts at 0). */
export function totalsToAdd(t: AccuracyTotals): Record<string, number | bigint> {
  return {
    settled: t.settled,
    estimate: t.estimate,
    actual: t.actual,
    idle_unit_ms: t.idleUnitMs,
    released: t.released,
    expired: t.expired,
    ...Object.fromEntries(t.histogram.map((n, i) => [bucketAttribute(i), n])),
  };
}

/** Numbers read with wrapNumbers: exact text, whatever their size. */
const big = (v: unknown): bigint => {
  const text = typeof v === 'object' && v !== null && 'value' in v ? String(v.value) : String(v);
  return /^-?\d+$/.test(text) ? BigInt(text) : 0n;
};
const num = (v: unknown): number => Number(big(v));

export const totalsOf = (item: Item): AccuracyTotals => ({
  settled: num(item.settled),
  estimate: big(item.estimate),
  actual: big(item.actual),
  histogram: Array.from({ length: BUCKETS }, (_, i) => num(item[bucketAttribute(i)])),
  idleUnitMs: big(item.idle_unit_ms),
  released: num(item.released),
  expired: num(item.expired),
  lastAtMs: num(item.last_ms ?? NO_TOTALS.lastAtMs),
});

export const trackedKindsOf = (item: Item | undefined): TrackedKinds => ({
  kinds: new Map(
    Object.entries((item?.kinds as Record<string, unknown> | undefined) ?? {}).map(([k, v]) => [
      k,
      num(v),
    ]),
  ),
  version: item ? num(item.ver) : 0,
});

export type AccuracyPart =
  | { readonly part: 'KINDS' }
  | { readonly part: 'OTHER' }
  | { readonly part: 'KIND'; readonly kind: string };

/** Which item of a budget's accuracy partition this is. */
export function partOf(item: Item): AccuracyPart | undefined {
  const sk = String(item.sk);
  if (sk === 'KINDS' || sk === 'OTHER') return { part: sk };
  return sk.startsWith('KIND#') ? { part: 'KIND', kind: sk.slice('KIND#'.length) } : undefined;
}
