/**
 * A per-container cache of what a function read from the table, each entry young for `ttlMs()`
 * after its read: the bound within which a change made elsewhere is seen. Ages are on the
 * server clock (an entry "from the future", after the clock moved back, is not young), so tests
 * move past the bound instead of waiting for it. At `max` entries it starts over: one read per
 * key again, never a stale answer. A TTL of 0 caches nothing.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { readonly value: V; readonly at: number }>();

  constructor(
    private readonly ttlMs: () => number,
    private readonly max = 10_000,
  ) {}

  /** The entry read less than the TTL ago (its value may itself be `undefined`: "none"). */
  get(key: string, now: number): { readonly value: V } | undefined {
    const hit = this.entries.get(key);
    return hit && now >= hit.at && now - hit.at < this.ttlMs() ? hit : undefined;
  }

  set(key: string, value: V, now: number): void {
    if (this.ttlMs() <= 0) return;
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(key, { value, at: now });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
