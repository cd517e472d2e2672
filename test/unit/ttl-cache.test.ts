import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../functions/ttl-cache.js';

describe('a per-container TTL cache', () => {
  it('answers an entry younger than its TTL, including an undefined value, and not at the TTL', () => {
    const cache = new TtlCache<string | undefined>(() => 5_000);
    cache.set('none', undefined, 1_000);
    cache.set('k', 'v', 1_000);
    expect(cache.get('k', 5_999)).toEqual({ value: 'v', at: 1_000 });
    expect(cache.get('none', 5_999)).toEqual({ value: undefined, at: 1_000 });
    expect(cache.get('k', 6_000)).toBeUndefined();
  });

  it('does not trust an entry from the future (a clock moved back)', () => {
    const cache = new TtlCache<string>(() => 5_000);
    cache.set('k', 'v', 10_000);
    expect(cache.get('k', 9_999)).toBeUndefined();
  });

  it('caches nothing with a TTL of 0, and starts over at its bound', () => {
    const off = new TtlCache<string>(() => 0);
    off.set('k', 'v', 0);
    expect(off.get('k', 0)).toBeUndefined();
    const small = new TtlCache<string>(() => 5_000, 2);
    small.set('a', '1', 0);
    small.set('b', '2', 0);
    small.set('c', '3', 0);
    expect([small.get('a', 1), small.get('b', 1), small.get('c', 1)?.value]).toEqual([
      undefined,
      undefined,
      '3',
    ]);
  });
});
