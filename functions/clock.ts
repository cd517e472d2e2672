/**
 * Server time, the `now` of every SPEC rule (expiry, grace, key expiry). Lambdas read the system
 * clock; the local stack may install another source, so tests move time forward instead of
 * sleeping. Timeouts and caches measure real elapsed time and keep using Date.now().
 */
let source: () => number = Date.now;

export const serverNow = (): number => source();

/** Local stack and tests only: every later `serverNow()` reads `clock`. */
export function useClock(clock: () => number): void {
  source = clock;
}
