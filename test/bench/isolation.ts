/**
 * The `isolation` phase (`npm run bench -- --phases isolation`): no agent can hurt the others
 * (issue 25 point 5; docs/decisions.md § Rate limits, § Edge). On a server of its own with the
 * contention emulator on, two runs, each measured against a quiet run just before it:
 *
 * - **a noisy neighbour**: three tenants each offer reserve→commit pairs at `RATE` a second
 *   (open loop: a pair starts on schedule whether or not the last one ended), while a fourth
 *   tenant's key offers ten times that. The noisy tenant has the rate limits an operator would
 *   give it (`NOISY_LIMITS`); the figure is the quiet tenants' goodput (pairs completed a
 *   second) with the neighbour against without it.
 * - **a flood of bad keys**: `FLOOD_RPS` requests a second with garbage keys (not of our shape,
 *   and a few unknown keys of our shape repeated), while the three tenants reserve and commit
 *   one pair at a time; the figures are their reserve p50 with the flood against without it, and
 *   the DynamoDB calls the flood made, counted by the server's own client (the probe's tally),
 *   in a window where only the flood runs.
 */
import { randomBytes } from 'node:crypto';
import { type Bench, replaceBlock, say } from './context.js';
import { HttpTarget } from './http.js';
import { type BenchTenant, TTL_MS, UNIT } from './provision.js';
import type { ServerProcess } from './server.js';
import { summarize } from './stats.js';
import type { Tally } from './tally.js';

const QUIET_TENANTS = 3;
/** Pairs a second each quiet tenant offers. */
const RATE = 12;
const NOISY_FACTOR = 10;
/** What an operator gives the tenant of an agent that may run away: its fair share. */
const NOISY_LIMITS = {
  max_requests_per_minute: RATE * 2 * 60,
  max_reservations_per_minute: RATE * 60,
};
const FLOOD_RPS = 1_000;
/** The flood's requests in flight at most: past it, a tick's requests are not sent (counted). */
const FLOOD_IN_FLIGHT = 256;

export interface GoodputRun {
  readonly seconds: number;
  /** Pairs completed inside the window, a second, by the quiet tenants together. */
  readonly quietGoodput: number;
  readonly noisyOffered: number;
  readonly noisyGoodput: number;
  /** The noisy tenant's answers by status. */
  readonly noisyStatuses: Record<string, number>;
}

