/**
 * The `busy-tenant` phase (`npm run bench -- --phases busy-tenant`; `--emulate-contention` runs it
 * after the simulator's phase): a tenant set up exactly as the README's walkthrough sets one up (a $1 root budget and a
 * workspace `prod` of $0.50 funded with $0.50 more, no `shards`), served by the real service in
 * a process of its own with the contention emulator on, and driven by clients that behave like
 * the real SDK (cycles-client-typescript 0.4.3, SDK-RECOVERY-PROFILE.md):
 * - a reserve that gets a 5xx (or no answer) is sent once more at once with the same key; a
 *   429 is not retried: the client waits Retry-After, then reserves again with a new key, as an
 *   agent would;
 * - a commit is retried with the same key until it lands: backoff 500 ms × 2^attempt (at most
 *   30 s), and at least Retry-After on a 429 (the SDK's retry engine, without its attempt cap:
 *   its journal replays the rest, and every hold must settle here).
 * Two loads: agents that do the work a reservation guards between reserve and commit
 * (log-normal, p50 1 s, p99 8 s), and closed-loop clients with no work at rising concurrency
 * (goodput against its peak: no collapse). Every run ends by letting the commits drain, then
 * audits both ledgers against the reservations and reads the shard counts the budgets reached
 * by themselves. Figures count the window after a warm-up, in which the budgets grow.
 */
import { type Distribution, lognormal } from '../../infra/local/contention.js';
import { type Bench, replaceBlock, say } from './context.js';
import { HttpTarget, type Reply } from './http.js';
import { type BenchTenant, UNIT } from './provision.js';
import type { ServerProcess } from './server.js';
import { summarize } from './stats.js';

/** The README's budgets (walkthrough steps 3 and 4). */
const ROOT_ALLOCATED = 100_000_000;
const WORKSPACE_ALLOCATED = 50_000_000;
const WORKSPACE_FUNDING = 50_000_000;
/**
 * Each reservation: smaller than the README's single 500,000 so that no run exhausts the $1
 * root (a refusal is a correct answer, but not the figure measured here).
 */
const ESTIMATE = 1_000;
const ACTUAL = 800;
const TTL_MS = 600_000;

const WORK = lognormal(1_000, 8_000);
/** The SDK's commit retry engine defaults (config.ts). */
const COMMIT_INITIAL_DELAY_MS = 500;
const COMMIT_MAX_DELAY_MS = 30_000;

export interface BusyRun {
  readonly load: 'agents' | 'closed-loop';
  readonly clients: number;
  /** Whether budgets may shard themselves (AUTO_SHARDS_MAX > 1): off is the baseline. */
  readonly autoShards: boolean;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly pairs: number;
  readonly pairsPerSecond: number;
  /** Requests answered in the window, by status, and the share not answered 2xx. */
  readonly requests: number;
  readonly statuses: Record<string, number>;
  readonly failedRate: number;
  /** The same over the whole run, warm-up included. */
  readonly allRequests: number;
  readonly allFailedRate: number;
  readonly pairP50Ms: number;
  readonly pairP99Ms: number;
  /** Holds granted and never settled once the commits drained (must be 0). */
  readonly unsettled: number;
  /** Escrow shards each budget reached by itself. */
  readonly shards: { readonly root: number; readonly workspace: number };
  readonly auditMismatches: number;
  /** Where the requests went: answers by operation and reason, their latencies, server counters. */
  readonly diagnosis?: unknown;
}

