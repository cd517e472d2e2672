/**
 * The `contention` phase (`npm run bench -- --emulate-contention`): what one tenant budget
 * sustains once DynamoDB's transaction conflicts and per-key throttling are in play, which
 * DynamoDB Local never shows (docs/contention-emulator.md). Two views of the same model:
 * (a) the simulator, in virtual time, at up to 1,000 clients, for the service's retry policy of
 * today and the one the earlier model figures assumed; (b) the real service in a process of
 * its own with the emulator installed (EMULATE_CONTENTION), at 10 and 50 clients, its ledgers
 * audited after each run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import {
  type ContentionCounters,
  type ContentionSettings,
  DEFAULT_READ_LATENCY,
  DEFAULT_SETTINGS,
  DEFAULT_TRANSACTION_LATENCY,
  type Distribution,
  lognormal,
  simulate,
} from '../../infra/local/contention.js';
import {
  LEGACY_POLICIES,
  type PairBudgets,
  type PairPolicies,
  reserveCommitPair,
  type ScopeCount,
  SERVICE_POLICIES,
  tenantPairs,
} from '../../infra/local/contention-shapes.js';
import { type Bench, say } from './context.js';
import { HttpTarget, UnexpectedReply } from './http.js';
import { ACTUAL, reserveBody } from './latency.js';
import { ALLOCATED, type BenchTenant, UNIT } from './provision.js';
import type { ServerProcess } from './server.js';
import { summarize } from './stats.js';

export type PolicyName = 'today' | 'polite' | 'agents' | 'before';

const POLICIES: Record<
  PolicyName,
  {
    readonly policies: PairPolicies;
    readonly text: string;
    readonly retryAfterMs?: number | undefined;
    readonly workTime?: Distribution | undefined;
  }
> = {
  today: {
    policies: SERVICE_POLICIES,
    text: 'today’s `transact` (functions/store/transact.ts): a reserve retries 6 times (backoff ≤ 100 ms; on a sharded budget each retry on another shard), a commit 12 times (≤ 200 ms), throttles too; then 429 (503 before issue 24)',
  },
  polite: {
    policies: SERVICE_POLICIES,
    retryAfterMs: 1_000,
    text: 'today’s `transact`, with clients that honour the busy answer’s Retry-After (1 s, jittered ±50 %): a failed commit is retried until it lands, a refused reserve waits before the next pair',
  },
  agents: {
    policies: SERVICE_POLICIES,
    retryAfterMs: 1_000,
    workTime: lognormal(1_000, 8_000),
    text: 'as `polite`, and each client does the work a reservation guards between its reserve and its commit (an LLM or tool call: log-normal, p50 1 s, p99 8 s), as agents do',
  },
  before: {
    policies: LEGACY_POLICIES,
    text: 'before a472f41, as the earlier model assumed: every write retries a conflict 6 times (backoff ≤ 400 ms), a throttle not at all; then 500',
  },
};

export const SIMULATED_CLIENTS = [1, 2, 4, 10, 50, 200, 1_000] as const;
/**
 * What is simulated: today's policy on 1 and 3 scopes, and on a budget in 16 and 64 escrow shards
 * (docs/scaling.md), with clients that go again at once, that honour Retry-After, and that do
 * an agent's work between reserve and commit; the earlier policy on 1 and 3 scopes, to
 * calibrate against the model.
 */
const SIMULATED: readonly { readonly policy: PolicyName; readonly budgets: PairBudgets }[] = [
  { policy: 'today', budgets: { scopes: 1 } },
  { policy: 'today', budgets: { scopes: 3 } },
  { policy: 'today', budgets: { scopes: 1, shards: 16 } },
  { policy: 'today', budgets: { scopes: 1, shards: 64 } },
  { policy: 'polite', budgets: { scopes: 1 } },
  { policy: 'polite', budgets: { scopes: 1, shards: 16 } },
  { policy: 'agents', budgets: { scopes: 1 } },
  { policy: 'agents', budgets: { scopes: 1, shards: 16 } },
  { policy: 'before', budgets: { scopes: 1 } },
  { policy: 'before', budgets: { scopes: 3 } },
];
/** The service runs: one tenant budget, unsharded at 10 and 50 clients, then in 16 shards. */
const SERVICE_RUNS: readonly { readonly clients: number; readonly shards: number }[] = [
  { clients: 10, shards: 1 },
  { clients: 50, shards: 1 },
  { clients: 50, shards: 16 },
];
const SEED = 1;

