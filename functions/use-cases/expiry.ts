import { walkDueReservations } from '../store/reservation-queries.js';
import { expireReservation } from './reservations.js';

export interface SweepResult {
  readonly expired: number;
  readonly examined: number;
}

/**
 * Expires every reservation past expires_at_ms + grace_period_ms. Each expiry is its own
 * transaction conditioned on ACTIVE-and-due, so two sweepers at once, or a sweep racing a
 * commit, settle each reservation exactly once. Stops early when `stopAt` (real time) is reached.
 */
export async function sweepExpiredReservations(
  now: number,
  stopAt = Number.POSITIVE_INFINITY,
): Promise<SweepResult> {
  let expired = 0;
  let examined = 0;
  await walkDueReservations(now, { pageSize: 100, stopAt }, async (due) => {
    examined += due.length;
    let progressed = 0;
    for (const r of due) if (await expireReservation(r, now)) progressed++;
    expired += progressed;
    return progressed;
  });
  return { expired, examined };
}
