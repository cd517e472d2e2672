/**
 * The `isolation` phase (`npm run bench -- --phases isolation`): no agent can hurt the others
 * (issue 25 point 5; docs/decisions.md § Rate limits, § Edge). On a server of its own with the
 * contention emulator on, two runs, each measured against a quiet run just before it:
 *
 * - **a noisy neighbour**: three tenants each offer reserve→commit pairs at a rate a second
 *   (open loop: a pair starts on schedule whether or not the last one ended), while a fourth
 *   tenant's key offers ten times that. The rate is the highest of `RATES` at which this machine
 *   carries four tenants (the three and the neighbour's fair share), measured first: a baseline
 *   the machine does not carry measures the machine, not the neighbour. The noisy tenant has the
 *   rate limits an operator would give it, its fair share (`limitsFor`); the figure is the
 *   quiet tenants' goodput (pairs completed a second) with the neighbour against without it,
 *   `REPEATS` times alternated, on the functions alone and once more with the edge's rules
 *   emulated in front (as deployed: the WAF's per-key rule at its default).
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
/** Pairs a second each quiet tenant may offer, tried in order until the machine carries them. */
const RATES = [12, 8, 6, 4, 3];
/** Carried: this share of the pairs offered completed in the probe's window. */
const CARRIED = 0.95;
const PROBE_MS = 5_000;
const NOISY_FACTOR = 10;
/** Quiet-then-noisy comparisons on the functions alone. */
const REPEATS = 2;
/** Quiet-then-flooded reserve p50s: their median change is the figure (one noisy pair moves a mean). */
const P50_REPEATS = 3;
/** What an operator gives the tenant of an agent that may run away: its fair share. */
const limitsFor = (rate: number) => ({
  max_requests_per_minute: rate * 2 * 60,
  max_reservations_per_minute: rate * 60,
});
/** Requests one key may have in flight while others have work, in the fair-share run. */
const FAIR_SHARE = 8;
/** The edge's per-key WAF rule as deployed (infra/app.ts edgeKeyRatePerMinute's default). */
const EDGE_KEY_RATE_PER_MINUTE = 3_000;
const FLOOD_RPS = 1_000;
/** The flood's requests in flight at most: past it, a tick's requests are not sent (counted). */
const FLOOD_IN_FLIGHT = 256;

export interface GoodputRun {
  readonly seconds: number;
  /** Pairs completed inside the window, a second, by the quiet tenants together. */
  readonly quietGoodput: number;
  /** The same while the neighbour spent its minute's share (before its first 429), if it did. */
  readonly quietGoodputInBurst?: number | undefined;
  readonly burstSeconds?: number | undefined;
  readonly noisyOffered: number;
  readonly noisyGoodput: number;
  /** The noisy tenant's answers by status. */
  readonly noisyStatuses: Record<string, number>;
}

/** A quiet run, then one with the neighbour: the change in the others' goodput. */
export interface Comparison {
  readonly quiet: GoodputRun;
  readonly noisy: GoodputRun;
  /** noisy.quietGoodput ÷ quiet.quietGoodput − 1. */
  readonly change: number;
}