export interface SimulatedRow {
  readonly policy: PolicyName;
  readonly scopes: ScopeCount;
  /** Escrow shards of each budget (1: unsharded). */
  readonly shards: number;
  readonly clients: number;
  readonly seconds: number;
  /** The pair's shape: items written by the reserve + the commit, and their write units. */
  readonly items: string;
  readonly writeUnits: number;
  readonly pairsPerSecond: number;
  /** Transactions sent, and the shares cancelled for a conflict and for throttling. */
  readonly attemptsPerSecond: number;
  readonly conflictRate: number;
  readonly throttleRate: number;
  /** Requests that ran out of retries, of all requests; and of reserves, of commits. */
  readonly failureRate: number;
  readonly reserveFailureRate: number;
  readonly commitFailureRate: number;
  readonly pairP50Ms: number;
  readonly pairP99Ms: number;
}

export interface ServiceRow {
  readonly clients: number;
  /** Escrow shards of the tenant budget (1: unsharded). */
  readonly shards: number;
  readonly seconds: number;
  /** The same load on the bench's own server, without the emulator. */
  readonly baselinePairsPerSecond: number;
  readonly baselinePairP50Ms: number;
  readonly pairs: number;
  readonly pairsPerSecond: number;
  readonly requests: number;
  readonly statuses: Record<string, number>;
  /** Requests answered busy (429, or 503 before issue 24) or 5xx, of all. */
  readonly fiveXxRate: number;
  /** The emulator's counters in the server over the run (transactions, cancellations…). */
  readonly emulator?: ContentionCounters | undefined;
  /** `transact`'s own conflict retries over the run. */
  readonly conflictRetries?: number | undefined;
  readonly pairP50Ms: number;
  readonly pairP99Ms: number;
  readonly auditMismatches: number;
}

export interface ContentionResult {
  readonly settings: readonly string[];
  readonly policies: Record<PolicyName, string>;
  readonly simulated: readonly SimulatedRow[];
  readonly service: readonly ServiceRow[];
  /** Why the real-service runs were skipped, when they were. */
  readonly serviceSkipped?: string | undefined;
}

