import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { derivedId } from '../../functions/domain/fingerprint.js';
import type { Subject } from '../../functions/domain/scopes.js';
import { keys } from '../../functions/store/keys.js';
import { itemSize } from './capacity.js';
import { type Bench, type Measured, say } from './context.js';
import type { Json } from './http.js';
import { TTL_MS, UNIT } from './provision.js';
import { type LatencySummary, sequential, summarize } from './stats.js';
import { costPerMillion, type PerOp, perOp, unitsText } from './tally.js';

/** `raw+read`: the raw engine making the service's read first — its DynamoDB work, no HTTP. */
export type Engine = 'service' | 'raw' | 'raw+read';

/** One operation measured by one client, one request at a time. */
export interface OpResult {
  readonly op: string;
  readonly engine: Engine;
  readonly scopes?: number | undefined;
  readonly latency: LatencySummary;
  /** DynamoDB requests per operation, counted. */
  readonly perOp?: PerOp | undefined;
  readonly usdPerMillion?: number | undefined;
  /** CPU per operation, ms, by process (n/a where interleaved engines share a process). */
  readonly cpuMsPerOp: {
    readonly bench?: number | undefined;
    readonly server?: number | undefined;
    readonly java?: number | undefined;
  };
  readonly conflictRetries?: number | undefined;
  /** CPU of other processes on the machine while it ran, % of all cores. */
  readonly otherLoadPct?: number | undefined;
}

/** An item the service wrote, sized as DynamoDB sizes it. */
export interface ItemSize {
  readonly item: string;
  readonly bytes: number;
  /** Of which the stored response (idempotent replay body). */
  readonly storedResponseBytes?: number | undefined;
}

async function sizeItems(b: Bench, wanted: readonly [string, { pk: string; sk: string }][]) {
  const db = b.db;
  if (!db) return [];
  const res = await db.doc.send(
    new BatchGetCommand({
      RequestItems: { [db.table]: { Keys: wanted.map(([, k]) => k), ConsistentRead: true } },
    }),
  );
  const found = res.Responses?.[db.table] ?? [];
  return wanted.flatMap(([item, k]): ItemSize[] => {
    const i = found.find((x) => x.pk === k.pk);
    if (!i) return [];
    const body = typeof i.result === 'string' ? i.result : undefined;
    return [
      {
        item,
        bytes: itemSize(i),
        storedResponseBytes:
          body === undefined ? undefined : itemSize({ result: body, fingerprint: i.fingerprint }),
      },
    ];
  });
}

export const ACTION = { kind: 'llm.completion', name: 'bench-model' };
export const ESTIMATE = 1_000;
export const ACTUAL = 800;

export const reserveBody = (key: string, subject: Subject, extra: Json = {}) => ({
  idempotency_key: key,
  subject,
  action: ACTION,
  estimate: { unit: UNIT, amount: ESTIMATE },
  ttl_ms: TTL_MS,
  ...extra,
});

const r2 = (x: number | undefined) => (x === undefined ? undefined : Math.round(x * 100) / 100);

export function opResult(
  op: string,
  engine: Engine,
  scopes: number | undefined,
  m: Measured<number[]>,
  ops: number,
  cores: number,
  interleaved = false,
): OpResult {
  const tally = engine === 'service' ? m.service : m.raw;
  // (raw and raw+read both run in the bench process)
  const p = tally ? perOp(tally, ops) : undefined;
  return {
    op,
    engine,
    scopes,
    latency: summarize(m.value),
    perOp: p,
    usdPerMillion: p ? costPerMillion(p) : undefined,
    cpuMsPerOp: interleaved
      ? { server: engine === 'service' ? r2((m.cpu.serverMs ?? Number.NaN) / ops) : undefined }
      : {
          bench: r2(m.cpu.benchMs / ops),
          server: r2(m.cpu.serverMs === undefined ? undefined : m.cpu.serverMs / ops),
          java: r2(m.cpu.javaMs === undefined ? undefined : m.cpu.javaMs / ops),
        },
    conflictRetries: engine === 'service' ? m.serviceConflictRetries : m.rawConflictRetries,
    otherLoadPct:
      m.cpu.otherMs === undefined
        ? undefined
        : Math.round((100 * m.cpu.otherMs) / (m.cpu.wallMs * cores)),
  };
}

