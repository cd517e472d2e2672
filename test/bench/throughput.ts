import type { Subject } from '../../functions/domain/scopes.js';
import { type Bench, say } from './context.js';
import { ACTUAL, type Engine, ESTIMATE, reserveBody } from './latency.js';
import { type BenchTenant, UNIT } from './provision.js';
import { closedLoop, type LatencySummary, summarize } from './stats.js';
import { addTally, type PerOp, perOp, type Tally } from './tally.js';

export type Workload = 'reserve' | 'lifecycle';
/** (a) every client on the one tenant budget; (b) each client on its own agent budget. */
export type Budget = 'shared' | 'agents';

export interface LoadRun {
  readonly workload: Workload;
  readonly budget: Budget;
  readonly scopes: number;
  readonly clients: number;
  readonly engine: Engine;
  readonly perSecond: number;
  /** The rate of each round (the engines alternate round by round). */
  readonly perSecondByRound: readonly number[];
  readonly latency: LatencySummary;
  readonly completed: number;
  readonly measuredSeconds: number;
  /** DynamoDB calls and items per operation (units are measured by the single-client phase). */
  readonly perOp?:
    | Pick<PerOp, 'calls' | 'callsTotal' | 'itemsWritten' | 'itemsRead' | 'dynamoMs'>
    | undefined;
  readonly conflictRetriesPerOp?: number | undefined;
  readonly cpu: {
    readonly benchMsPerOp: number;
    readonly serverMsPerOp?: number | undefined;
    readonly javaMsPerOp?: number | undefined;
    /** CPU of other processes on the machine over the run, % of all cores. */
    readonly otherPct?: number | undefined;
    /** CPU of bench + server + DynamoDB Local, % of all cores. */
    readonly oursPct: number;
  };
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/** One engine's measurements of one configuration, summed over its rounds. */
interface Slices {
  latencies: number[];
  windowOps: number;
  windowSeconds: number;
  completed: number;
  perRound: number[];
  tally: Tally | undefined;
  counted: boolean;
  retries: number;
  cpu: {
    benchMs: number;
    serverMs: number;
    javaMs: number;
    otherMs: number;
    wallMs: number;
    hasServer: boolean;
    hasJava: boolean;
    hasOther: boolean;
  };
}

const emptySlices = (): Slices => ({
  latencies: [],
  windowOps: 0,
  windowSeconds: 0,
  completed: 0,
  perRound: [],
  tally: undefined,
  counted: false,
  retries: 0,
  cpu: {
    benchMs: 0,
    serverMs: 0,
    javaMs: 0,
    otherMs: 0,
    wallMs: 0,
    hasServer: false,
    hasJava: false,
    hasOther: false,
  },
});

/**
 * Reserve throughput and reserve→commit lifecycles per second at each concurrency, for the
 * service and, right after it, for the raw engine sending the same transactions.
 */
export async function throughputPhase(b: Bench, cores: number): Promise<LoadRun[]> {
  const runs: LoadRun[] = [];
  const rounds = b.opts.quick ? 1 : 3;
  await b.sizing(false);
  for (const workload of ['reserve', 'lifecycle'] as const) {
    for (const budget of ['shared', 'agents'] as const) {
      // A quick run checks lifecycles at one concurrency (10, or the middle level given).
      const levels =
        b.opts.quick && workload === 'lifecycle'
          ? [
              b.opts.clients.includes(10)
                ? 10
                : (b.opts.clients[Math.floor(b.opts.clients.length / 2)] ?? 1),
            ]
          : b.opts.clients;
      for (const clients of levels) {
        const label = `tp-${workload}-${budget}-${clients}`;
        const phase = `throughput ${workload} ${budget} ×${clients}`;
        const budgets =
          budget === 'shared'
            ? ['']
            : ['', ...Array.from({ length: clients }, (_, c) => `agent:a-${c}`)];
        const subjectOf = (tenant: string, c: number): Subject =>
          budget === 'shared' ? { tenant } : { agent: `a-${c}` };
        const scopes = budget === 'shared' ? 1 : 2;
        // At 10 clients, reserves also run as raw+read: the service's DynamoDB work alone.
        const engines: Engine[] = !b.raw
          ? ['service']
          : workload === 'reserve' && clients === 10
            ? ['service', 'raw', 'raw+read']
            : ['service', 'raw'];
        const touched = await Promise.all(
          engines.map((e) =>
            b.tenant(
              `${label}-${e === 'service' ? 'svc' : e === 'raw' ? 'raw' : 'rawread'}`,
              budgets,
            ),
          ),
        );
        const outcomes = b.outcomesOf(phase);
        const opOf = (engine: Engine, t: BenchTenant, round: number) => {
          const post = (what: string, path: string, body: unknown) =>
            b.runtime.expect(what, 'POST', path, t.headers, body);
          const raw = b.raw;
          return engine === 'service'
            ? async (c: number, i: number) => {
                const key = `${round}-${c}-${i}`;
                const res = await post(
                  'reserve',
                  '/v1/reservations',
                  reserveBody(key, subjectOf(t.tenant, c)),
                );
                if (workload === 'lifecycle') {
                  await post('commit', `/v1/reservations/${String(res.reservation_id)}/commit`, {
                    idempotency_key: `${key}-c`,
                    actual: { unit: UNIT, amount: ACTUAL },
                  });
                }
              }
            : async (c: number, i: number) => {
                if (!raw) throw new Error('no raw engine');
                const key = `${round}-${c}-${i}`;
                if (engine === 'raw+read')
                  await raw.rawReserveRead(t.tenant, subjectOf(t.tenant, c), key);
                const r = await raw.rawReserve(t.tenant, subjectOf(t.tenant, c), ESTIMATE, key);
                if (workload === 'lifecycle') await raw.rawCommit(r, ACTUAL, `${key}-c`);
              };
        };
        // The engines take turns, in rounds, the order flipping each round: a drift of the
        // shared machine or of the JVM over the minute of a configuration hits all of them.
        const acc = new Map<Engine, Slices>();
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? engines : [...engines].reverse();
          for (const engine of order) {
            const t = touched[engines.indexOf(engine)];
            if (!t) continue;
            const m = await b.measure(() =>
              closedLoop({
                clients,
                warmupMs: round === 0 ? b.opts.warmupMs : b.opts.warmupMs / 4,
                durationMs: b.opts.durationMs / rounds,
                op: opOf(engine, t, round),
                outcomes,
                minCompletions: b.opts.quick ? clients : Math.ceil((2 * clients) / rounds),
              }),
            );
            const a = acc.get(engine) ?? emptySlices();
            acc.set(engine, a);
            a.latencies.push(...m.value.latencies);
            a.windowOps += m.value.latencies.length;
            a.windowSeconds += m.value.measuredSeconds;
            a.completed += m.value.completed;
            a.perRound.push(m.value.perSecond);
            const tally = engine === 'service' ? m.service : m.raw;
            if (tally) a.tally = addTally(a.tally ?? {}, tally);
            a.retries +=
              (engine === 'service' ? m.serviceConflictRetries : m.rawConflictRetries) ?? 0;
            a.counted ||= tally !== undefined;
            a.cpu.benchMs += m.cpu.benchMs;
            a.cpu.serverMs += m.cpu.serverMs ?? 0;
            a.cpu.javaMs += m.cpu.javaMs ?? 0;
            a.cpu.otherMs += m.cpu.otherMs ?? 0;
            a.cpu.wallMs += m.cpu.wallMs;
            a.cpu.hasServer ||= m.cpu.serverMs !== undefined;
            a.cpu.hasJava ||= m.cpu.javaMs !== undefined;
            a.cpu.hasOther ||= m.cpu.otherMs !== undefined;
          }
        }
        for (const engine of engines) {
          const a = acc.get(engine);
          if (!a) continue;
          const done = Math.max(1, a.completed);
          const p = a.tally ? perOp(a.tally, done) : undefined;
          const ours = a.cpu.benchMs + a.cpu.serverMs + a.cpu.javaMs;
          const run: LoadRun = {
            workload,
            budget,
            scopes,
            clients,
            engine,
            perSecond: Math.round((10 * a.windowOps) / Math.max(1e-3, a.windowSeconds)) / 10,
            perSecondByRound: a.perRound,
            latency: summarize(a.latencies),
            completed: a.completed,
            measuredSeconds: r2(a.windowSeconds),
            perOp: p && {
              calls: p.calls,
              callsTotal: p.callsTotal,
              itemsWritten: p.itemsWritten,
              itemsRead: p.itemsRead,
              dynamoMs: p.dynamoMs,
            },
            conflictRetriesPerOp: a.counted ? r2(a.retries / done) : undefined,
            cpu: {
              benchMsPerOp: r2(a.cpu.benchMs / done),
              serverMsPerOp: a.cpu.hasServer ? r2(a.cpu.serverMs / done) : undefined,
              javaMsPerOp: a.cpu.hasJava ? r2(a.cpu.javaMs / done) : undefined,
              otherPct: a.cpu.hasOther
                ? Math.round((100 * a.cpu.otherMs) / (a.cpu.wallMs * cores))
                : undefined,
              oursPct: Math.round((100 * ours) / (a.cpu.wallMs * cores)),
            },
          };
          runs.push(run);
          const unitName = workload === 'lifecycle' ? 'lifecycles/s' : 'reserves/s';
          say(
            `  ${workload.padEnd(9)} ${budget.padEnd(6)} ×${String(clients).padEnd(3)} ${engine.padEnd(8)} ${run.perSecond.toFixed(1).padStart(7)} ${unitName} (rounds ${a.perRound.join(' / ')})  p50 ${run.latency.p50.toFixed(1).padStart(6)}  p99 ${run.latency.p99.toFixed(1).padStart(6)} ms  retries/op ${run.conflictRetriesPerOp ?? 'n/a'}  cpu ms/op bench ${run.cpu.benchMsPerOp} server ${run.cpu.serverMsPerOp ?? 'n/a'} java ${run.cpu.javaMsPerOp ?? 'n/a'}  other load ${run.cpu.otherPct ?? 'n/a'}%`,
          );
        }
        await b.audit(phase, touched);
      }
    }
  }
  await b.sizing(true);
  return runs;
}

