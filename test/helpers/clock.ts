/**
 * Server time for a test stack (`useTestStack({ clock })`): every handler and the sweeper read
 * it, so a test moves time forward instead of sleeping until a reservation expires. It starts
 * at the real `Date.now()` and only ever moves forward.
 */
export interface TestClock {
  now(): number;
  /** Moves server time forward by `ms`. */
  advance(ms: number): void;
  /** Moves server time forward to `epochMs` (no-op if it is already there). */
  advanceTo(epochMs: number): void;
}

/**
 * `frozen: true`: time stands still between `advance` calls, so a test places every request at
 * an exact instant. Otherwise it runs with real time, shifted by what `advance` added — for
 * files whose other tests need time to pass (creation order) or whose races need it to flow.
 */
export function testClock({ frozen = false }: { frozen?: boolean } = {}): TestClock {
  const start = Date.now();
  let offset = 0;
  const now = () => (frozen ? start : Date.now()) + offset;
  const advance = (ms: number) => {
    if (!(ms >= 0)) throw new Error(`a test clock only moves forward, not by ${ms} ms`);
    offset += ms;
  };
  return { now, advance, advanceTo: (epochMs) => advance(Math.max(0, epochMs - now())) };
}
