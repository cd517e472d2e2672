import { describe, expect, it } from 'vitest';
import { generateKeySecret } from '../../functions/domain/api-keys.js';
import { isKeyShaped, UnknownKeys } from '../../functions/http/unknown-keys.js';

describe('the negative key cache', () => {
  it('knows every generated secret as key-shaped', () => {
    for (let i = 0; i < 200; i++) expect(isKeyShaped(generateKeySecret())).toBe(true);
    expect(isKeyShaped(`${generateKeySecret()}x`)).toBe(false);
    expect(isKeyShaped('cyc_live_')).toBe(false);
  });

  it('remembers an unknown hash for its TTL, on the server clock', () => {
    const cache = new UnknownKeys(10, () => 5_000);
    cache.add('h', 1_000);
    expect(cache.has('h', 1_000)).toBe(true);
    expect(cache.has('h', 5_999)).toBe(true);
    expect(cache.has('h', 6_000)).toBe(false);
    // A clock that moved back never serves a stale entry.
    cache.add('g', 10_000);
    expect(cache.has('g', 9_999)).toBe(false);
  });

  it('holds at most its bound, evicting the least recently used', () => {
    const cache = new UnknownKeys(3, () => 5_000);
    for (const h of ['a', 'b', 'c']) cache.add(h, 0);
    expect(cache.has('a', 1)).toBe(true); // a is now the most recent
    cache.add('d', 1);
    expect(cache.size).toBe(3);
    expect(cache.has('b', 2)).toBe(false);
    expect(cache.has('a', 2)).toBe(true);
    expect(cache.has('c', 2)).toBe(true);
    expect(cache.has('d', 2)).toBe(true);
  });

  it('caches nothing when the key cache is off', () => {
    const cache = new UnknownKeys(3, () => 0);
    cache.add('a', 0);
    expect(cache.has('a', 0)).toBe(false);
    expect(cache.size).toBe(0);
  });
});