/** 100 reserves at once on a budget whose remaining binds at EDGE_HOLDS holds. */
export interface EdgeBurst {
  readonly shards: number;
  readonly emulated: boolean;
  readonly statuses: Record<string, number>;
  readonly ms: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface BusyTenantResult {
  readonly settings: readonly string[];
  readonly runs: readonly BusyRun[];
  readonly edges?: readonly EdgeBurst[] | undefined;
  readonly skipped?: string | undefined;
}

const EDGE_HOLDS = 7;
const EDGE_HOLD = 1_000;
const EDGE_BURST = 100;

/**
 * The attack harness's burst (docs/scaling.md § At the edges): a tenant budget of `shards`
 * funded with 7 holds and 431 to spare, 100 reserves of one hold at once; how they were answered
 * and how long they took. With growth off (`AUTO_SHARDS_MAX=1` on the emulated server would
 * change nothing here: 100 requests end before a growth lands).
 */
async function edgeBurst(
  b: Bench,
  target: HttpTarget,
  shards: number,
  emulated: boolean,
): Promise<EdgeBurst> {
  const t = await b.tenant(`edge-${shards}-${emulated ? 'e' : 'p'}`, []);
  const scope = `tenant:${t.tenant}`;
  const funded = EDGE_HOLDS * EDGE_HOLD + 431;
  await b.parts.admin.expect('create edge budget', 'POST', '/v1/admin/budgets', t.headers, {
    scope,
    unit: UNIT,
    allocated: { unit: UNIT, amount: funded },
    ...(shards > 1 && { shards }),
  });
  t.budgets.set(scope, funded);
  const statuses: Record<string, number> = {};
  const ms: number[] = [];
  const began = performance.now();
  await Promise.all(
    Array.from({ length: EDGE_BURST }, async (_, i) => {
      const sent = performance.now();
      const reply = await target.send('POST', '/v1/reservations', t.headers, {
        idempotency_key: `${t.tenant}-${i}`,
        subject: { tenant: t.tenant },
        action: { kind: 'llm.completion', name: 'x' },
        estimate: { unit: UNIT, amount: EDGE_HOLD },
        ttl_ms: TTL_MS,
      });
      ms.push(performance.now() - sent);
      const key = `${reply.status}${reply.status >= 400 ? ` ${String(reply.body.error)}` : ''}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
    }),
  );
  const took = performance.now() - began;
  await b.audit(`edge burst ${shards} shards${emulated ? ' (emulated)' : ''}`, [t]);
  const latency = summarize(ms);
  const burst: EdgeBurst = {
    shards,
    emulated,
    statuses,
    ms: Math.round(took),
    p50Ms: Math.round(latency.p50),
    p99Ms: Math.round(latency.p99),
  };
  say(
    `  edge burst ${String(shards).padStart(2)} shards ${emulated ? 'emulated' : 'plain   '}  ${statusText(statuses)}  in ${burst.ms} ms (p50 ${burst.p50Ms}, p99 ${burst.p99Ms})`,
  );
  return burst;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** The README's tenant: its key, a $1 root and workspace prod at $0.50 + $0.50, no shards. */
async function readmeTenant(b: Bench, label: string): Promise<BenchTenant> {
  const t = await b.tenant(label, []);
  const admin = b.parts.admin;
  const create = (scope: string, amount: number) =>
    admin.expect('create budget', 'POST', '/v1/admin/budgets', t.headers, {
      scope,
      unit: UNIT,
      allocated: { unit: UNIT, amount },
    });
  const root = `tenant:${t.tenant}`;
  const workspace = `${root}/workspace:prod`;
  await create(root, ROOT_ALLOCATED);
  await create(workspace, WORKSPACE_ALLOCATED);
  await admin.expect(
    'fund workspace',
    'POST',
    `/v1/admin/budgets/${encodeURIComponent(workspace)}/${UNIT}/fund`,
    t.headers,
    {
      operation: 'CREDIT',
      amount: { unit: UNIT, amount: WORKSPACE_FUNDING },
      idempotency_key: 'fund-1',
    },
  );
  t.budgets.set(root, ROOT_ALLOCATED);
  t.budgets.set(workspace, WORKSPACE_ALLOCATED + WORKSPACE_FUNDING);
  return t;
}

interface Tally {
  readonly statuses: Record<string, number>;
  readonly all: Record<string, number>;
  /** Over the whole run: answers by operation, status and busy reason ("reserve 429 CONCURRENCY"). */
  readonly answers: Record<string, number>;
  /** Over the whole run: how long answers took, by operation and status. */
  readonly answerMs: Record<string, number[]>;
  /** Over the whole run: the Retry-After (s) of busy answers, by operation and reason. */
  readonly retryAfterS: Record<string, number[]>;
  readonly pairMs: number[];
  granted: number;
  settled: number;
  unexpected: string[];
}

/** One SDK-like client: reserve (same-key retry on 5xx, back off on 429), work, commit. */
async function client(
  target: HttpTarget,
  t: BenchTenant,
  id: string,
  work: Distribution | undefined,
  window: { readonly from: number; readonly to: number },
  tally: Tally,
): Promise<void> {
  const counted = () => {
    const now = performance.now();
    return now >= window.from && now < window.to;
  };
  const send = async (what: string, path: string, body: unknown): Promise<Reply | undefined> => {
    let reply: Reply | undefined;
    const sent = performance.now();
    try {
      reply = await target.send('POST', path, t.headers, body);
    } catch (error) {
      if (tally.unexpected.length < 5) tally.unexpected.push(`${what}: ${String(error)}`);
    }
    const status = reply ? String(reply.status) : 'no answer';
    const reason = (reply?.body.details as { reason?: string } | undefined)?.reason;
    const answer = `${what} ${status}${reply?.status === 429 && reason ? ` ${reason}` : ''}`;
    tally.answers[answer] = (tally.answers[answer] ?? 0) + 1;
    if (reply?.status === 429 && reply.retryAfter !== undefined) {
      const told = tally.retryAfterS[answer] ?? [];
      tally.retryAfterS[answer] = told;
      told.push(reply.retryAfter);
    }
    const took = tally.answerMs[`${what} ${status}`] ?? [];
    tally.answerMs[`${what} ${status}`] = took;
    if (took.length < 50_000) took.push(performance.now() - sent);
    tally.all[status] = (tally.all[status] ?? 0) + 1;
    if (counted()) tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
    if (reply && reply.status >= 400 && ![409, 429, 503].includes(reply.status)) {
      if (tally.unexpected.length < 5)
        tally.unexpected.push(
          `${what}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`,
        );
    }
    return reply;
  };
  const waitFor = (reply: Reply | undefined) => (reply?.retryAfter ?? 1) * 1000;
  for (let i = 0; performance.now() < window.to; i++) {
    const began = performance.now();
    const key = `${id}-${i}`;
    const body = {
      idempotency_key: key,
      subject: { workspace: 'prod' },
      action: { kind: 'llm.completion', name: 'gpt-4o' },
      estimate: { unit: UNIT, amount: ESTIMATE },
      ttl_ms: TTL_MS,
    };
    let reserved = await send('reserve', '/v1/reservations', body);
    // The SDK's one immediate retry of an ambiguous reserve, with the same key.
    if (!reserved || reserved.status >= 500)
      reserved = await send('reserve', '/v1/reservations', body);
    if (reserved?.status !== 200) {
      // 429: wait as told, then a new reservation (a new key); 409 or worse: a second.
      await sleep(reserved?.status === 429 ? waitFor(reserved) : 1_000);
      continue;
    }
    tally.granted++;
    if (work) await sleep(work.sample(Math.random));
    const reservationId = String(reserved.body.reservation_id);
    for (let attempt = 0; ; attempt++) {
      const committed = await send('commit', `/v1/reservations/${reservationId}/commit`, {
        idempotency_key: `${key}-commit`,
        actual: { unit: UNIT, amount: ACTUAL },
      });
      if (committed?.status === 200) {
        tally.settled++;
        if (counted()) tally.pairMs.push(performance.now() - began);
        break;
      }
      if (committed && committed.status < 500 && committed.status !== 429) break;
      const backoff = Math.min(COMMIT_INITIAL_DELAY_MS * 2 ** attempt, COMMIT_MAX_DELAY_MS);
      await sleep(committed?.status === 429 ? Math.max(backoff, waitFor(committed)) : backoff);
    }
  }
}

async function shardsOf(b: Bench, t: BenchTenant, scope: string): Promise<number> {
  const found = await b.parts.admin.expect(
    'lookup budget',
    'GET',
    `/v1/admin/budgets/lookup?scope=${encodeURIComponent(scope)}&unit=${UNIT}`,
    t.headers,
  );
  return Number(found.shards ?? 1);
}

async function run(
  b: Bench,
  server: ServerProcess,
  load: BusyRun['load'],
  clients: number,
  autoShards: boolean,
  warmupSeconds: number,
  seconds: number,
): Promise<BusyRun> {
  const label = `busy ${load} ×${clients}${autoShards ? '' : ' no-growth'}`;
  const t = await readmeTenant(b, label.replace(/[^A-Za-z0-9-]+/g, '-'));
  // A connection per client, as a fleet of agents has (one pool of 256 would queue the rest in
  // the load generator, where no server can shed or order them).
  const target = new HttpTarget(server.runtimeUrl, clients);
  const before = await server.snapshot();
  const from = performance.now() + warmupSeconds * 1000;
  const window = { from, to: from + seconds * 1000 };
  const tally: Tally = {
    statuses: {},
    all: {},
    answers: {},
    answerMs: {},
    retryAfterS: {},
    pairMs: [],
    granted: 0,
    settled: 0,
    unexpected: [],
  };
  const prefix = `${b.parts.runId}-${load}-${clients}-${autoShards ? 'g' : 'n'}`;
  try {
    await Promise.all(
      Array.from({ length: clients }, (_, c) =>
        client(target, t, `${prefix}-${c}`, load === 'agents' ? WORK : undefined, window, tally),
      ),
    );
  } finally {
    target.close();
  }
  const audit = await b.audit(label, [t]);
  const root = `tenant:${t.tenant}`;
  const shards = {
    root: await shardsOf(b, t, root),
    workspace: await shardsOf(b, t, `${root}/workspace:prod`),
  };
  const count = (s: Record<string, number>) => Object.values(s).reduce((a, n) => a + n, 0);
  const failed = (s: Record<string, number>) =>
    Object.entries(s)
      .filter(([status]) => !status.startsWith('2'))
      .reduce((a, [, n]) => a + n, 0);
  const after = await server.snapshot();
  const diagnosis = {
    answers: tally.answers,
    answerMs: Object.fromEntries(
      Object.entries(tally.answerMs).map(([k, v]) => {
        const l = summarize(v);
        return [k, { p50: Math.round(l.p50), p99: Math.round(l.p99) }];
      }),
    ),
    retryAfterS: Object.fromEntries(
      Object.entries(tally.retryAfterS).map(([k, v]) => {
        const l = summarize(v);
        return [k, { mean: r1(v.reduce((a, x) => a + x, 0) / v.length), p50: l.p50, p99: l.p99 }];
      }),
    ),
    server: {
      conflictRetries: after.conflictRetries - before.conflictRetries,
      busyAnswers: (after.busyAnswers ?? 0) - (before.busyAnswers ?? 0),
      ...(after.admission !== undefined && { admission: after.admission as object }),
      ...(after.contention &&
        before.contention && {
          transactions: after.contention.transactions - before.contention.transactions,
          cancelledForConflict:
            after.contention.cancelledForConflict - before.contention.cancelledForConflict,
          readsCancelled:
            after.contention.readsCancelledForConflict -
            before.contention.readsCancelledForConflict,
          conflictsByItem: Object.entries(after.conflictsByItem ?? {})
            .map(([item, n]): [string, number] => [item, n - (before.conflictsByItem?.[item] ?? 0)])
            .filter(([, n]) => n > 0)
            .sort((x, y) => y[1] - x[1])
            .slice(0, 40)
            .map(([item, n]) => `${item.replace(/^.*?(tenant:)/, '$1')} ${n}`),
        }),
    },
  };
  const latency = summarize(tally.pairMs);
  const result: BusyRun = {
    load,
    clients,
    autoShards,
    warmupSeconds,
    seconds,
    pairs: tally.pairMs.length,
    pairsPerSecond: r1(tally.pairMs.length / seconds),
    requests: count(tally.statuses),
    statuses: tally.statuses,
    failedRate: r4(failed(tally.statuses) / Math.max(1, count(tally.statuses))),
    allRequests: count(tally.all),
    allFailedRate: r4(failed(tally.all) / Math.max(1, count(tally.all))),
    pairP50Ms: Math.round(latency.p50),
    pairP99Ms: Math.round(latency.p99),
    unsettled: tally.granted - tally.settled,
    shards,
    auditMismatches: audit.mismatches,
    diagnosis,
  };
  say(`    diagnosis ${JSON.stringify(diagnosis)}`);
  const outcomes = b.outcomesOf(label);
  for (const u of tally.unexpected) outcomes.fail(new Error(u));
  say(
    `  ${label.padEnd(34)} ${result.pairsPerSecond.toFixed(1).padStart(6)} pairs/s  ${result.requests} requests (${statusText(result.statuses)}), failed ${pct(result.failedRate)} (whole run ${pct(result.allFailedRate)})  pair p50 ${result.pairP50Ms} p99 ${result.pairP99Ms} ms  shards root ${shards.root} workspace ${shards.workspace}  unsettled ${result.unsettled}`,
  );
  return result;
}

const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 2 : 1)}%`;
const statusText = (s: Record<string, number>) =>
  Object.entries(s)
    .map(([k, n]) => `${k}×${n}`)
    .join(', ');

/**
 * BUSY_RUNS (a diagnosis aid; unset: every run): the runs to make, comma-separated among
 * `edges`, `agents`, `baseline` and `closed-loop:<clients>`.
 */
function runFilter(text: string | undefined): (name: string) => boolean {
  const names = new Set(
    (text ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  );
  return (name) => names.size === 0 || names.has(name);
}

/** Closed-loop concurrency, rising: goodput at 1,000 against the peak. */
const CLOSED_LOOP = [10, 50, 200, 1_000] as const;

export async function busyTenantPhase(
  b: Bench,
  startServer: ((env: Record<string, string>) => Promise<ServerProcess>) | undefined,
): Promise<BusyTenantResult> {
  const quick = b.opts.quick;
  const agentWarmup = quick ? 5 : 15;
  const agentSeconds = quick ? 10 : 45;
  const loopWarmup = quick ? 3 : 10;
  const loopSeconds = quick ? 5 : 20;
  const settings = [
    'service: `infra/local/main.ts` with EMULATE_CONTENTION=1 in a process of its own on the bench’s DynamoDB Local; budgets as the README creates them (tenant root $1, workspace prod $0.50 + $0.50, no `shards`); every reservation under workspace prod (both budgets held), estimate 1,000, commit 800',
    'clients as the SDK: a reserve answered 5xx is sent once more at once with the same key; a 429 makes the client wait Retry-After and reserve again with a new key; a commit is retried with the same key until it lands (500 ms × 2^n up to 30 s, at least Retry-After on 429)',
    `agents: 200, each doing the work a reservation guards between reserve and commit (${WORK.text}); ${agentWarmup} s warm-up, ${agentSeconds} s measured, then the commits drain`,
    `closed loop: ${CLOSED_LOOP.join(', ')} clients with no work; ${loopWarmup} s warm-up, ${loopSeconds} s measured, each on a fresh README tenant`,
    'failed: a request answered other than 2xx (429, 503, 409); the baseline run keeps budgets from growing (AUTO_SHARDS_MAX=1): the unsharded budget behind the same 429s',
  ];
  say(`  ${settings.join('\n  ')}`);
  if (!startServer) {
    return { settings, runs: [], skipped: 'the bench did not start DynamoDB Local' };
  }
  const runs: BusyRun[] = [];
  const edges: EdgeBurst[] = [];
  const only = runFilter(process.env.BUSY_RUNS);
  if (only('edges'))
    for (const shards of [1, 4, 16, 64]) edges.push(await edgeBurst(b, b.runtime, shards, false));
  for (const autoShards of [true, false]) {
    if (!autoShards && !only('baseline')) continue;
    const server = await startServer(autoShards ? {} : { AUTO_SHARDS_MAX: '1' });
    try {
      await server.sizing(false);
      if (autoShards && only('edges')) {
        const target = new HttpTarget(server.runtimeUrl);
        for (const shards of [1, 4, 16, 64]) edges.push(await edgeBurst(b, target, shards, true));
        target.close();
      }
      if (!autoShards || only('agents'))
        runs.push(await run(b, server, 'agents', 200, autoShards, agentWarmup, agentSeconds));
      if (!autoShards) continue;
      for (const clients of CLOSED_LOOP)
        if (only(`closed-loop:${clients}`))
          runs.push(
            await run(b, server, 'closed-loop', clients, autoShards, loopWarmup, loopSeconds),
          );
    } finally {
      await server.stop();
    }
  }
  return { settings, runs, edges };
}

// ---- BENCHMARKS.md ---------------------------------------------------------------------------

/** The generated part of BENCHMARKS.md § A busy tenant. */
export function busyTenantMarkdown(
  r: BusyTenantResult,
  startedAt: string,
  command: string,
  /** The machine's load averages (1, 5, 15 min) at the run's start and end: others' work shows. */
  load: readonly [readonly number[], readonly number[]],
) {
  const out = [
    `Run of ${startedAt.slice(0, 19).replace('T', ' ')} UTC: \`${command}\`; load average (1 / 5 / 15 min) ${load[0].join(' / ')} at the start, ${load[1].join(' / ')} at the end`,
    '',
  ];
  for (const s of r.settings) out.push(`- ${s}`);
  out.push('');
  if (r.runs.length === 0) {
    out.push(`Skipped: ${r.skipped ?? 'not run'}.`);
    return out.join('\n');
  }
  const peak = Math.max(
    ...r.runs.filter((x) => x.load === 'closed-loop').map((x) => x.pairsPerSecond),
  );
  if (r.edges && r.edges.length > 0) {
    out.push(
      'At the edge: 100 reserves of 1,000 at once on a tenant budget funded with 7,431 (7 holds and 431 to spare), DynamoDB Local without and with the emulator:',
      '',
      '| Shards | Emulator | Answers | All answered in (ms) | Reserve p50 / p99 ms |',
      '|---|---|---|---|---|',
      ...r.edges.map(
        (e) =>
          `| ${e.shards} | ${e.emulated ? 'on' : 'off'} | ${statusText(e.statuses)} | ${e.ms} | ${e.p50Ms} / ${e.p99Ms} |`,
      ),
      '',
    );
  }
  out.push(
    '| Load | Clients | Budgets grow | Pairs/s | Requests (statuses) | Failed (whole run) | Pair p50 / p99 ms | Shards reached (root / workspace) | Unsettled holds | Ledger audit |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.runs
      .map((x) =>
        [
          x.load,
          x.clients.toLocaleString('en-US'),
          x.autoShards ? 'yes' : 'no (AUTO_SHARDS_MAX=1)',
          `${x.pairsPerSecond.toFixed(1)}${x.load === 'closed-loop' && peak > 0 ? ` (${Math.round((x.pairsPerSecond / peak) * 100)} % of peak)` : ''}`,
          `${x.requests} (${statusText(x.statuses)})`,
          `${pct(x.failedRate)} (${pct(x.allFailedRate)})`,
          `${x.pairP50Ms} / ${x.pairP99Ms}`,
          `${x.shards.root} / ${x.shards.workspace}`,
          String(x.unsettled),
          x.auditMismatches === 0 ? 'OK' : `**${x.auditMismatches} mismatches**`,
        ].join(' | '),
      )
      .map((row) => `| ${row} |`),
  );
  return out.join('\n');
}

const BEGIN =
  '<!-- busy-tenant:begin (generated by npm run bench -- --emulate-contention; edits here are overwritten) -->';
const END = '<!-- busy-tenant:end -->';

/** Replaces the busy-tenant block of BENCHMARKS.md (appended when there is none yet). */
export const busyTenantBlock = (text: string, block: string): string =>
  replaceBlock(text, BEGIN, END, block);
