import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { serverNow } from '../clock.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { dynamoFields, recordMetric, runInvocation } from '../telemetry/invocation.js';
import { publishMetrics } from '../telemetry/metrics.js';
import { sweepExpiredReservations, sweepUntil } from '../use-cases/expiry.js';

/**
 * Scheduled every minute by EventBridge: sweeps until the next deadline is further than this
 * invocation lasts (use-cases/expiry.ts `sweepUntil`). Without a Lambda context (a direct call)
 * it makes exactly one full pass.
 */
export async function handler(
  _event: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
) {
  if (!context) return { expired: (await sweepOnce()).expired };
  const endAt = Date.now() + context.getRemainingTimeInMillis() - 5_000;
  const ports = { pass: sweepOnce, clock: serverNow, intervalMs: config.EXPIRY_SWEEP_INTERVAL_MS };
  return { expired: await sweepUntil(endAt, ports) };
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
