import type { Context } from 'aws-lambda';
import { serverNow } from '../clock.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { sweepExpiredReservations } from '../use-cases/expiry.js';

/**
 * Scheduled every minute by EventBridge; keeps sweeping every EXPIRY_SWEEP_INTERVAL_MS until
 * shortly before its timeout, so expiry lags SPEC's 5 s default, not the schedule's minute.
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
  do {
    const startedAt = Date.now();
    expired += (await sweepOnce(endAt)).expired;
    const wait = interval - (Date.now() - startedAt);
    if (Date.now() + wait >= endAt) break;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
  } while (Date.now() < endAt);
  return { expired };
}

/** One pass over the due index; the local runner calls it on its interval. */
export async function sweepOnce(stopAt?: number) {
  const result = await sweepExpiredReservations(serverNow(), stopAt);
  if (result.expired > 0)
    log.info('expired reservations', { expired: result.expired, examined: result.examined });
  return result;
}