/**
 * Before anything is measured: reserve→commit lifecycles from 10 clients through the service,
 * then through the raw engine. DynamoDB Local's JVM and the server's V8 compile their hot
 * paths over the first thousands of requests; without this the first operations measured
 * (and whichever engine runs first) would pay for it.
 */
export async function warmUp(b: Bench, ms: number): Promise<void> {
  const budgets = ['', 'workspace:w', 'workspace:w/agent:a'];
  const subject: Subject = { workspace: 'w', agent: 'a' };
  const outcomes = b.outcomesOf('warm-up');
  const tenants = [await b.tenant('warmup', budgets)];
  const loop = (op: (c: number, i: number) => Promise<unknown>) =>
    closedLoop({ clients: 10, warmupMs: 0, durationMs: ms / 2, op, outcomes, minCompletions: 0 });
  const t = tenants[0];
  if (t) {
    await loop(async (c, i) => {
      const res = await b.runtime.expect(
        'reserve',
        'POST',
        '/v1/reservations',
        t.headers,
        reserveBody(`w-${c}-${i}`, subject),
      );
      await b.runtime.expect(
        'commit',
        'POST',
        `/v1/reservations/${String(res.reservation_id)}/commit`,
        t.headers,
        { idempotency_key: `w-${c}-${i}-c`, actual: { unit: UNIT, amount: ACTUAL } },
      );
    });
  }
  const raw = b.raw;
  if (raw) {
    const rt = await b.tenant('warmup-raw', budgets);
    tenants.push(rt);
    await loop(async (c, i) => {
      await raw.rawReserveRead(rt.tenant, subject, `w-${c}-${i}`);
      const r = await raw.rawReserve(rt.tenant, subject, ESTIMATE, `w-${c}-${i}`);
      await raw.rawCommit(r, ACTUAL, `w-${c}-${i}-c`);
    });
  }
  await b.audit('warm-up', tenants);
}
