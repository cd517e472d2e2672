import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { serverNow } from '../clock.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { nextDeadlineBefore } from '../store/reservation-queries.js';
import { dynamoFields, recordMetric, runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { sweepExpiredReservations } from '../use-cases/expiry.js';

/**
 * Scheduled every minute by EventBridge. Sweeps, then looks for the next deadline due before
 * this invocation must end: none → it ends at once, so an idle deployment costs one short
 * invocation a minute; otherwise it sweeps again every EXPIRY_SWEEP_INTERVAL_MS (or at that
 * deadline, if sooner), so a due hold comes back within the interval, not the minute.
 */
export async function handler(
  _event: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
) {
  // Without a Lambda context (a direct call) it makes exactly one full pass.
  if (!context) return { expired: (await sweepOnce()).expired };
  const interval = config.EXPIRY_SWEEP_INTERVAL_MS;
  const endAt = Date.now() + context.getRemainingTimeInMillis() - 5_000;
  let expired = 0;
  for (;;) {
    expired += (await sweepOnce(endAt)).expired;
    const left = endAt - Date.now();
    const next = await nextDeadlineBefore(serverNow() + left);
    if (next === undefined) break;
    // Already due yet not expired by this pass: index entries catching up, or new arrivals.
    const wait = Math.min(interval, Math.max(250, next - serverNow()));
    if (wait >= endAt - Date.now()) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  return { expired };
}

/**
 * One pass over the due index; the local runner calls it on its interval. Each pass is a
 * telemetry invocation of its own: Sweeps (the heartbeat), SweepLag and Expiries are published
 * as it ends, so a long invocation reports as it goes.
 */
export function sweepOnce(stopAt?: number) {
  return runInvocation(randomUUID(), async (invocation) => {
    const result = await sweepExpiredReservations(serverNow, stopAt);
    recordMetric('Sweeps', 1, {});
    recordMetric('SweepLag', result.lagMs, {});
    if (result.expired > 0)
      log.info('expired reservations', {
        sweep_id: invocation.requestId,
        expired: result.expired,
        examined: result.examined,
        lag_ms: result.lagMs,
        ...dynamoFields(invocation),
      });
    publishMetrics(invocation);
    return result;
  });
}
