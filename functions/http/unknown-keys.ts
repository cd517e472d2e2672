import { KEY_SECRET_PREFIX } from '../domain/api-keys.js';

/**
 * What a key lookup may skip: a secret that cannot be one of ours, or whose hash the table did
 * not know a moment ago. A flood of bad keys is answered 401 without a table read: garbage of
 * the wrong shape never reaches the table (every secret is KEY_SECRET_PREFIX + 32 base64url
 * characters, domain/api-keys.ts), and a repeated unknown one reaches it once per `ttlMs`.
 *
 * The cache is a size-bounded LRU (a Map in insertion order, refreshed on hit), so a flood of
 * distinct keys costs bounded memory and evicts the oldest first. Its TTL is the key cache's
 * (API_KEY_CACHE_TTL_MS, ≤ 5 s): a key created after its hash was cached as unknown works
 * within the same bound as a revocation takes effect (docs/decisions.md § Control plane).
 * Revoked keys need no entry here: the positive cache holds their REVOKED item for as long.
 */
export const KEY_SHAPE = new RegExp(`^${KEY_SECRET_PREFIX}[A-Za-z0-9_-]{32}$`);

export const isKeyShaped = (secret: string): boolean => KEY_SHAPE.test(secret);

/** The header names a tenant key may come in (http/auth.ts): the edge's rules read these too. */
export const KEY_HEADERS = ['x-cycles-api-key', 'x-service-api-key'] as const;

export class UnknownKeys {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: () => number,
  ) {}

  /** True when `hash` was looked up and not found within the last `ttlMs` (server clock). */
  has(hash: string, now: number): boolean {
    const at = this.seen.get(hash);
    if (at === undefined) return false;
    this.seen.delete(hash);
    if (now < at || now - at >= this.ttlMs()) return false;
    this.seen.set(hash, at);
    return true;
  }

  add(hash: string, now: number): void {
    if (this.ttlMs() <= 0) return;
    this.seen.delete(hash);
    this.seen.set(hash, now);
    if (this.seen.size > this.maxEntries) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }

  get size(): number {
    return this.seen.size;
  }
}
