import { randomUUID } from 'node:crypto';
import { type Bench, say } from './context.js';
import { ACTUAL, reserveBody } from './latency.js';
import { UNIT } from './provision.js';
import { type LatencySummary, summarize } from './stats.js';

export interface ExpiryLag {
  /** Reservations left to fall due at once. */
  readonly due: number;
  /** Clients running reserve→commit on another tenant meanwhile. */
  readonly clients: number;
  readonly intervalMs: number;
  readonly expired: number;
  /** finalized_at_ms − (expires_at_ms + grace_period_ms) of each: how late its hold came back. */
  readonly lagMs: LatencySummary;
  readonly boundMs: number;
  readonly pairsUnderLoad: number;
}

const SUBJECT = { workspace: 'w' };

/**
 * How late holds come back: `due` reservations fall due within a second while `clients`
 * clients run reserve→commit, and the sweeper runs in this process on its interval exactly
 * as the local runner runs it (in AWS it is a Lambda of its own). The lag of each is read from
 * its own record: finalized_at_ms is when its expiry was written.
 */
export async function expiryPhase(bench: Bench): Promise<ExpiryLag> {
  const due = bench.opts.quick ? 50 : 200;
  const clients = 10;
  const intervalMs = Number(process.env.EXPIRY_SWEEP_INTERVAL_MS ?? 5_000);
  const holders = await bench.tenant('expiry', ['', 'workspace:w']);
  const busy = await bench.tenant('expiry-load', ['', 'workspace:w']);
  const outcomes = bench.outcomesOf('expiry');
  const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');

  // Running before the first hold is made, as the sweeper runs all the time.
  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    void sweepOnce().finally(() => {
      sweeping = false;
    });
  }, intervalMs);
  let stop = false;
  let pairs = 0;
  const client = async () => {
    while (!stop) {
      try {
        const reserved = await bench.runtime.expect(
          'reserve',
          'POST',
          '/v1/reservations',
          busy.headers,
          reserveBody(randomUUID(), SUBJECT),
        );
        await bench.runtime.expect(
          'commit',
          'POST',
          `/v1/reservations/${String(reserved.reservation_id)}/commit`,
          busy.headers,
          { idempotency_key: randomUUID(), actual: { unit: UNIT, amount: ACTUAL } },
        );
        outcomes.ok();
        pairs++;
      } catch (error) {
        outcomes.fail(error);
      }
    }
  };
  const load = Array.from({ length: clients }, client);
  const deadlines = new Map<string, number>();
  for (let i = 0; i < due; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, due - i) }, async () => {
        const held = await bench.runtime.expect(
          'reserve',
          'POST',
          '/v1/reservations',
          holders.headers,
          {
            ...reserveBody(randomUUID(), SUBJECT),
            ttl_ms: 1_000,
            grace_period_ms: 0,
          },
        );
        outcomes.ok();
        deadlines.set(String(held.reservation_id), Number(held.expires_at_ms));
      }),
    );
  }

  const finalized = new Map<string, number>();
  const giveUpAt = Date.now() + 4 * intervalMs + 30_000;
  while (finalized.size < deadlines.size && Date.now() < giveUpAt) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const listed = await bench.runtime.send(
      'GET',
      '/v1/reservations?status=EXPIRED&limit=200',
      holders.headers,
    );
    for (const r of (listed.body.reservations ?? []) as Record<string, unknown>[]) {
      if (r.finalized_at_ms !== undefined)
        finalized.set(String(r.reservation_id), Number(r.finalized_at_ms));
    }
  }
  stop = true;
  await Promise.all(load);
  clearInterval(sweeper);
  while (sweeping) await new Promise((resolve) => setTimeout(resolve, 50));

  const lags = [...finalized].map(([id, at]) => at - (deadlines.get(id) ?? at));
  const result: ExpiryLag = {
    due,
    clients,
    intervalMs,
    expired: finalized.size,
    lagMs: summarize(lags),
    boundMs: intervalMs + 1_000,
    pairsUnderLoad: pairs,
  };
  say(
    `  ${result.expired}/${due} holds back; lag p50 ${result.lagMs.p50} ms, max ${result.lagMs.max} ms (bound: interval ${intervalMs} ms + 1 s) while ${clients} clients ran ${pairs} reserve→commit pairs`,
  );
  await bench.audit('expiry', [holders, busy]);
  return result;
}
