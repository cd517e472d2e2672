/**
 * `npm run bench`: the service over real HTTP against DynamoDB Local, next to the raw engine
 * (the same transactions sent directly), with DynamoDB requests counted, ledgers audited after
 * every phase, and the results written to bench/results/ and BENCHMARKS.md. Timing is never
 * asserted in `npm test`; this command is where it is measured. See BENCHMARKS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname } from 'node:path';
import { ApiAuditor, TableAuditor } from './audit.js';
import { Bench, say } from './context.js';
import { HttpTarget } from './http.js';
import { commandLine, type Phase, parseOptions } from './options.js';
import type { Memory, Results } from './report.js';
import { ServerProcess } from './server.js';
import { findJavaPid, machineInfo, processMemory } from './system.js';
import { PRICES } from './tally.js';

const argv = process.argv.slice(2);
const opts = parseOptions(argv);
if (opts.render) {
  const { markdown, updateBenchmarksMd } = await import('./report.js');
  const results = JSON.parse(readFileSync(opts.render, 'utf8')) as Results;
  if (results.options.phases !== undefined && onlyContention(results.options.phases as string[]))
    say('BENCHMARKS.md: a contention-only run leaves the main generated section alone');
  else updateBenchmarksMd('BENCHMARKS.md', markdown(results));
  await writeEmulatedBlocks(results);
  say(`BENCHMARKS.md: generated section rewritten from ${opts.render}`);
  process.exit(0);
}
/** A run of the emulated phases alone: it has no figures for the main generated section. */
function onlyContention(phases: Iterable<string>): boolean {
  const list = [...phases];
  return (
    list.length > 0 && list.every((p) => ['contention', 'busy-tenant', 'isolation'].includes(p))
  );
}

/** The blocks of BENCHMARKS.md the emulated phases write, each only when it ran. */
async function writeEmulatedBlocks(results: Results): Promise<void> {
  const load = [results.machine.loadAverageAtStart, results.machine.loadAverageAtEnd] as const;
  const rewrite = (update: (text: string) => string) =>
    writeFileSync('BENCHMARKS.md', update(readFileSync('BENCHMARKS.md', 'utf8')));
  if (results.isolation) {
    const { isolationBlock, isolationMarkdown } = await import('./isolation.js');
    const block = isolationMarkdown(results.isolation, results.startedAt, results.command, load);
    rewrite((text) => isolationBlock(text, block));
  }
  if (results.contention) {
    const { contentionMarkdown, updateContentionBlock } = await import('./contention.js');
    updateContentionBlock(
      'BENCHMARKS.md',
      contentionMarkdown(results.contention, results.startedAt, results.command),
    );
  }
  if (results.busyTenant) {
    const { busyTenantBlock, busyTenantMarkdown } = await import('./busy-tenant.js');
    const block = busyTenantMarkdown(results.busyTenant, results.startedAt, results.command, load);
    rewrite((text) => busyTenantBlock(text, block));
  }
}
const command = commandLine(argv);
const started = new Date();
const startedMs = performance.now();
const machine = machineInfo();
const runId = randomBytes(3).toString('hex');
const mib = (bytes: number | undefined) =>
  bytes === undefined ? undefined : Math.round(bytes / 2 ** 20);

say(`${command}`);
say(
  `machine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.java}, load ${machine.loadAverageAtStart.join(' / ')}`,
);
say(
  `options: samples ${opts.samples} (+${opts.warmupSamples} warm-up), ${opts.durationMs / 1000} s per load run after ${opts.warmupMs / 1000} s warm-up, clients ${opts.clients.join(',')}, listing 100 vs ${opts.listSize}, phases ${[...opts.phases].join(',')}`,
);

say(
  `prices: ${PRICES.mode} ${PRICES.region}: $${PRICES.usdPerMillionWriteUnits} per million WRU, $${PRICES.usdPerMillionReadUnits} per million RRU (${PRICES.note})`,
);

