/**
 * A fair share of a local server per API key (docs/decisions.md § Rate limits, "Isolation,
 * measured"; off unless LOCAL_FAIR_SHARE_PER_KEY is set). In AWS every request is a function of
 * its own and every tenant's budgets are items of their own, so one key's burst of admitted
 * work — a rate limit's whole minute spent in its first seconds — takes nothing from another
 * tenant's requests. A local server is one process on one DynamoDB Local that runs one call at a
 * time: there the burst's requests queue in front of everyone's. With a share set, a key with
 * that many requests in flight waits for one of its own to end while another key has work in
 * flight (alone, a key is never held: the share costs a single caller nothing), its waiting
 * requests kept in order, and past `maxWaiting` of them answered 429 at once.
 */
export class FairShare {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private total = 0;

  constructor(
    readonly perKey: number,
    private readonly maxWaiting = 1_000,
  ) {}

  /**
   * The key's turn: at once (the release returned), later (a promise of it), or refused (the
   * key's waiting requests are at their bound).
   */
  enter(key: string): (() => void) | Promise<() => void> | 'refused' {
    if (!this.held(key)) return this.start(key);
    const queue = this.waiting.get(key) ?? [];
    if (queue.length >= this.maxWaiting) return 'refused';
    this.waiting.set(key, queue);
    return new Promise((resolve) => queue.push(() => resolve(this.start(key))));
  }

  private held(key: string): boolean {
    const own = this.inFlight.get(key) ?? 0;
    return own >= this.perKey && this.total > own;
  }

  private start(key: string): () => void {
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    this.total++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
      this.total--;
      this.wake();
    };
  }

  /** Lets in the waiting requests of every key no longer held, one key after another. */
  private wake(): void {
    for (const [key, queue] of this.waiting) {
      while (queue.length > 0 && !this.held(key)) queue.shift()?.();
      if (queue.length === 0) this.waiting.delete(key);
    }
  }
}
