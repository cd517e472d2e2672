import { config } from './config/settings.js';
import { currentInvocation } from './telemetry/invocation.js';

// A request's deadline: the moment past which its retry loops start no new DynamoDB call. A
// call already sent is always waited for — abandoning it would answer "failed" while its write
// may still land — so the deadline sits one call's worst case before the function's timeout,
// and the loops check it between attempts: a request that runs out answers 429 with nothing
// written (docs/decisions.md § Contention). Lambda's context gives the remaining time;
// REQUEST_DEADLINE_MS sets it outright (locally 20 s, and tests).

/** The settings a deadline is made of (the configuration's, unless a test gives others). */
export interface DeadlineSettings {
  readonly REQUEST_DEADLINE_MS: number;
  readonly DYNAMODB_MAX_ATTEMPTS: number;
  readonly DYNAMODB_ATTEMPT_TIMEOUT_MS: number;
}

/** The SDK's backoff between a call's attempts, at most (3 × 1 s attempts: 0.5 s in all). */
const SDK_BACKOFF_MS = 500;

/**
 * How long after its start a request may start new calls, given the function's remaining time
 * then: that time less one call's worst case (every attempt timing out, and the SDK's
 * backoff): 6.5 s of a 10 s function, 1.5 s of a 5 s one (0: no retry at all; the first attempt
 * is always made). REQUEST_DEADLINE_MS, when set, instead: locally, where nothing times a
 * function out and the worst case (3 × 10 s) exceeds the nominal timeout, it is 20 s.
 */
export function deadlineBudgetMs(
  remainingMs: number | undefined,
  s: DeadlineSettings = config,
): number | undefined {
  if (s.REQUEST_DEADLINE_MS > 0) return s.REQUEST_DEADLINE_MS;
  if (remainingMs === undefined || !Number.isFinite(remainingMs)) return undefined;
  const worstCallMs = s.DYNAMODB_MAX_ATTEMPTS * s.DYNAMODB_ATTEMPT_TIMEOUT_MS + SDK_BACKOFF_MS;
  return Math.max(0, remainingMs - worstCallMs);
}

/** Sets the current invocation's deadline, `budgetMs` after its start. */
export function startDeadline(budgetMs: number | undefined): void {
  const invocation = currentInvocation();
  if (invocation && budgetMs !== undefined) invocation.deadlineAt = invocation.startedAt + budgetMs;
}

/** Whether the current request is past its deadline: start no new attempt. */
export function pastDeadline(): boolean {
  const at = currentInvocation()?.deadlineAt;
  return at !== undefined && performance.now() >= at;
}

/** Milliseconds until the current request's deadline (Infinity without one). */
export function timeLeftMs(): number {
  const at = currentInvocation()?.deadlineAt;
  return at === undefined ? Number.POSITIVE_INFINITY : Math.max(0, at - performance.now());
}
