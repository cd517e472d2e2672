import { DUE_SHARDS } from '../store/keys.js';
import { queryDueReservations } from '../store/reservations.js';
import { expireReservation } from './reservations.js';

export interface SweepResult {
  readonly expired: number;
  readonly examined: number;
}

/**
 * Expires every reservation past expires_at_ms + grace_period_ms. Each expiry is its own
 * transaction conditioned on ACTIVE-and-due, so two sweepers at once, or a sweep racing a
 * commit, settle each reservation exactly once. Stops early when `stopAt` is reached.
 */
export async function sweepExpiredReservations(
  now: number,
  stopAt = Number.POSITIVE_INFINITY,
): Promise<SweepResult> {
  let expired = 0;
  let examined = 0;
  for (let shard = 0; shard < DUE_SHARDS; shard++) {
    for (;;) {
      if (Date.now() >= stopAt) return { expired, examined };
      const due = await queryDueReservations(shard, now, 100);
      examined += due.length;
      let progressed = 0;
      for (const r of due) if (await expireReservation(r, now)) progressed++;
      expired += progressed;
      // A page with nothing expired is made of index entries not yet caught up: move on.
      if (due.length < 100 || progressed === 0) break;
    }
  }
  return { expired, examined };
}