export interface IsolationResult {
  readonly quiet: GoodputRun;
  readonly noisy: GoodputRun;
  /** The same neighbour with its limits lifted: what the limits are worth. */
  readonly unlimited: GoodputRun;
  /** noisy.quietGoodput ÷ quiet.quietGoodput − 1 (target: ≥ −10 %). */
  readonly goodputChange: number;
  readonly floodRps: number;
  readonly floodSent: number;
  readonly floodStatuses: Record<string, number>;
  readonly reserveP50QuietMs: number;
  readonly reserveP50FloodedMs: number;
  /** reserveP50FloodedMs ÷ reserveP50QuietMs − 1 (target: ≤ +10 %). */
  readonly p50Change: number;
  /** DynamoDB calls the flood's requests made while only it ran (target: 0). */
  readonly floodDynamoCalls: number;
  /** Every DynamoDB call in that window, the server's background jobs included. */
  readonly floodAllCalls: number;
  /** Distinct unknown keys of our shape in the flood (each may cost a read per 5 s). */
  readonly shapedUnknownKeys: number;
  /** DynamoDB calls of requests while only those ran (one read per key per 5 s expected). */
  readonly shapedReads: number;
  readonly floodAloneSeconds: number;
  /** The same p50s with the edge's rules emulated in front (LOCAL_WAF). */
  readonly edge: {
    readonly reserveP50QuietMs: number;
    readonly reserveP50FloodedMs: number;
    readonly p50Change: number;
    readonly floodStatuses: Record<string, number>;
  };
  readonly skipped?: string | undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/** One reserve→commit pair; true when both were answered 2xx. */
async function pair(
  target: HttpTarget,
  t: BenchTenant,
  statuses?: Record<string, number>,
): Promise<{ ok: boolean; reserveMs: number }> {
  const sent = performance.now();
  const reserve = await target.send('POST', '/v1/reservations', t.headers, {
    idempotency_key: randomBytes(8).toString('hex'),
    subject: { tenant: t.tenant },
    action: { kind: 'llm.completion', name: 'bench' },
    estimate: { unit: UNIT, amount: 1_000 },
    ttl_ms: TTL_MS,
  });
  const reserveMs = performance.now() - sent;
  if (statuses) statuses[reserve.status] = (statuses[reserve.status] ?? 0) + 1;
  if (reserve.status !== 200) return { ok: false, reserveMs };
  const id = String(reserve.body.reservation_id);
  // A hold granted is settled whatever it takes (the SDK retries a commit until it lands).
  for (let attempt = 0; attempt < 20; attempt++) {
    const commit = await target.send('POST', `/v1/reservations/${id}/commit`, t.headers, {
      idempotency_key: `c-${id}`,
      actual: { unit: UNIT, amount: 800 },
    });
    if (statuses)
      statuses[`commit ${commit.status}`] = (statuses[`commit ${commit.status}`] ?? 0) + 1;
    if (commit.status === 200) return { ok: true, reserveMs };
    await sleep(commit.retryAfter ? commit.retryAfter * 1000 : 200 * 2 ** Math.min(attempt, 5));
  }
  return { ok: false, reserveMs };
}

/**
 * Offers `rate` pairs a second for `ms`, open loop; resolves once every pair ended, with the
 * pairs that completed inside the window (goodput: a pair answered after it is not counted).
 */
async function offer(
  target: HttpTarget,
  t: BenchTenant,
  rate: number,
  ms: number,
  statuses?: Record<string, number>,
): Promise<number> {
  const pending: Promise<boolean>[] = [];
  const began = performance.now();
  const end = began + ms;
  for (let i = 0; ; i++) {
    const at = (i * 1000) / rate;
    if (at >= ms) break;
    const wait = began + at - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(pair(target, t, statuses).then((p) => p.ok && performance.now() <= end));
  }
  return (await Promise.all(pending)).filter(Boolean).length;
}

async function goodputRun(
  target: HttpTarget,
  quiet: readonly BenchTenant[],
  noisy: BenchTenant | undefined,
  ms: number,
): Promise<GoodputRun> {
  const noisyStatuses: Record<string, number> = {};
  // The runaway key starts first and runs on until its limit answers (at most 15 s): the
  // figure is the others' goodput while it runs away, not while it uses its minute's share.
  const noisyLoad = noisy
    ? offer(target, noisy, RATE * NOISY_FACTOR, ms + 15_000, noisyStatuses)
    : Promise.resolve(0);
  const warm = performance.now() + 15_000;
  while (noisy && !noisyStatuses['429'] && performance.now() < warm) await sleep(100);
  const [done, noisyDone] = await Promise.all([
    Promise.all(quiet.map((t) => offer(target, t, RATE, ms))),
    noisyLoad,
  ]);
  const seconds = ms / 1000;
  const noisySeconds = (ms + 15_000) / 1000;
  return {
    seconds,
    quietGoodput: done.reduce((a, b) => a + b, 0) / seconds,
    noisyOffered: noisy ? RATE * NOISY_FACTOR : 0,
    noisyGoodput: noisy ? noisyDone / noisySeconds : 0,
    noisyStatuses,
  };
}

const SHAPED_UNKNOWN = 8;
/** Keys not of our shape: never a table read. */
const UNSHAPED = ['garbage', 'sk-not-ours', 'cyc_live_short', `cyc_live_${'!'.repeat(32)}`];
/** Unknown keys of our shape, repeated: one read each per negative-cache bound (5 s). */
const SHAPED = Array.from(
  { length: SHAPED_UNKNOWN },
  () => `cyc_live_${randomBytes(24).toString('base64url')}`,
);
const GARBAGE = [...UNSHAPED, ...SHAPED];

/** Sends FLOOD_RPS a second until `stop()`; returns what it sent and how it was answered. */
function flood(target: HttpTarget, keys: readonly string[] = GARBAGE) {
  const statuses: Record<string, number> = {};
  let sent = 0;
  let dropped = 0;
  let inFlight = 0;
  let running = true;
  const done = (async () => {
    const began = performance.now();
    for (let tick = 0; running; tick++) {
      const wait = began + tick * 10 - performance.now();
      if (wait > 0) await sleep(wait);
      for (let i = 0; i < FLOOD_RPS / 100; i++) {
        if (inFlight >= FLOOD_IN_FLIGHT) {
          dropped++;
          continue;
        }
        inFlight++;
        sent++;
        const key = keys[(tick + i) % keys.length] as string;
        void target
          .send('GET', '/v1/balances?tenant=x', { 'x-cycles-api-key': key })
          .then(
            (r) => {
              statuses[r.status] = (statuses[r.status] ?? 0) + 1;
            },
            () => {
              statuses.error = (statuses.error ?? 0) + 1;
            },
          )
          .finally(() => inFlight--);
      }
    }
    while (inFlight > 0) await sleep(10);
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return { sent, dropped, statuses };
    },
  };
}

const callsOf = (t: Tally) => Object.values(t).reduce((n, c) => n + c.calls, 0);

/** Reserve p50 of the quiet tenants, one pair at a time each, for `ms`. */
async function reserveP50(target: HttpTarget, quiet: readonly BenchTenant[], ms: number) {
  const times: number[] = [];
  const until = performance.now() + ms;
  await Promise.all(
    quiet.map(async (t) => {
      while (performance.now() < until) times.push((await pair(target, t)).reserveMs);
    }),
  );
  return summarize(times).p50;
}

export async function isolationPhase(
  b: Bench,
  start: ((env: Record<string, string>) => Promise<ServerProcess>) | undefined,
): Promise<IsolationResult | undefined> {
  if (!start) {
    say('  skipped: the phase starts a server of its own on the DynamoDB Local the service uses');
    return undefined;
  }
  const ms = b.opts.quick ? 5_000 : 20_000;
  const quiet = await Promise.all(
    Array.from({ length: QUIET_TENANTS }, (_, i) => b.tenant(`iso-quiet-${i}`, [''])),
  );
  const noisy = await b.tenant('iso-noisy', ['']);
  await b.parts.admin.expect(
    'limit the noisy tenant',
    'PATCH',
    `/v1/admin/tenants/${noisy.tenant}`,
    { 'x-admin-api-key': b.parts.adminKey },
    { rate_limits: NOISY_LIMITS },
  );
  const server = await start({});
  const target = new HttpTarget(server.runtimeUrl);
  try {
    say(`  ${QUIET_TENANTS} tenants at ${RATE} pairs/s each, ${ms / 1000} s a run`);
    const quietRun = await goodputRun(target, quiet, undefined, ms);
    say(`  quiet:  others' goodput ${quietRun.quietGoodput.toFixed(1)} pairs/s`);
    const noisyRun = await goodputRun(target, quiet, noisy, ms);
    const goodputChange = noisyRun.quietGoodput / quietRun.quietGoodput - 1;
    say(
      `  noisy:  others' goodput ${noisyRun.quietGoodput.toFixed(1)} pairs/s (${pct(goodputChange)}); the noisy key offered ${noisyRun.noisyOffered} pairs/s, got ${noisyRun.noisyGoodput.toFixed(1)} (${statusText(noisyRun.noisyStatuses)})`,
    );

    await b.parts.admin.expect(
      'lift the noisy tenant’s limits',
      'PATCH',
      `/v1/admin/tenants/${noisy.tenant}`,
      { 'x-admin-api-key': b.parts.adminKey },
      { rate_limits: null },
    );
    await sleep(5_500); // the limits' cache bound (API_KEY_CACHE_TTL_MS)
    const unlimitedRun = await goodputRun(target, quiet, noisy, ms);
    say(
      `  without its limits: others' goodput ${unlimitedRun.quietGoodput.toFixed(1)} pairs/s (${pct(unlimitedRun.quietGoodput / quietRun.quietGoodput - 1)}); the noisy key got ${unlimitedRun.noisyGoodput.toFixed(1)} (${statusText(unlimitedRun.noisyStatuses)})`,
    );

    const floodAloneMs = b.opts.quick ? 2_000 : 4_000;
    /** DynamoDB calls the server's requests made while only a flood of `keys` ran. */
    const readsDuring = async (keys: readonly string[]) => {
      const before = await server.snapshot();
      const alone = flood(target, keys);
      await sleep(floodAloneMs);
      const sent = await alone.stop();
      const after = await server.snapshot();
      return {
        sent,
        reads: after.requestCalls - before.requestCalls,
        all: callsOf(after.tally) - callsOf(before.tally),
      };
    };
    const unshaped = await readsDuring(UNSHAPED);
    const shaped = await readsDuring(SHAPED);
    const floodDynamoCalls = unshaped.reads;
    const floodAllCalls = unshaped.all;
    const aloneSent = unshaped.sent;
    say(
      `  flood alone, keys not of our shape: ${unshaped.sent.sent} requests in ${floodAloneMs / 1000} s (${unshaped.sent.dropped} not sent), ${statusText(unshaped.sent.statuses)}; DynamoDB calls of its requests ${unshaped.reads} (all the server's DynamoDB calls, background jobs included: ${unshaped.all})`,
    );
    say(
      `  flood alone, ${SHAPED_UNKNOWN} unknown keys of our shape repeated: ${shaped.sent.sent} requests, ${statusText(shaped.sent.statuses)}; DynamoDB calls of its requests ${shaped.reads} (all calls: ${shaped.all})`,
    );
    const p50Quiet = await reserveP50(target, quiet, ms);
    const flooding = flood(target);
    const p50Flooded = await reserveP50(target, quiet, ms);
    const floodRun = await flooding.stop();
    const p50Change = p50Flooded / p50Quiet - 1;
    say(
      `  reserve p50 ${p50Quiet.toFixed(1)} ms quiet, ${p50Flooded.toFixed(1)} ms under the flood (${pct(p50Change)}); the flood sent ${floodRun.sent} (${(floodRun.sent / (ms / 1000)).toFixed(0)}/s), ${statusText(floodRun.statuses)}`,
    );
    // The same flood against a server with the edge's rules emulated (LOCAL_WAF; the rate rules
    // set out of reach, since every client here is one source): the garbage is answered before
    // any function, as CloudFront + WAF answer it in AWS.
    const edge = await start({
      LOCAL_WAF: 'true',
      LOCAL_WAF_SOURCE_RATE_PER_MINUTE: '2000000000',
      LOCAL_WAF_KEY_RATE_PER_MINUTE: '2000000000',
    });
    const edgeTarget = new HttpTarget(edge.runtimeUrl);
    let edgeRun: { quiet: number; flooded: number; sent: number; statuses: Record<string, number> };
    try {
      const edgeQuiet = await reserveP50(edgeTarget, quiet, ms);
      const edgeFlooding = flood(edgeTarget);
      const edgeFlooded = await reserveP50(edgeTarget, quiet, ms);
      const edgeFlood = await edgeFlooding.stop();
      edgeRun = {
        quiet: edgeQuiet,
        flooded: edgeFlooded,
        sent: edgeFlood.sent,
        statuses: edgeFlood.statuses,
      };
    } finally {
      edgeTarget.close();
      await edge.stop();
    }
    say(
      `  with the edge emulated: reserve p50 ${edgeRun.quiet.toFixed(1)} ms quiet, ${edgeRun.flooded.toFixed(1)} ms under the flood (${pct(edgeRun.flooded / edgeRun.quiet - 1)}); the flood sent ${edgeRun.sent}, ${statusText(edgeRun.statuses)}`,
    );
    await b.audit('isolation', [...quiet, noisy]);
    return {
      quiet: quietRun,
      noisy: noisyRun,
      unlimited: unlimitedRun,
      goodputChange,
      floodRps: floodRun.sent / (ms / 1000),
      floodSent: floodRun.sent + aloneSent.sent,
      floodStatuses: floodRun.statuses,
      reserveP50QuietMs: Math.round(p50Quiet * 10) / 10,
      reserveP50FloodedMs: Math.round(p50Flooded * 10) / 10,
      p50Change,
      floodDynamoCalls,
      floodAllCalls,
      shapedUnknownKeys: SHAPED_UNKNOWN,
      shapedReads: shaped.reads,
      floodAloneSeconds: floodAloneMs / 1000,
      edge: {
        reserveP50QuietMs: Math.round(edgeRun.quiet * 10) / 10,
        reserveP50FloodedMs: Math.round(edgeRun.flooded * 10) / 10,
        p50Change: edgeRun.flooded / edgeRun.quiet - 1,
        floodStatuses: edgeRun.statuses,
      },
    };
  } finally {
    target.close();
    await server.stop();
  }
}

const statusText = (s: Record<string, number>) =>
  Object.entries(s)
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');

const BEGIN =
  '<!-- isolation:begin (generated by npm run bench -- --phases isolation; edits here are overwritten) -->';
const END = '<!-- isolation:end -->';

/** The phase's block of BENCHMARKS.md. */
export function isolationMarkdown(
  r: IsolationResult,
  startedAt: string,
  command: string,
  load: readonly [readonly number[], readonly number[]],
): string {
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  return [
    `Run of ${startedAt.replace('T', ' ').slice(0, 19)} UTC: \`${command}\`; load average (1 / 5 / 15 min) ${load[0].join(' / ')} at the start, ${load[1].join(' / ')} at the end`,
    '',
    '| Figure | Quiet | With the neighbour / flood | Change | Target |',
    '| --- | --- | --- | --- | --- |',
    `| Goodput of ${QUIET_TENANTS} tenants at ${RATE} pairs/s each (pairs/s, ${r.quiet.seconds} s runs) | ${r.quiet.quietGoodput.toFixed(1)} | ${r.noisy.quietGoodput.toFixed(1)} (one key offering ${r.noisy.noisyOffered} pairs/s, limits ${JSON.stringify(NOISY_LIMITS)}: it got ${r.noisy.noisyGoodput.toFixed(1)}) | ${pct(r.goodputChange)} | ≥ −10 %: ${verdict(r.goodputChange >= -0.1)} |`,
    `| The same without the neighbour's limits | ${r.quiet.quietGoodput.toFixed(1)} | ${r.unlimited.quietGoodput.toFixed(1)} (it got ${r.unlimited.noisyGoodput.toFixed(1)}) | ${pct(r.unlimited.quietGoodput / r.quiet.quietGoodput - 1)} | (contrast) |`,
    `| Their reserve p50 (ms), one pair at a time each | ${r.reserveP50QuietMs} | ${r.reserveP50FloodedMs} (${r.floodRps.toFixed(0)} requests/s with garbage keys) | ${pct(r.p50Change)} | ≤ +10 %: ${verdict(r.p50Change <= 0.1)} |`,
    `| The same, the edge's rules emulated in front (\`LOCAL_WAF\`): the garbage answered before any function | ${r.edge.reserveP50QuietMs} | ${r.edge.reserveP50FloodedMs} | ${pct(r.edge.p50Change)} | ≤ +10 %: ${verdict(r.edge.p50Change <= 0.1)} |`,
    `| DynamoDB calls of the flood's requests, keys not of our shape, flood alone (${r.floodAloneSeconds} s) | — | ${r.floodDynamoCalls} (the server's calls in that window, background jobs included: ${r.floodAllCalls}) | — | 0: ${verdict(r.floodDynamoCalls === 0)} |\n| The same, ${r.shapedUnknownKeys} unknown keys of our shape repeated | — | ${r.shapedReads} (one read per key per negative-cache bound, 5 s) | — | — |`,
    '',
    `The noisy key's answers: ${statusText(r.noisy.noisyStatuses)}. The flood's answers: ${statusText(r.floodStatuses)}.`,
  ].join('\n');
}

export const isolationBlock = (text: string, block: string): string =>
  replaceBlock(text, BEGIN, END, block);