export interface IsolationResult {
  /** Pairs a second each quiet tenant offered: the highest the machine carried for four. */
  readonly rate: number;
  readonly probes: readonly { rate: number; offered: number; carried: number }[];
  readonly limits: ReturnType<typeof limitsFor>;
  /** On the functions alone, REPEATS times. */
  readonly runs: readonly Comparison[];
  /** Their mean change (target: ≥ −10 %). */
  readonly goodputChange: number;
  /** The same neighbour with its limits lifted: what the limits are worth. */
  readonly unlimited: Comparison;
  /** With the edge's rules emulated in front, as deployed (the WAF's per-key rule). */
  readonly edgeRun: Comparison;
  /** On a server with a fair share per key (LOCAL_FAIR_SHARE_PER_KEY = FAIR_SHARE). */
  readonly fairRun: Comparison;
  readonly floodRps: number;
  readonly floodSent: number;
  readonly floodStatuses: Record<string, number>;
  /** Each repeat's reserve p50 quiet and under the flood, alternated. */
  readonly p50Runs: readonly { readonly quietMs: number; readonly floodedMs: number }[];
  readonly reserveP50QuietMs: number;
  readonly reserveP50FloodedMs: number;
  /** Median of the repeats' flooded ÷ quiet − 1 (target: ≤ +10 %). */
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

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
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

interface Done {
  readonly at: number;
  readonly ok: boolean;
}

/**
 * Offers `rate` pairs a second for `ms`, open loop; resolves once every pair ended, with each
 * pair's start and whether it completed (2xx reserve and commit) and when.
 */
async function offer(
  target: HttpTarget,
  t: BenchTenant,
  rate: number,
  ms: number,
  statuses?: Record<string, number>,
): Promise<(Done & { readonly started: number })[]> {
  const pending: Promise<Done & { readonly started: number }>[] = [];
  const began = performance.now();
  for (let i = 0; ; i++) {
    const at = (i * 1000) / rate;
    if (at >= ms) break;
    const wait = began + at - performance.now();
    if (wait > 0) await sleep(wait);
    const started = performance.now();
    pending.push(
      pair(target, t, statuses).then((p) => ({ started, ok: p.ok, at: performance.now() })),
    );
  }
  return Promise.all(pending);
}

/** Pairs started in [from, to) and completed by `to`, a second. */
const goodputIn = (pairs: readonly (Done & { started: number })[], from: number, to: number) =>
  pairs.filter((p) => p.ok && p.started >= from && p.started < to && p.at <= to).length /
  ((to - from) / 1000);

/** The highest rate of RATES at which the machine carries `tenants` (CARRIED of what they offer). */
async function calibrate(target: HttpTarget, tenants: readonly BenchTenant[]) {
  const probes: { rate: number; offered: number; carried: number }[] = [];
  for (const rate of RATES) {
    const began = performance.now();
    const pairs = (await Promise.all(tenants.map((t) => offer(target, t, rate, PROBE_MS)))).flat();
    const carried = goodputIn(pairs, began, began + PROBE_MS);
    probes.push({ rate, offered: rate * tenants.length, carried: Math.round(carried * 10) / 10 });
    say(
      `  probe: ${tenants.length} tenants at ${rate} pairs/s each: ${carried.toFixed(1)} of ${rate * tenants.length} pairs/s`,
    );
    if (carried >= CARRIED * rate * tenants.length) return { rate, probes };
    await sleep(2_000); // the backlog drains
  }
  return { rate: RATES[RATES.length - 1] as number, probes };
}

/**
 * The quiet tenants' goodput over `ms`, alone or with the noisy key. The limited key starts at a
 * minute's start (its limits count per fixed minute) and runs on at ten times their rate; the
 * window measured opens at its first 429 — once it spent its minute's share — and closes within
 * the same minute, so it sees the limits at work; the others' goodput while it spent its share
 * (a burst of its whole minute) is reported beside it. A key without limits is measured after
 * 15 s of running away.
 */
async function goodputRun(
  target: HttpTarget,
  quiet: readonly BenchTenant[],
  noisy: BenchTenant | undefined,
  rate: number,
  ms: number,
  limited = true,
): Promise<GoodputRun> {
  const noisyStatuses: Record<string, number> = {};
  if (noisy && limited) {
    const into = Date.now() % 60_000;
    if (into > 1_000) await sleep(60_000 - into);
  }
  const start = performance.now();
  const warmMs = 15_000;
  const noisyLoad = noisy
    ? offer(target, noisy, rate * NOISY_FACTOR, ms + warmMs, noisyStatuses)
    : Promise.resolve([]);
  // The quiet tenants run from the start: their pairs before the window measure the burst.
  const quietLoad = Promise.all(quiet.map((t) => offer(target, t, rate, noisy ? ms + warmMs : ms)));
  const warm = start + warmMs;
  while (noisy && !noisyStatuses['429'] && performance.now() < warm) await sleep(50);
  const from = noisy ? performance.now() : start;
  const [done, noisyDone] = await Promise.all([quietLoad, noisyLoad]);
  const pairs = done.flat();
  const burst = noisy && limited && noisyStatuses['429'] ? from - start : undefined;
  return {
    seconds: ms / 1000,
    quietGoodput: goodputIn(pairs, from, from + ms),
    ...(burst !== undefined && {
      quietGoodputInBurst: goodputIn(pairs, start, from),
      burstSeconds: Math.round(burst / 100) / 10,
    }),
    noisyOffered: noisy ? rate * NOISY_FACTOR : 0,
    noisyGoodput: noisy ? goodputIn(noisyDone, start, start + ms + warmMs) : 0,
    noisyStatuses,
  };
}

/** A quiet run, then one with the neighbour. */
async function compare(
  target: HttpTarget,
  quiet: readonly BenchTenant[],
  noisy: BenchTenant,
  rate: number,
  ms: number,
  label: string,
  limited = true,
): Promise<Comparison> {
  const quietRun = await goodputRun(target, quiet, undefined, rate, ms);
  const noisyRun = await goodputRun(target, quiet, noisy, rate, ms, limited);
  const change = noisyRun.quietGoodput / quietRun.quietGoodput - 1;
  const burst =
    noisyRun.burstSeconds === undefined
      ? ''
      : `; while it spent its minute's share (${noisyRun.burstSeconds} s) ${noisyRun.quietGoodputInBurst?.toFixed(1)}`;
  say(
    `  ${label}: others' goodput ${quietRun.quietGoodput.toFixed(1)} quiet, ${noisyRun.quietGoodput.toFixed(1)} pairs/s with the neighbour (${pct(change)})${burst}; the noisy key offered ${noisyRun.noisyOffered} pairs/s, got ${noisyRun.noisyGoodput.toFixed(1)} (${statusText(noisyRun.noisyStatuses)})`,
  );
  return { quiet: quietRun, noisy: noisyRun, change };
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
  const setLimits = (limits: ReturnType<typeof limitsFor> | null) =>
    b.parts.admin.expect(
      'the noisy tenant’s limits',
      'PATCH',
      `/v1/admin/tenants/${noisy.tenant}`,
      { 'x-admin-api-key': b.parts.adminKey },
      { rate_limits: limits },
    );
  const server = await start({});
  const target = new HttpTarget(server.runtimeUrl);
  try {
    // Four tenants: the three, and the share the neighbour's limits let through.
    const { rate, probes } = await calibrate(target, [...quiet, noisy]);
    const limits = limitsFor(rate);
    await setLimits(limits);
    await sleep(5_500); // the limits' cache bound (API_KEY_CACHE_TTL_MS)
    say(
      `  ${QUIET_TENANTS} tenants at ${rate} pairs/s each, ${ms / 1000} s a run; the neighbour's limits ${JSON.stringify(limits)}`,
    );
    const runs: Comparison[] = [];
    for (let i = 0; i < REPEATS; i++) {
      runs.push(await compare(target, quiet, noisy, rate, ms, `functions alone, run ${i + 1}`));
    }
    const goodputChange = runs.reduce((n, r) => n + r.change, 0) / runs.length;

    await setLimits(null);
    await sleep(5_500);
    const unlimited = await compare(target, quiet, noisy, rate, ms, 'without its limits', false);
    await setLimits(limits);
    await sleep(5_500);
    // One process serves every tenant here: a server that gives each key a fair share of it,
    // as separate functions give it in AWS (infra/local/fair-share.ts).
    const fair = await start({ LOCAL_FAIR_SHARE_PER_KEY: String(FAIR_SHARE) });
    const fairTarget = new HttpTarget(fair.runtimeUrl);
    let fairRun: Comparison;
    try {
      fairRun = await compare(
        fairTarget,
        quiet,
        noisy,
        rate,
        ms,
        `a fair share of ${FAIR_SHARE} in flight per key`,
      );
    } finally {
      fairTarget.close();
      await fair.stop();
    }

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
    const p50Runs: { quietMs: number; floodedMs: number }[] = [];
    let floodRun = { sent: 0, dropped: 0, statuses: {} as Record<string, number> };
    for (let i = 0; i < P50_REPEATS; i++) {
      const quietMs = await reserveP50(target, quiet, ms);
      const flooding = flood(target);
      const floodedMs = await reserveP50(target, quiet, ms);
      floodRun = await flooding.stop();
      p50Runs.push({ quietMs, floodedMs });
      say(
        `  reserve p50 ${quietMs.toFixed(1)} ms quiet, ${floodedMs.toFixed(1)} ms under the flood (${pct(floodedMs / quietMs - 1)}); the flood sent ${floodRun.sent} (${(floodRun.sent / (ms / 1000)).toFixed(0)}/s), ${statusText(floodRun.statuses)}`,
      );
    }
    const p50Quiet = p50Runs.reduce((n, r) => n + r.quietMs, 0) / p50Runs.length;
    const p50Flooded = p50Runs.reduce((n, r) => n + r.floodedMs, 0) / p50Runs.length;
    const p50Change = median(p50Runs.map((r) => r.floodedMs / r.quietMs - 1));
    // The neighbour and the flood against a server with the edge's rules emulated (LOCAL_WAF:
    // the per-key rule at its deployed default; the per-source rule out of reach, since every
    // client here is one source): the garbage, and the runaway key past the WAF's rate, are
    // answered before any function, as CloudFront + WAF answer them in AWS.
    const edge = await start({
      LOCAL_WAF: 'true',
      LOCAL_WAF_SOURCE_RATE_PER_MINUTE: '2000000000',
      LOCAL_WAF_KEY_RATE_PER_MINUTE: String(EDGE_KEY_RATE_PER_MINUTE),
    });
    const edgeTarget = new HttpTarget(edge.runtimeUrl);
    let edgeRun: { quiet: number; flooded: number; sent: number; statuses: Record<string, number> };
    let edgeNoisy: Comparison;
    try {
      edgeNoisy = await compare(edgeTarget, quiet, noisy, rate, ms, 'the edge emulated');
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
      rate,
      probes,
      limits,
      runs,
      goodputChange,
      unlimited,
      edgeRun: edgeNoisy,
      fairRun,
      p50Runs: p50Runs.map((r) => ({
        quietMs: Math.round(r.quietMs * 10) / 10,
        floodedMs: Math.round(r.floodedMs * 10) / 10,
      })),
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
    `Calibration: ${r.probes.map((p) => `${p.rate} pairs/s each × 4 tenants: ${p.carried} of ${p.offered}`).join('; ')} → ${r.rate} pairs/s each (the highest carried at ≥ ${CARRIED * 100} %).`,
    '',
    '| Figure | Quiet | With the neighbour / flood | Change | Target |',
    '| --- | --- | --- | --- | --- |',
    ...r.runs.map(
      (c, i) =>
        `| Goodput of ${QUIET_TENANTS} tenants at ${r.rate} pairs/s each (pairs/s, ${c.quiet.seconds} s runs), functions alone, run ${i + 1} | ${c.quiet.quietGoodput.toFixed(1)} | ${c.noisy.quietGoodput.toFixed(1)} (one key offering ${c.noisy.noisyOffered} pairs/s, limits ${JSON.stringify(r.limits)}: it got ${c.noisy.noisyGoodput.toFixed(1)}; while it spent its minute's share, ${c.noisy.burstSeconds ?? '—'} s: ${c.noisy.quietGoodputInBurst?.toFixed(1) ?? '—'}) | ${pct(c.change)} | |`,
    ),
    `| Mean of the ${r.runs.length} runs | | | ${pct(r.goodputChange)} | ≥ −10 %: ${verdict(r.goodputChange >= -0.1)} |`,
    `| The same, the edge's rules emulated in front (\`LOCAL_WAF\`, per-key rule ${EDGE_KEY_RATE_PER_MINUTE}/min as deployed) | ${r.edgeRun.quiet.quietGoodput.toFixed(1)} | ${r.edgeRun.noisy.quietGoodput.toFixed(1)} (it got ${r.edgeRun.noisy.noisyGoodput.toFixed(1)}; in its burst, ${r.edgeRun.noisy.burstSeconds ?? '—'} s: ${r.edgeRun.noisy.quietGoodputInBurst?.toFixed(1) ?? '—'}) | ${pct(r.edgeRun.change)} | ≥ −10 %: ${verdict(r.edgeRun.change >= -0.1)} |`,
    `| The same on a server giving each key a fair share (\`LOCAL_FAIR_SHARE_PER_KEY=${FAIR_SHARE}\`: a key with ${FAIR_SHARE} requests in flight waits while others have work) | ${r.fairRun.quiet.quietGoodput.toFixed(1)} | ${r.fairRun.noisy.quietGoodput.toFixed(1)} (it got ${r.fairRun.noisy.noisyGoodput.toFixed(1)}; in its burst, ${r.fairRun.noisy.burstSeconds ?? '—'} s: ${r.fairRun.noisy.quietGoodputInBurst?.toFixed(1) ?? '—'}) | ${pct(r.fairRun.change)} | ≥ −10 %: ${verdict(r.fairRun.change >= -0.1)} |`,
    `| The same without the neighbour's limits (functions alone) | ${r.unlimited.quiet.quietGoodput.toFixed(1)} | ${r.unlimited.noisy.quietGoodput.toFixed(1)} (it got ${r.unlimited.noisy.noisyGoodput.toFixed(1)}) | ${pct(r.unlimited.change)} | (contrast) |`,
    ...r.p50Runs.map(
      (p, i) =>
        `| Their reserve p50 (ms), one pair at a time each, run ${i + 1} | ${p.quietMs} | ${p.floodedMs} | ${pct(p.floodedMs / p.quietMs - 1)} | |`,
    ),
    `| Median change of the ${r.p50Runs.length} runs (${r.floodRps.toFixed(0)} requests/s with garbage keys; mean p50s beside it) | ${r.reserveP50QuietMs} | ${r.reserveP50FloodedMs} | ${pct(r.p50Change)} | ≤ +10 %: ${verdict(r.p50Change <= 0.1)} |`,
    `| The same, the edge's rules emulated in front (\`LOCAL_WAF\`): the garbage answered before any function | ${r.edge.reserveP50QuietMs} | ${r.edge.reserveP50FloodedMs} | ${pct(r.edge.p50Change)} | ≤ +10 %: ${verdict(r.edge.p50Change <= 0.1)} |`,
    `| DynamoDB calls of the flood's requests, keys not of our shape, flood alone (${r.floodAloneSeconds} s) | — | ${r.floodDynamoCalls} (the server's calls in that window, background jobs included: ${r.floodAllCalls}) | — | 0: ${verdict(r.floodDynamoCalls === 0)} |\n| The same, ${r.shapedUnknownKeys} unknown keys of our shape repeated | — | ${r.shapedReads} (one read per key per negative-cache bound, 5 s) | — | — |`,
    '',
    `The noisy key's answers (functions alone, last run): ${statusText(r.runs.at(-1)?.noisy.noisyStatuses ?? {})}; with the edge: ${statusText(r.edgeRun.noisy.noisyStatuses)}. The flood's answers (last run): ${statusText(r.floodStatuses)}.`,
  ].join('\n');
}

export const isolationBlock = (text: string, block: string): string =>
  replaceBlock(text, BEGIN, END, block);