// Function modules read their configuration once, at import: settle it first.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.ESTIMATE_ACCURACY = 'false';
process.env.TABLE_NAME = opts.table;

const setup: string[] = [];
let stopDynamo: (() => Promise<void>) | undefined;
let server: ServerProcess | undefined;
const closers: (() => void)[] = [];

async function cleanUp(): Promise<void> {
  for (const close of closers) close();
  await server?.stop();
  await stopDynamo?.();
}

process.once('SIGINT', () => {
  void cleanUp().finally(() => process.exit(130));
});
// However the bench ends, it leaves no server or JVM of its own behind.
let javaToKill: number | undefined;
process.on('exit', () => {
  server?.killNow();
  if (javaToKill !== undefined && stopDynamo) {
    try {
      process.kill(javaToKill, 'SIGKILL');
    } catch {
      // Already stopped.
    }
  }
});

async function main(): Promise<number> {
  const adminKey = opts.adminKey ?? `bench-${randomBytes(12).toString('hex')}`;
  let endpoint = opts.dynamodbEndpoint;
  let runtimeUrl = opts.runtimeUrl;
  let adminUrl = opts.adminUrl;
  const serverEnv = (dynamodbEndpoint: string) => ({
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
    TABLE_NAME: opts.table,
    ADMIN_API_KEY: adminKey,
    // Silent like the logs: EMF documents on stdout are what Lambda pays for, not the bench
    // (warnings kept when BENCH_SERVER_LOG asks for the server's output).
    LOG_LEVEL: process.env.BENCH_SERVER_LOG ? 'warn' : 'silent',
    POWERTOOLS_METRICS_DISABLED: 'true',
    // The sweeper is a Lambda of its own in AWS; here it would add queries to the counts.
    EXPIRY_SWEEP_INTERVAL_MS: '3600000',
    // So is the estimate accuracy consumer (and no stream: DynamoDB Local keeps its records).
    ESTIMATE_ACCURACY: 'false',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // Only the contention phase's own server emulates contention, never this one.
    EMULATE_CONTENTION: '',
  });
  if (!runtimeUrl) {
    const { ensureTable, localClient, startDynamoDbLocal } = await import(
      '../../infra/local/dynamodb.js'
    );
    const dynamo = await startDynamoDbLocal({});
    stopDynamo = dynamo.stop;
    endpoint = dynamo.endpoint;
    const client = localClient(endpoint);
    await ensureTable(client, opts.table);
    client.destroy();
    server = await ServerProcess.start(serverEnv(endpoint));
    runtimeUrl = server.runtimeUrl;
    adminUrl = server.adminUrl;
    setup.push(
      `Service: \`infra/local/main.ts\` (what \`npm start\` runs) in a child Node process of its own, with \`test/bench/probe.ts\` preloaded to count its DynamoDB requests; the sweeper interval set to 1 h (in AWS it is a Lambda of its own). Peak RSS is that process's VmHWM; the Java process and the load generator are apart.`,
      `DynamoDB Local in memory (table \`${opts.table}\`), started by the bench; the load generator and the raw engine run in the bench process. All three share the machine's ${machine.cpus} cores.`,
    );
  } else {
    setup.push(
      `Service: a running server at ${runtimeUrl} / ${adminUrl}. Its DynamoDB requests cannot be counted from outside: per-operation counts and costs are n/a for the service${endpoint ? '' : ', and without --dynamodb-endpoint the raw engine is skipped and the audit reads through the API'}.`,
    );
  }
  if (endpoint) process.env.DYNAMODB_ENDPOINT = endpoint;
  else delete process.env.DYNAMODB_ENDPOINT;

  const raw = endpoint ? await import('./raw.js') : undefined;
  const runtime = new HttpTarget(runtimeUrl ?? '');
  const admin = new HttpTarget(adminUrl ?? '');
  closers.push(
    () => runtime.close(),
    () => admin.close(),
  );
  let db:
    | { doc: import('@aws-sdk/lib-dynamodb').DynamoDBDocumentClient; table: string }
    | undefined;
  if (endpoint) {
    const { DynamoDBDocumentClient } = await import('@aws-sdk/lib-dynamodb');
    const { localClient } = await import('../../infra/local/dynamodb.js');
    const client = localClient(endpoint);
    db = { doc: DynamoDBDocumentClient.from(client), table: opts.table };
    closers.push(() => client.destroy());
    const { dynamoClient } = await import('../../functions/store/client.js');
    closers.push(() => dynamoClient.destroy());
  }
  const javaPid = endpoint ? findJavaPid(new URL(endpoint).port) : undefined;
  javaToKill = stopDynamo ? javaPid : undefined;
  const serverPid = server?.pid ?? opts.serverPid;
  const bench = new Bench({
    opts,
    runtime,
    admin,
    adminKey,
    runId,
    server,
    serverPid,
    javaPid,
    raw,
    db,
    auditor: db ? new TableAuditor(db.doc, db.table) : new ApiAuditor(runtime),
  });
  if (raw) {
    setup.push(
      'Raw engine: the TransactWriteItems the service would send, built by `reserveTransaction` / `settleTransaction` and sent by the store’s own `transact` (same client settings and conflict retries) from the bench process, against ledgers of the same shape on the same DynamoDB Local, at the same concurrency.',
    );
  }
  if (endpoint && opts.phases.has('minimal')) {
    setup.push(
      `Minimal shape (phase \`minimal\`, test/bench/minimal.ts): its own table \`${opts.table}-minimal\` on the same DynamoDB Local, pk/sk only, no secondary index. Reserve = one TransactWriteItems of one conditional Update per scope + one Put of a small reservation item; commit = one TransactWriteItems of one Update per scope + one conditional Update of the reservation. No read before writing, no idempotency record. Sent from the bench process by a client of its own (the store's client settings and conflict retries), counted by the same tally.`,
      `Floor shape (phase \`minimal\`, issue 31; test/bench/ceiling.ts “2 indexes, 2 reads”): its own table \`${opts.table}-floor\`, two keys-only indexes (a tenant listing, the sparse due index). Reserve = one consistent BatchGetItem (record + ledgers) then one TransactWriteItems of the service’s conditional holds + the service-sized reservation item with both index keys; commit = one consistent BatchGetItem (reservation + ledgers) then one TransactWriteItems settling the reservation (its due entry removed, its replay stored) and updating each ledger. The three engines take turns, each first as often as the others.`,
    );
  }
  setup.push(
    'Warm-up before anything is measured: reserve→commit from 10 clients, through the service then the raw engine (10 s; 1 s with --quick). Single-client reserve and commit alternate one service request and one raw request, so drift hits both alike.',
    'Audit after every phase: every ledger of the tenants it touched, read from the table (ledger index, byStatus index, every status, BatchGetItem): reserved = Σ ACTIVE holds, spent = Σ commit and event charges, debt = 0, allocated as created, remaining = allocated − spent − reserved − debt.',
  );

  const peakAfter: Record<string, number> = {};
  const phaseSeconds: Record<string, number> = {
    startup: Math.round((performance.now() - startedMs) / 100) / 10,
  };
  const notePeak = (phase: string) => {
    const peak = serverPid ? mib(processMemory(serverPid)?.peak) : undefined;
    if (peak !== undefined) peakAfter[phase] = peak;
  };
  const runPhase = async <T>(phase: Phase, title: string, fn: () => Promise<T>) => {
    if (!opts.phases.has(phase)) return undefined;
    say(`\n== ${title}`);
    const from = performance.now();
    const value = await fn();
    phaseSeconds[phase] = Math.round((performance.now() - from) / 100) / 10;
    say(`  (${phaseSeconds[phase]} s)`);
    notePeak(phase);
    return value;
  };

  const { latencyPhase } = await import('./latency.js');
  const { throughputPhase, warmUp } = await import('./throughput.js');
  const { listingPhase } = await import('./listing.js');
  const { profilePhase } = await import('./profile.js');
  const { expiryPhase } = await import('./expiry.js');
  const report = await import('./report.js');

  if (opts.phases.has('latency') || opts.phases.has('throughput') || opts.phases.has('minimal')) {
    const seconds = opts.quick ? 1 : 10;
    say(`\n== warm-up: ${seconds} s of reserve→commit from 10 clients, service then raw engine`);
    const from = performance.now();
    await warmUp(bench, seconds * 1000);
    phaseSeconds['warm-up'] = Math.round((performance.now() - from) / 100) / 10;
  }
  const single = await runPhase('latency', 'single-client latency (ms)', () =>
    latencyPhase(bench, machine.cpus),
  );
  const latency = single?.ops;
  const throughput = await runPhase('throughput', 'throughput: service, then raw engine', () =>
    throughputPhase(bench, machine.cpus),
  );
  const minimal = await runPhase(
    'minimal',
    'minimal protocol shape: the service vs the least a reserve→commit can write',
    async () => {
      if (!endpoint) {
        say('  skipped: the minimal shape needs the DynamoDB Local the service uses');
        return undefined;
      }
      const { minimalPhase } = await import('./minimal.js');
      return minimalPhase(bench, endpoint, machine.cpus);
    },
  );
  const listing = await runPhase('listing', 'listing: 100 vs many reservations', () =>
    listingPhase(bench),
  );
  const expiry = await runPhase('expiry', 'expiry lag: due holds under load', () =>
    expiryPhase(bench),
  );
  const profile = await runPhase('profile', 'server CPU profile', () => profilePhase(bench));
  const contention = await runPhase(
    'contention',
    'contention: DynamoDB’s conflicts and throttling emulated (simulator, then the service)',
    async () => {
      const { contentionPhase } = await import('./contention.js');
      const { contentionSettingsFromText } = await import('../../infra/local/contention.js');
      const emulation = contentionSettingsFromText(process.env.EMULATE_CONTENTION || '1') ?? {};
      const dynamodbEndpoint = endpoint;
      // A server of its own, on the same DynamoDB Local and table, with the emulator installed.
      const startEmulated = dynamodbEndpoint
        ? () =>
            ServerProcess.start({
              ...serverEnv(dynamodbEndpoint),
              EMULATE_CONTENTION: process.env.EMULATE_CONTENTION || '1',
            })
        : undefined;
      return contentionPhase(bench, emulation, startEmulated);
    },
  );
  // A server of its own per run, on the same DynamoDB Local and table, emulator installed.
  const dynamodbEndpoint = endpoint;
  const startEmulated = dynamodbEndpoint
    ? (env: Record<string, string>) =>
        ServerProcess.start({
          ...serverEnv(dynamodbEndpoint),
          EMULATE_CONTENTION: process.env.EMULATE_CONTENTION || '1',
          ...env,
        })
    : undefined;
  const busyTenant = await runPhase(
    'busy-tenant',
    'a busy tenant: README budgets, SDK-like clients, the service with contention emulated',
    async () => {
      const { busyTenantPhase } = await import('./busy-tenant.js');
      return busyTenantPhase(bench, startEmulated);
    },
  );
  const isolation = await runPhase(
    'isolation',
    'isolation: a noisy neighbour and a flood of bad keys, the service with contention emulated',
    async () => {
      const { isolationPhase } = await import('./isolation.js');
      return isolationPhase(bench, startEmulated);
    },
  );
  say('\n== final check of every ledger of the run');
  const auditFrom = performance.now();
  await bench.finalCheck();
  phaseSeconds.final = Math.round((performance.now() - auditFrom) / 100) / 10;

  const memory: Memory = {
    how: server
      ? 'VmHWM of the server process from /proc, the server running apart from the load generator'
      : serverPid
        ? `VmHWM of --server-pid ${serverPid}`
        : 'not measured (no --server-pid)',
    serverPeakMiB: serverPid ? mib(processMemory(serverPid)?.peak) : undefined,
    serverPeakAfterPhaseMiB: peakAfter,
    javaPeakMiB: javaPid ? mib(processMemory(javaPid)?.peak) : undefined,
    benchPeakMiB: mib(process.resourceUsage().maxRSS * 1024) ?? 0,
  };
  const statuses = Object.fromEntries([...bench.outcomes].map(([p, o]) => [p, o.statuses]));
  const failures = [...bench.outcomes].flatMap(([p, o]) => o.failures.map((x) => `${p}: ${x}`));
  const targets = report.evaluateTargets({
    latency,
    throughput,
    minimal,
    expiry,
    audits: bench.audits,
    statuses,
  });
  const unexpected = [...bench.outcomes.values()].reduce((a, o) => a + o.unexpected, 0);
  const mismatches = bench.audits.reduce((a, x) => a + x.mismatches, 0);
  const ok = unexpected === 0 && mismatches === 0;
  const results: Results = {
    schema: 1,
    startedAt: started.toISOString(),
    durationSeconds: Math.round((performance.now() - startedMs) / 1000),
    phaseSeconds,
    command,
    options: {
      quick: opts.quick,
      samples: opts.samples,
      warmupSamples: opts.warmupSamples,
      durationS: opts.durationMs / 1000,
      warmupS: opts.warmupMs / 1000,
      clients: opts.clients,
      listSize: opts.listSize,
      phases: [...opts.phases],
      target: opts.runtimeUrl ? 'running server' : 'started by the bench',
    },
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    setup,
    prices: PRICES,
    latency,
    itemSizes: single?.items,
    throughput,
    minimal,
    listing,
    expiry,
    profile,
    contention,
    busyTenant,
    isolation,
    memory,
    audits: bench.audits,
    statuses,
    staleSocketRetries: runtime.staleSocketRetries + admin.staleSocketRetries,
    failures,
    targets,
    ok,
  };

  say('\n== targets');
  for (const t of targets)
    say(
      `  [${t.met === undefined ? 'n/a' : t.met ? 'met' : 'MISSED'}] ${t.target}\n      ${t.detail}`,
    );
  say(
    `\nserver peak RSS ${memory.serverPeakMiB ?? 'n/a'} MiB (${memory.how}); DynamoDB Local ${memory.javaPeakMiB ?? 'n/a'} MiB; bench ${memory.benchPeakMiB} MiB`,
  );
  const file =
    opts.out ??
    `bench/results/${started.toISOString().slice(0, 10)}${opts.quick ? '-quick' : ''}${onlyContention(opts.phases) ? '-contention' : ''}.json`;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  say(`results: ${file}`);
  if (opts.markdown) {
    if (!onlyContention(opts.phases)) {
      report.updateBenchmarksMd('BENCHMARKS.md', report.markdown(results));
      say('BENCHMARKS.md: generated section updated');
    }
    if (contention || busyTenant || isolation) {
      await writeEmulatedBlocks(results);
      say('BENCHMARKS.md: emulated sections updated');
    }
  }
  say(`rerun: ${command}   (${results.durationSeconds} s)`);
  if (!ok) {
    say(`\nFAILED: ${mismatches} ledger mismatches, ${unexpected} unexpected responses`);
    for (const x of failures.slice(0, 10)) say(`  ${x}`);
  }
  return ok ? 0 : 1;
}

main()
  .then(async (code) => {
    await cleanUp();
    javaToKill = undefined;
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    say(
      `\nbench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    if (server) say(server.recentOutput);
    await cleanUp();
    process.exit(1);
  });