const ratio = (n: number, d: number) => (d > 0 ? n / d : 0);
const r1 = (x: number) => Math.round(x * 10) / 10;
const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** (a) the simulator: every policy × shape × concurrency, in virtual time. */
function simulatedRows(quick: boolean, settings: ContentionSettings): SimulatedRow[] {
  const rows: SimulatedRow[] = [];
  for (const { policy, budgets } of SIMULATED) {
    for (const clients of SIMULATED_CLIENTS) {
      // 1,000 clients cost the most CPU per virtual second and complete the fewest pairs.
      const seconds = quick ? 10 : clients >= 1_000 ? 30 : 60;
      const r = simulate({
        clients,
        warmupMs: 5_000,
        durationMs: seconds * 1000,
        pair: tenantPairs('acme', budgets, POLICIES[policy].policies),
        settings,
        seed: SEED,
        retryAfterMs: POLICIES[policy].retryAfterMs,
        workTime: POLICIES[policy].workTime,
      });
      const shape = reserveCommitPair('acme', budgets, 'cost', POLICIES[policy].policies);
      const of = (op: string) =>
        ratio(r.byOperation[op]?.failed ?? 0, r.byOperation[op]?.requests ?? 0);
      const row: SimulatedRow = {
        policy,
        scopes: budgets.scopes,
        shards: budgets.shards ?? 1,
        clients,
        seconds,
        items: shape.map((op) => op.writes.length).join(' + '),
        writeUnits: shape
          .flatMap((op) => op.writes)
          .reduce((a, w) => a + w.units + w.indexWrites.reduce((x, i) => x + i.units, 0), 0),
        pairsPerSecond: r1(r.pairsPerSecond),
        attemptsPerSecond: r1(r.attempts / seconds),
        conflictRate: r4(r.conflictRate),
        throttleRate: r4(r.throttleRate),
        failureRate: r4(r.failureRate),
        reserveFailureRate: r4(of('reserve')),
        commitFailureRate: r4(of('commit')),
        pairP50Ms: Math.round(r.pairLatencyMs.p50),
        pairP99Ms: Math.round(r.pairLatencyMs.p99),
      };
      rows.push(row);
      say(
        `  sim ${policy.padEnd(6)} ${budgetsText(row).padEnd(19)} ×${String(clients).padEnd(5)} ${row.pairsPerSecond.toFixed(1).padStart(6)} pairs/s  conflicts ${pct(row.conflictRate).padStart(4)} of ${row.attemptsPerSecond.toFixed(0).padStart(5)} tx/s  throttled ${pct(row.throttleRate)}  failed ${pct(row.failureRate).padStart(4)} (reserve ${pct(row.reserveFailureRate)}, commit ${pct(row.commitFailureRate)})  pair p50 ${row.pairP50Ms} p99 ${row.pairP99Ms} ms`,
      );
    }
  }
  return rows;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;
const budgetsText = (r: { readonly scopes: number; readonly shards: number }) =>
  `${r.scopes} scope${r.scopes > 1 ? 's' : ''}${r.shards > 1 ? `, ${r.shards} shards` : ''}`;

/**
 * Closed-loop reserve → commit pairs; a refused request (any non-2xx) ends its pair. Through
 * the emulated server 429 (busy) and 503 are what contention produces and are counted, not
 * failures; anything else unexpected (other 4xx, any of them without the emulator, a broken
 * socket) fails the run.
 */
async function pairLoad(
  b: Bench,
  target: HttpTarget,
  t: BenchTenant,
  clients: number,
  warmupMs: number,
  durationMs: number,
  label: string,
) {
  const busyExpected = target !== b.runtime;
  const keyPrefix = label.replace(/[^A-Za-z0-9-]+/g, '-');
  const outcomes = b.outcomesOf(label);
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  const windowStart = performance.now() + warmupMs;
  const windowEnd = windowStart + durationMs;
  const counted = (at: number) => at >= windowStart && at < windowEnd;
  const answer = async (what: string, path: string, body: unknown) => {
    const reply = await target.send('POST', path, t.headers, body);
    if (counted(performance.now()))
      statuses[String(reply.status)] = (statuses[String(reply.status)] ?? 0) + 1;
    const busy = reply.status === 429 || reply.status >= 500;
    if (reply.status >= 400 && !(busy && busyExpected))
      outcomes.fail(new UnexpectedReply(reply.status, what, reply.body));
    return reply;
  };
  const client = async (c: number) => {
    for (let i = 0; performance.now() < windowEnd; i++) {
      const began = performance.now();
      const key = `${keyPrefix}-${c}-${i}`;
      try {
        const reserved = await answer(
          'reserve',
          '/v1/reservations',
          reserveBody(key, { tenant: t.tenant }),
        );
        if (reserved.status !== 200) continue;
        const committed = await answer(
          'commit',
          `/v1/reservations/${String(reserved.body.reservation_id)}/commit`,
          { idempotency_key: `${key}-c`, actual: { unit: UNIT, amount: ACTUAL } },
        );
        if (committed.status !== 200) continue;
        outcomes.ok();
        if (counted(performance.now())) latencies.push(performance.now() - began);
      } catch (error) {
        outcomes.fail(error);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  return { statuses, latencies };
}

/** (b) the real service, in a server process of its own with the emulator installed. */
async function serviceRows(
  b: Bench,
  startEmulatedServer: () => Promise<ServerProcess>,
): Promise<ServiceRow[]> {
  const rows: ServiceRow[] = [];
  const server = await startEmulatedServer();
  const emulated = new HttpTarget(server.runtimeUrl);
  const seconds = b.opts.quick ? 2 : 5;
  const warmupMs = b.opts.quick ? 500 : 1_000;
  try {
    // Under load the probes only count calls: sizing them would be bench work in the servers.
    await server.sizing(false);
    await b.sizing(false);
    // A fresh JVM and server compile their hot paths over the first thousands of requests:
    // without this the first run measured would pay for it (and look like contention).
    const warm = await b.tenant('contention-warm-up', ['']);
    for (const target of [b.runtime, emulated])
      await pairLoad(b, target, warm, 10, 0, b.opts.quick ? 1_000 : 4_000, 'contention warm-up');
    await b.audit('contention warm-up', [warm]);
    for (const { clients, shards } of SERVICE_RUNS) {
      const name = `${clients}${shards > 1 ? `-s${shards}` : ''}`;
      // The same load on the bench's own server, without the emulator: what DynamoDB Local and
      // this machine allow at all, so the emulated figures can be read against it.
      const plain = await tenantBudget(b, `contention-plain-${name}`, shards);
      const baseline = await pairLoad(
        b,
        b.runtime,
        plain,
        clients,
        warmupMs,
        seconds * 1000,
        `contention baseline ×${name}`,
      );
      const label = `contention service ×${name}`;
      const tenant = await tenantBudget(b, `contention-svc-${name}`, shards);
      const before = await server.snapshot();
      const { statuses, latencies } = await pairLoad(
        b,
        emulated,
        tenant,
        clients,
        warmupMs,
        seconds * 1000,
        label,
      );
      const after = await server.snapshot();
      const audit = await b.audit(label, [plain, tenant]);
      const requests = Object.values(statuses).reduce((a, n) => a + n, 0);
      const fiveXx = Object.entries(statuses)
        .filter(([s]) => s.startsWith('5') || s === '429')
        .reduce((a, [, n]) => a + n, 0);
      const emulator =
        before.contention && after.contention
          ? (Object.fromEntries(
              Object.entries(after.contention).map(([k, v]) => [
                k,
                v - (before.contention?.[k as keyof ContentionCounters] ?? 0),
              ]),
            ) as unknown as ContentionCounters)
          : undefined;
      const latency = summarize(latencies);
      const base = summarize(baseline.latencies);
      const row: ServiceRow = {
        clients,
        shards,
        seconds,
        baselinePairsPerSecond: r1(baseline.latencies.length / seconds),
        baselinePairP50Ms: Math.round(base.p50),
        pairs: latencies.length,
        pairsPerSecond: r1(latencies.length / seconds),
        requests,
        statuses,
        fiveXxRate: r4(ratio(fiveXx, requests)),
        emulator,
        conflictRetries: after.conflictRetries - before.conflictRetries,
        pairP50Ms: Math.round(latency.p50),
        pairP99Ms: Math.round(latency.p99),
        auditMismatches: audit.mismatches,
      };
      rows.push(row);
      const counters = emulator
        ? `${emulator.transactions} tx, ${emulator.cancelledForConflict} cancelled for conflict, ${emulator.cancelledForThrottling} throttled, ${emulator.plainWriteConflicts} plain-write conflicts`
        : 'n/a';
      say(
        `  service ×${String(clients).padEnd(3)} ${budgetsText({ scopes: 1, shards }).padEnd(17)} ${row.pairsPerSecond.toFixed(1).padStart(6)} pairs/s (without the emulator ${row.baselinePairsPerSecond.toFixed(1)}, p50 ${row.baselinePairP50Ms} ms)  ${row.requests} requests (${statusText(statuses)}), busy ${pct(row.fiveXxRate)}  emulator: ${counters}; transact retries ${row.conflictRetries}  pair p50 ${row.pairP50Ms} p99 ${row.pairP99Ms} ms`,
      );
    }
  } finally {
    emulated.close();
    await server.stop();
    await b.sizing(true);
  }
  return rows;
}

/**
 * A tenant with one budget at its root, split into `shards` escrow shards (the admin API's
 * `shards`), created as `provisionTenant` creates budgets, so the audit knows its allocation.
 */
async function tenantBudget(b: Bench, label: string, shards: number): Promise<BenchTenant> {
  if (shards === 1) return b.tenant(label, ['']);
  const t = await b.tenant(label, []);
  const scope = `tenant:${t.tenant}`;
  await b.parts.admin.expect('create sharded budget', 'POST', '/v1/admin/budgets', t.headers, {
    scope,
    unit: UNIT,
    allocated: { unit: UNIT, amount: ALLOCATED },
    shards,
  });
  t.budgets.set(scope, ALLOCATED);
  return t;
}

const statusText = (statuses: Record<string, number>) =>
  Object.entries(statuses)
    .map(([s, n]) => `${s}×${n}`)
    .join(', ');

/**
 * `emulation`: the emulator's settings (EMULATE_CONTENTION), for the simulator and the server
 * alike; `startEmulatedServer`, when the bench can start a server on its DynamoDB Local.
 */
export async function contentionPhase(
  b: Bench,
  emulation: Partial<ContentionSettings>,
  startEmulatedServer: (() => Promise<ServerProcess>) | undefined,
): Promise<ContentionResult> {
  const s: ContentionSettings = { ...DEFAULT_SETTINGS, ...emulation };
  const settings = [
    `holds: ${s.hold.text} from the moment a transaction is sent (an answer never comes before its holds end); a cancelled transaction's prepared items: ${s.cancelHold.text}`,
    `throttling: ${s.writeUnitsPerSecond} WRU/s per item and per index partition key value, ${s.burstSeconds} s of unused capacity banked`,
    `simulator: transaction round trip ${DEFAULT_TRANSACTION_LATENCY.text}, each read ${DEFAULT_READ_LATENCY.text}; a reserve reads once, a commit twice; seed ${SEED}, 5 s warm-up, then 60 s (30 s at 1,000 clients; 10 s with --quick) of virtual time`,
    'service: `infra/local/main.ts` with EMULATE_CONTENTION in a process of its own on the bench’s DynamoDB Local; closed-loop reserve→commit on one tenant budget (1 scope; unsharded, then in 16 escrow shards), a refused request ends its pair',
  ];
  say(`  ${settings.join('\n  ')}`);
  const simulated = simulatedRows(b.opts.quick, s);
  const service = startEmulatedServer ? await serviceRows(b, startEmulatedServer) : [];
  return {
    settings,
    policies: {
      today: POLICIES.today.text,
      polite: POLICIES.polite.text,
      agents: POLICIES.agents.text,
      before: POLICIES.before.text,
    },
    simulated,
    service,
    serviceSkipped: startEmulatedServer
      ? undefined
      : 'the bench did not start DynamoDB Local and no --dynamodb-endpoint was given',
  };
}

// ---- BENCHMARKS.md ---------------------------------------------------------------------------

const table = (head: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

const pct1 = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;

/** The generated part of BENCHMARKS.md § Contention. */
export function contentionMarkdown(
  c: ContentionResult,
  startedAt: string,
  command: string,
): string {
  const out: string[] = [
    `Run of ${startedAt.slice(0, 19).replace('T', ' ')} UTC: \`${command}\``,
    '',
  ];
  for (const s of c.settings) out.push(`- ${s}`);
  for (const [name, text] of Object.entries(c.policies)) out.push(`- policy \`${name}\`: ${text}`);
  out.push('', '(a) Simulator, one tenant budget (virtual time):', '');
  out.push(
    table(
      [
        'Policy',
        'Budgets (items, WRU per pair)',
        'Clients',
        'Pairs/s',
        'Tx sent/s',
        'Conflict rate',
        'Throttle rate',
        'Failed requests (reserve / commit)',
        'Pair p50 / p99 ms',
      ],
      c.simulated.map((r) => [
        r.policy,
        `${budgetsText(r)} (${r.items}, ${r.writeUnits})`,
        r.clients.toLocaleString('en-US'),
        r.pairsPerSecond.toFixed(1),
        r.attemptsPerSecond.toLocaleString('en-US', { maximumFractionDigits: 0 }),
        pct1(r.conflictRate),
        pct1(r.throttleRate),
        `${pct1(r.failureRate)} (${pct1(r.reserveFailureRate)} / ${pct1(r.commitFailureRate)})`,
        `${r.pairP50Ms} / ${r.pairP99Ms}`,
      ]),
    ),
  );
  out.push('', '(b) The service under the emulator (real HTTP, DynamoDB Local):', '');
  if (c.service.length === 0) out.push(`Skipped: ${c.serviceSkipped ?? 'not run'}.`);
  else
    out.push(
      table(
        [
          'Clients',
          'Tenant budget',
          'Pairs/s (without the emulator)',
          'Requests (statuses)',
          'Busy rate (429, 5xx)',
          'Transactions / cancelled for conflict / throttled (emulator)',
          'transact retries',
          'Pair p50 / p99 ms (p50 without)',
          'Ledger audit',
        ],
        c.service.map((r) => [
          String(r.clients),
          r.shards > 1 ? `${r.shards} shards` : 'unsharded',
          `${r.pairsPerSecond.toFixed(1)} (${r.baselinePairsPerSecond.toFixed(1)})`,
          `${r.requests} (${statusText(r.statuses)})`,
          pct1(r.fiveXxRate),
          r.emulator
            ? `${r.emulator.transactions} / ${r.emulator.cancelledForConflict} / ${r.emulator.cancelledForThrottling}`
            : 'n/a',
          String(r.conflictRetries ?? 'n/a'),
          `${r.pairP50Ms} / ${r.pairP99Ms} (${r.baselinePairP50Ms})`,
          r.auditMismatches === 0 ? 'OK' : `**${r.auditMismatches} mismatches**`,
        ]),
      ),
    );
  return out.join('\n');
}

const BEGIN =
  '<!-- contention:begin (generated by npm run bench -- --emulate-contention; edits here are overwritten) -->';
const END = '<!-- contention:end -->';

/** Replaces the contention block of BENCHMARKS.md (appended when there is none yet). */
export function updateContentionBlock(path: string, block: string): void {
  const generated = `${BEGIN}\n\n${block}\n\n${END}`;
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n';
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  writeFileSync(
    path,
    from >= 0 && to > from
      ? `${text.slice(0, from)}${generated}${text.slice(to + END.length)}`
      : `${text.trimEnd()}\n\n${generated}\n`,
  );
}