export function describePerOp(p: PerOp | undefined): string {
  if (!p) return 'DynamoDB counts n/a';
  const calls = Object.entries(p.calls)
    .map(([c, n]) => `${c} ${n.toFixed(2).replace(/\.00$/, '')}`)
    .join(' + ');
  return `${calls}; ${p.itemsWritten.toFixed(1)} written, ${p.itemsRead.toFixed(1)} read; ${p.writeUnits.toFixed(1)} WRU ${p.readUnits.toFixed(1)} RRU = $${costPerMillion(p).toFixed(2)}/M [${unitsText(p)}]`;
}

/**
 * Single-client latency of every operation after a warm-up, each measured on its own so the
 * DynamoDB counters divide exactly; the raw engine's transactions right after the service's.
 */
export async function latencyPhase(
  b: Bench,
  cores: number,
): Promise<{ ops: OpResult[]; items: ItemSize[] }> {
  const { samples: n, warmupSamples: w } = b.opts;
  const outcomes = b.outcomesOf('latency');
  const budgets = ['', 'workspace:w', 'workspace:w/agent:a'];
  const t = await b.tenant('lat', budgets);
  const rt = b.raw ? await b.tenant('lat-raw', budgets) : undefined;
  const one: Subject = { tenant: t.tenant };
  const three: Subject = { workspace: 'w', agent: 'a' };
  const threeScopes = [
    `tenant:${t.tenant}`,
    `tenant:${t.tenant}/workspace:w`,
    `tenant:${t.tenant}/workspace:w/agent:a`,
  ];
  const results: OpResult[] = [];
  const post = (what: string, path: string, body: unknown) =>
    b.runtime.expect(what, 'POST', path, t.headers, body);
  const get = (what: string, path: string) => b.runtime.expect(what, 'GET', path, t.headers);

  const run = async (
    op: string,
    engine: Engine,
    scopes: number | undefined,
    fn: (i: number) => Promise<unknown>,
  ) => {
    await sequential(w, fn, outcomes);
    const m = await b.measure(() => sequential(n, (i) => fn(w + i), outcomes));
    const r = opResult(op, engine, scopes, m, n, cores);
    results.push(r);
    const l = r.latency;
    say(
      `  ${op.padEnd(22)} ${engine.padEnd(8)} p50 ${l.p50.toFixed(2).padStart(6)}  p95 ${l.p95.toFixed(2).padStart(6)}  p99 ${l.p99.toFixed(2).padStart(6)} ms   ${describePerOp(r.perOp)}`,
    );
  };

  /**
   * The service and the raw engine alternately, one request each, first one then the other:
   * drift on a shared machine (another process, the JVM still compiling) hits both alike.
   * Their DynamoDB requests are counted apart (the server's client, the bench's client).
   */
  const runPair = async (
    op: string,
    scopes: number,
    service: (i: number) => Promise<unknown>,
    rawOp: ((i: number) => Promise<unknown>) | undefined,
  ) => {
    if (!rawOp) return run(op, 'service', scopes, service);
    const times: Record<'service' | 'raw', number[]> = { service: [], raw: [] };
    const both = async (i: number, record: boolean) => {
      const order = i % 2 === 0 ? (['service', 'raw'] as const) : (['raw', 'service'] as const);
      for (const engine of order) {
        const started = performance.now();
        try {
          await (engine === 'service' ? service(i) : rawOp(i));
          if (record) times[engine].push(performance.now() - started);
          outcomes.ok();
        } catch (error) {
          outcomes.fail(error);
        }
      }
    };
    for (let i = 0; i < w; i++) await both(i, false);
    const m = await b.measure(async () => {
      for (let i = w; i < w + n; i++) await both(i, true);
    });
    for (const engine of ['service', 'raw'] as const) {
      const r = opResult(op, engine, scopes, { ...m, value: times[engine] }, n, cores, true);
      results.push(r);
      const l = r.latency;
      say(
        `  ${op.padEnd(22)} ${engine.padEnd(8)} p50 ${l.p50.toFixed(2).padStart(6)}  p95 ${l.p95.toFixed(2).padStart(6)}  p99 ${l.p99.toFixed(2).padStart(6)} ms   ${describePerOp(r.perOp)}  (interleaved)`,
      );
    }
  };

  const oneScope: string[] = [];
  const threeScope: string[] = [];
  const rawOne: Awaited<ReturnType<NonNullable<typeof b.raw>['rawReserve']>>[] = [];
  const rawThree: typeof rawOne = [];

  const raw = b.raw;
  const rawTenant = rt?.tenant ?? '';
  await runPair(
    'reserve (1 scope)',
    1,
    async (i) => {
      const res = await post('reserve', '/v1/reservations', reserveBody(`r1-${i}`, one));
      oneScope[i] = String(res.reservation_id);
    },
    raw &&
      (async (i) => {
        rawOne[i] = await raw.rawReserve(rawTenant, { tenant: rawTenant }, ESTIMATE, `r1-${i}`);
      }),
  );
  await runPair(
    'reserve (3 scopes)',
    3,
    async (i) => {
      const res = await post('reserve', '/v1/reservations', reserveBody(`r3-${i}`, three));
      threeScope[i] = String(res.reservation_id);
    },
    raw &&
      (async (i) => {
        rawThree[i] = await raw.rawReserve(rawTenant, three, ESTIMATE, `r3-${i}`);
      }),
  );
  const items = await sizeItems(b, [
    ['ledger', keys.ledger(threeScopes[2] ?? '', UNIT)],
    ['reservation, 1 scope, ACTIVE', keys.reservation(oneScope[0] ?? '')],
    ['reservation, 3 scopes, ACTIVE', keys.reservation(threeScope[0] ?? '')],
  ]);
  if (raw) {
    // The read a reserve makes before it writes, alone, then with the write: the service's
    // DynamoDB work without HTTP or service code.
    await run('reserve read (3)', 'raw', 3, (i) => raw.rawReserveRead(rawTenant, three, `nx-${i}`));
    await run('reserve (3 scopes)', 'raw+read', 3, async (i) => {
      await raw.rawReserveRead(rawTenant, three, `rr3-${i}`);
      await raw.rawReserve(rawTenant, three, ESTIMATE, `rr3-${i}`);
    });
  }
  await run('get reservation', 'service', 3, (i) =>
    get('get', `/v1/reservations/${threeScope[i]}`),
  );
  await run('extend (3 scopes)', 'service', 3, (i) =>
    post('extend', `/v1/reservations/${threeScope[i]}/extend`, {
      idempotency_key: `x-${i}`,
      extend_by_ms: 60_000,
    }),
  );
  await runPair(
    'commit (3 scopes)',
    3,
    (i) =>
      post('commit', `/v1/reservations/${threeScope[i]}/commit`, {
        idempotency_key: `c-${i}`,
        actual: { unit: UNIT, amount: ACTUAL },
      }),
    raw &&
      (async (i) => {
        const r = rawThree[i];
        if (!r) throw new Error(`no raw reservation ${i}`);
        await raw.rawCommit(r, ACTUAL, `c-${i}`);
      }),
  );
  await run('release (1 scope)', 'service', 1, (i) =>
    post('release', `/v1/reservations/${oneScope[i]}/release`, { idempotency_key: `rl-${i}` }),
  );
  await run('decide (3 scopes)', 'service', 3, (i) =>
    post('decide', '/v1/decide', {
      idempotency_key: `d-${i}`,
      subject: three,
      action: ACTION,
      estimate: { unit: UNIT, amount: ESTIMATE },
    }),
  );
  await run('dry run (3 scopes)', 'service', 3, (i) =>
    post('dry run', '/v1/reservations', reserveBody(`dr-${i}`, three, { dry_run: true })),
  );
  await run('event (3 scopes)', 'service', 3, async (i) => {
    const key = `e-${i}`;
    t.eventKeys.add(key);
    const res = await post('event', '/v1/events', {
      idempotency_key: key,
      subject: three,
      action: ACTION,
      actual: { unit: UNIT, amount: 500 },
    });
    t.events.set(String(res.event_id), { scopes: threeScopes, actual: 500 });
  });
  await run('balances (3 ledgers)', 'service', 3, () =>
    get('balances', `/v1/balances?tenant=${t.tenant}&include_children=true`),
  );
  await run('list reservations', 'service', undefined, () =>
    get('list', '/v1/reservations?limit=50'),
  );
  items.push(
    ...(await sizeItems(b, [
      ['reservation, 3 scopes, COMMITTED', keys.reservation(threeScope[0] ?? '')],
      ['commit idempotency record', keys.idempotency(t.tenant, 'commit', 'c-0')],
      ['extend idempotency record', keys.idempotency(t.tenant, 'extend', 'x-0')],
      ['decide idempotency record', keys.idempotency(t.tenant, 'decide', 'd-0')],
      ['event, 3 scopes', keys.event(derivedId('evt', t.tenant, 'e-0'))],
    ])),
  );
  for (const x of items)
    say(
      `  item size: ${x.item.padEnd(34)} ${String(x.bytes).padStart(5)} B${x.storedResponseBytes ? ` (stored response ${x.storedResponseBytes} B)` : ''}`,
    );
  await b.audit('latency', rt ? [t, rt] : [t]);
  return { ops: results, items };
}
