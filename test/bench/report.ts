import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AuditResult } from './audit.js';
import type { BusyTenantResult } from './busy-tenant.js';
import type { ContentionResult } from './contention.js';
import type { ExpiryLag } from './expiry.js';
import type { IsolationResult } from './isolation.js';
import type { ItemSize, OpResult } from './latency.js';
import type { ListingResult, ListingRow } from './listing.js';
import type { MinimalResult } from './minimal.js';
import type { ProfileSummary } from './profile.js';
import type { MachineInfo } from './system.js';
import { type PerOp, PRICES, unitsText } from './tally.js';
import type { LoadRun } from './throughput.js';

export interface Target {
  readonly id: string;
  readonly target: string;
  /** undefined: not measurable in this run (e.g. no raw engine). */
  readonly met: boolean | undefined;
  readonly detail: string;
}

export interface Memory {
  readonly how: string;
  readonly serverPeakMiB?: number | undefined;
  readonly serverPeakAfterPhaseMiB: Record<string, number>;
  readonly javaPeakMiB?: number | undefined;
  readonly benchPeakMiB: number;
}

export interface Results {
  readonly schema: 1;
  readonly startedAt: string;
  readonly durationSeconds: number;
  readonly phaseSeconds: Record<string, number>;
  readonly command: string;
  readonly options: Record<string, unknown>;
  readonly machine: MachineInfo & { readonly loadAverageAtEnd: readonly number[] };
  readonly setup: readonly string[];
  readonly prices: typeof PRICES;
  readonly latency?: readonly OpResult[] | undefined;
  readonly itemSizes?: readonly ItemSize[] | undefined;
  readonly throughput?: readonly LoadRun[] | undefined;
  /** The service next to the minimal protocol shape (test/bench/minimal.ts). */
  readonly minimal?: MinimalResult | undefined;
  readonly listing?: ListingResult | undefined;
  readonly expiry?: ExpiryLag | undefined;
  readonly profile?: ProfileSummary | undefined;
  /** Rendered in a block of its own (test/bench/contention.ts). */
  readonly contention?: ContentionResult | undefined;
  /** Rendered in a block of its own (test/bench/busy-tenant.ts). */
  readonly busyTenant?: BusyTenantResult | undefined;
  readonly isolation?: IsolationResult | undefined;
  readonly memory: Memory;
  readonly audits: readonly AuditResult[];
  readonly statuses: Record<string, Record<string, number>>;
  /** Requests resent after the server closed a kept-alive socket as it was reused. */
  readonly staleSocketRetries: number;
  readonly failures: readonly string[];
  readonly targets: readonly Target[];
  readonly ok: boolean;
}

const f = (x: number | undefined, digits = 2) => (x === undefined ? 'n/a' : x.toFixed(digits));

const pct = (x: number) => `${Math.round(x * 100)}%`;
const ratioText = (x: RatioRow) =>
  x.ratio === undefined
    ? 'n/a'
    : `${pct(x.ratio)}${x.ratioRange ? ` (rounds ${pct(x.ratioRange[0])}–${pct(x.ratioRange[1])})` : ''}`;

const readCalls = (p: PerOp) =>
  (p.calls.BatchGetItem ?? 0) + (p.calls.GetItem ?? 0) + (p.calls.Query ?? 0) + (p.calls.Scan ?? 0);

export function evaluateTargets(r: {
  latency?: readonly OpResult[] | undefined;
  throughput?: readonly LoadRun[] | undefined;
  minimal?: MinimalResult | undefined;
  expiry?: ExpiryLag | undefined;
  audits: readonly AuditResult[];
  statuses: Record<string, Record<string, number>>;
}): Target[] {
  const targets: Target[] = [];
  if (r.expiry) {
    const e = r.expiry;
    targets.push({
      id: 'expiry-lag',
      target: `every due hold back within the sweep interval + 1 s (${e.boundMs} ms) at ${e.due} due reservations while ${e.clients} clients run reserve→commit`,
      met: e.expired === e.due && e.lagMs.max <= e.boundMs,
      detail: `${e.expired}/${e.due} back; lag p50 ${e.lagMs.p50} ms, max ${e.lagMs.max} ms; ${e.pairsUnderLoad} pairs meanwhile`,
    });
  }
  if (r.throughput) {
    const pairs = ratios(r.throughput).filter((p) => p.clients === 10);
    const measurable = pairs.filter((p) => p.ratio !== undefined);
    targets.push({
      id: 'throughput-10',
      target:
        'at 10 clients the service sustains ≥ 80% of the raw engine’s rate for the same shape',
      met: measurable.length > 0 ? measurable.every((p) => (p.ratio ?? 0) >= 0.8) : undefined,
      detail:
        pairs
          .map(
            (p) =>
              `${p.workload} ${p.budget}: ${f(p.service, 1)} vs ${f(p.raw, 1)}/s = ${ratioText(p)}`,
          )
          .join('; ') || 'no 10-client run',
    });
  }
  if (r.latency) {
    const rows = ['reserve (1 scope)', 'reserve (3 scopes)'].map((op) => {
      const s = r.latency?.find((o) => o.op === op && o.engine === 'service');
      const w = r.latency?.find((o) => o.op === op && o.engine === 'raw');
      return { op, s, w, gap: s && w ? s.latency.p50 - w.latency.p50 : undefined };
    });
    const measurable = rows.filter((x) => x.gap !== undefined);
    targets.push({
      id: 'reserve-p50',
      target: 'single-client reserve p50 within 2 ms of the raw transaction’s p50',
      met: measurable.length > 0 ? measurable.every((x) => (x.gap ?? 0) <= 2) : undefined,
      detail: rows
        .map(
          (x) => `${x.op}: ${f(x.s?.latency.p50)} vs ${f(x.w?.latency.p50)} ms (+${f(x.gap)} ms)`,
        )
        .join('; '),
    });
    const cost = [1, 3].map((scopes) => {
      const s = r.latency?.find(
        (o) =>
          o.engine === 'service' && o.op === `reserve (${scopes} scope${scopes > 1 ? 's' : ''})`,
      );
      return { scopes, p: s?.perOp };
    });
    const counted = cost.filter((c) => c.p !== undefined);
    targets.push({
      id: 'reserve-cost',
      target:
        'a reserve is one TransactWriteItems of ≤ scopes + 2 items (scopes + 1 with the idempotency record in the reservation item) plus ≤ 1 read call',
      met:
        counted.length > 0
          ? counted.every(
              ({ scopes, p }) =>
                p !== undefined &&
                Math.abs((p.calls.TransactWriteItems ?? 0) - 1) < 1e-9 &&
                p.itemsWritten <= scopes + 1 + 1e-9 &&
                readCalls(p) <= 1 + 1e-9,
            )
          : undefined,
      detail:
        counted
          .map(
            ({ scopes, p }) =>
              `${scopes} scope${scopes > 1 ? 's' : ''}: ${f(p?.calls.TransactWriteItems)} TransactWriteItems of ${f(p?.itemsWritten)} items + ${f(p ? readCalls(p) : undefined)} read calls`,
          )
          .join('; ') || 'DynamoDB counts unavailable (service not started by the bench)',
    });
  }
  if (r.minimal) targets.push(...minimalTargets(r.minimal));
  const mismatches = r.audits.reduce((a, x) => a + x.mismatches, 0);
  const fivexx = Object.values(r.statuses)
    .flatMap((s) => Object.entries(s))
    .filter(([code]) => code.startsWith('5'))
    .reduce((a, [, n]) => a + n, 0);
  targets.push({
    id: 'integrity',
    target: 'zero ledger mismatches and zero 5xx in every phase',
    met: mismatches === 0 && fivexx === 0,
    detail: `${r.audits.length} audits, ${mismatches} mismatches; ${fivexx} responses 5xx`,
  });
  return targets;
}

/**
 * The targets against a baseline shape: issue 12's against the minimal shape, issue 31's
 * against the floor shape (two indexes, one read per operation).
 */
function minimalTargets(m: MinimalResult): Target[] {
  const x = m.summary;
  return [
    ...shapeTargets(m, {
      engine: 'minimal',
      rate: x.minimalRate,
      ratio: x.ratio,
      range: x.ratioRange,
      p50: x.minimalReserveP50,
      gap: x.reserveP50GapMs,
      bounds: { ratio: 0.7, gapMs: 3, wru: 24, dollars: 15 },
    }),
    ...(x.floorRate === undefined
      ? []
      : shapeTargets(m, {
          engine: 'floor',
          rate: x.floorRate,
          ratio: x.floorRatio,
          range: x.floorRatioRange,
          p50: x.floorReserveP50,
          gap: x.floorP50GapMs,
          bounds: { ratio: 0.8, gapMs: 4, wru: 20, rru: 7, dollars: 13 },
        })),
  ];
}

function shapeTargets(
  m: MinimalResult,
  s: {
    readonly engine: 'minimal' | 'floor';
    readonly rate: number | undefined;
    readonly ratio: number | undefined;
    readonly range: readonly [number, number] | undefined;
    readonly p50: number | undefined;
    readonly gap: number | undefined;
    readonly bounds: {
      readonly ratio: number;
      readonly gapMs: number;
      readonly wru: number;
      readonly rru?: number;
      readonly dollars: number;
    };
  },
): Target[] {
  const x = m.summary;
  const b = s.bounds;
  const svc = m.pairs.find((p) => p.engine === 'service');
  const base = m.pairs.find((p) => p.engine === s.engine);
  const units = `≤ ${b.wru} WRU${b.rru === undefined ? '' : ` and ≤ ${b.rru} RRU`}`;
  return [
    {
      id: `${s.engine}-rate`,
      target: `at ${x.clients ?? 10} clients the service sustains ≥ ${Math.round(100 * b.ratio)}% of the ${s.engine} shape’s reserve→commit rate (3 scopes)`,
      met: s.ratio === undefined ? undefined : s.ratio >= b.ratio,
      detail: `${f(x.serviceRate, 1)} vs ${f(s.rate, 1)} pairs/s = ${s.ratio === undefined ? 'n/a' : pct(s.ratio)}${s.range ? ` (rounds ${pct(s.range[0])}–${pct(s.range[1])})` : ''}`,
    },
    {
      id: `${s.engine}-p50`,
      target: `single-client reserve p50 (3 scopes) within ${b.gapMs} ms of the ${s.engine} shape’s`,
      met: s.gap === undefined ? undefined : s.gap <= b.gapMs,
      detail: `${f(x.serviceReserveP50)} vs ${f(s.p50)} ms (+${f(s.gap)} ms)`,
    },
    {
      id: `${s.engine}-units`,
      target: `${units} per 3-scope reserve→commit pair (about $${b.dollars} per million pairs)`,
      met: svc
        ? svc.writeUnits <= b.wru + 1e-9 && (b.rru === undefined || svc.readUnits <= b.rru + 1e-9)
        : undefined,
      detail: `service ${f(svc?.writeUnits, 1)} WRU + ${f(svc?.readUnits, 1)} RRU = $${f(svc?.usdPerMillion)}/M; ${s.engine} ${f(base?.writeUnits, 1)} WRU + ${f(base?.readUnits, 1)} RRU = $${f(base?.usdPerMillion)}/M`,
    },
  ];
}

export interface RatioRow {
  readonly workload: string;
  readonly budget: string;
  readonly scopes: number;
  readonly clients: number;
  readonly service?: number | undefined;
  readonly raw?: number | undefined;
  readonly ratio?: number | undefined;
  /** Service/raw of each round, lowest and highest: the noise band of the ratio. */
  readonly ratioRange?: readonly [number, number] | undefined;
  readonly s?: LoadRun | undefined;
  readonly w?: LoadRun | undefined;
}

export function ratios(runs: readonly LoadRun[]): RatioRow[] {
  const rows: RatioRow[] = [];
  for (const s of runs.filter((x) => x.engine === 'service')) {
    const w = runs.find(
      (x) =>
        x.engine === 'raw' &&
        x.workload === s.workload &&
        x.budget === s.budget &&
        x.clients === s.clients,
    );
    const byRound = (w?.perSecondByRound ?? [])
      .map((raw, i) => (raw > 0 ? (s.perSecondByRound[i] ?? 0) / raw : undefined))
      .filter((x): x is number => x !== undefined);
    rows.push({
      ratioRange: byRound.length > 1 ? [Math.min(...byRound), Math.max(...byRound)] : undefined,
      workload: s.workload,
      budget: s.budget,
      scopes: s.scopes,
      clients: s.clients,
      service: s.perSecond,
      raw: w?.perSecond,
      ratio: w && w.perSecond > 0 ? s.perSecond / w.perSecond : undefined,
      s,
      w,
    });
  }
  return rows;
}

const table = (head: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

const callsText = (p: PerOp | undefined) =>
  p
    ? Object.entries(p.calls)
        .map(([c, n]) => `${c} ${Number(n.toFixed(2))}`)
        .join(' + ')
    : 'n/a';

/** The generated part of BENCHMARKS.md. */
export function markdown(r: Results): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`### Run of ${r.startedAt.slice(0, 19).replace('T', ' ')} UTC`);
  out.push('');
  out.push(
    `- Command: \`${r.command}\` (${r.durationSeconds} s: ${Object.entries(r.phaseSeconds)
      .map(([p, s]) => `${p} ${s} s`)
      .join(', ')})`,
  );
  out.push(
    `- Options: ${Object.entries(r.options)
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
      .join(', ')}`,
  );
  out.push(
    `- Machine: ${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}; ${m.java}; DynamoDB Local ${m.dynamodbLocal}`,
  );
  out.push(
    `- Load average at start ${m.loadAverageAtStart.join(' / ')}, at end ${m.loadAverageAtEnd.join(' / ')}`,
  );
  for (const s of r.setup) out.push(`- ${s}`);
  out.push(
    `- Prices: ${PRICES.mode} ${PRICES.region}, ${PRICES.tableClass} table class: $${PRICES.usdPerMillionWriteUnits} per million WRU, $${PRICES.usdPerMillionReadUnits} per million RRU. ${PRICES.note}`,
  );
  out.push('');
  out.push('#### Targets');
  out.push('');
  out.push(
    table(
      ['Target', 'Met', 'Measured'],
      r.targets.map((t) => [
        t.target,
        t.met === undefined ? 'n/a' : t.met ? 'yes' : '**no**',
        t.detail,
      ]),
    ),
  );
  if (r.latency) {
    out.push('');
    out.push('#### Single client, after warm-up (latency in ms; DynamoDB per operation, counted)');
    out.push('');
    out.push(
      table(
        [
          'Operation',
          'Engine',
          'p50',
          'p95',
          'p99',
          'DynamoDB calls',
          'Items written',
          'Items read (index entries incl.)',
          'WRU',
          'RRU',
          'Units by table / index',
          '$ per M ops',
          'Mean ms inside DynamoDB calls; outside them',
          'Server CPU ms',
          'Other load %',
        ],
        r.latency.map((o) => [
          o.op,
          o.engine,
          f(o.latency.p50),
          f(o.latency.p95),
          f(o.latency.p99),
          callsText(o.perOp),
          f(o.perOp?.itemsWritten, 1),
          f(o.perOp?.itemsRead, 1),
          f(o.perOp?.writeUnits, 1),
          f(o.perOp?.readUnits, 1),
          o.perOp ? unitsText(o.perOp) : 'n/a',
          o.usdPerMillion === undefined ? 'n/a' : `$${o.usdPerMillion.toFixed(2)}`,
          o.perOp ? `${f(o.perOp.dynamoMs)} / ${f(o.latency.mean - o.perOp.dynamoMs)}` : 'n/a',
          f(o.cpuMsPerOp.server),
          o.otherLoadPct === undefined ? 'n/a' : String(o.otherLoadPct),
        ]),
      ),
    );
  }
  if (r.itemSizes && r.itemSizes.length > 0) {
    out.push('');
    out.push('Item sizes as DynamoDB counts them (what the units above are computed from):');
    out.push('');
    out.push(
      table(
        ['Item', 'Bytes', 'Of which stored response'],
        r.itemSizes.map((x) => [
          x.item,
          String(x.bytes),
          x.storedResponseBytes === undefined ? '' : String(x.storedResponseBytes),
        ]),
      ),
    );
  }
  if (r.throughput) {
    out.push('');
    out.push(
      `#### Throughput (closed loop; reserves/s or reserve→commit lifecycles/s) — service vs raw engine, same transactions, taking turns in ${r.options.quick ? 1 : 3} rounds`,
    );
    out.push('');
    out.push(
      table(
        [
          'Workload',
          'Budgets (scopes)',
          'Clients',
          'Service /s',
          'Raw /s',
          'Service/raw',
          'Service p50 / p99 ms',
          'Raw p50 / p99 ms',
          'Conflict retries per op (svc / raw)',
          'Other load % (svc / raw)',
        ],
        ratios(r.throughput).map((x) => [
          x.workload,
          `${x.budget === 'shared' ? '(a) one tenant budget' : '(b) agent budget each'} (${x.scopes})`,
          String(x.clients),
          f(x.service, 1),
          f(x.raw, 1),
          ratioText(x),
          `${f(x.s?.latency.p50, 1)} / ${f(x.s?.latency.p99, 1)}`,
          `${f(x.w?.latency.p50, 1)} / ${f(x.w?.latency.p99, 1)}`,
          `${f(x.s?.conflictRetriesPerOp)} / ${f(x.w?.conflictRetriesPerOp)}`,
          `${x.s?.cpu.otherPct ?? 'n/a'} / ${x.w?.cpu.otherPct ?? 'n/a'}`,
        ]),
      ),
    );
  }
  if (r.throughput) {
    const split = ratios(r.throughput).filter(
      (x) =>
        x.workload === 'reserve' &&
        r.throughput?.some(
          (y) => y.engine === 'raw+read' && y.budget === x.budget && y.clients === x.clients,
        ),
    );
    if (split.length > 0) {
      out.push('');
      out.push(
        'Where the reserves per second go at 10 clients — raw engine alone, raw engine making the service’s read first (its DynamoDB work, no HTTP), the service:',
      );
      out.push('');
      out.push(
        table(
          [
            'Budgets',
            'Raw /s',
            'Raw + read /s',
            'Service /s',
            'CPU ms per reserve: raw / raw + read / service',
          ],
          split.map((x) => {
            const rr = r.throughput?.find(
              (y) => y.engine === 'raw+read' && y.budget === x.budget && y.clients === x.clients,
            );
            const total = (y: LoadRun | undefined) =>
              y
                ? y.cpu.benchMsPerOp + (y.cpu.serverMsPerOp ?? 0) + (y.cpu.javaMsPerOp ?? 0)
                : undefined;
            return [
              x.budget,
              f(x.raw, 1),
              f(rr?.perSecond, 1),
              f(x.service, 1),
              `${f(total(x.w))} / ${f(total(rr))} / ${f(total(x.s))}`,
            ];
          }),
        ),
      );
    }
    const rows = ratios(r.throughput).filter((x) => x.s?.cpu.serverMsPerOp !== undefined);
    if (rows.length > 0) {
      const total = (x: LoadRun | undefined) =>
        x ? x.cpu.benchMsPerOp + (x.cpu.serverMsPerOp ?? 0) + (x.cpu.javaMsPerOp ?? 0) : undefined;
      out.push('');
      out.push(
        'CPU per operation, ms, by process (from /proc), and the share of the 2 cores a run kept busy. At 1 client nothing overlaps and the rate follows the latency. From 10 clients no run fills the 2 cores: DynamoDB Local’s JVM works at about one core (it applies transactions one at a time) and is the bottleneck, so the ratio tracks its CPU per operation (loosely: its GC and compiler threads are in that CPU too); the server’s CPU runs on the other core.',
      );
      out.push('');
      out.push(
        table(
          [
            'Workload',
            'Clients',
            'Service: load generator + server + DynamoDB Local = total',
            'Raw: load generator (SDK) + DynamoDB Local = total',
            'Cores busy % (svc / raw)',
            'DynamoDB Local ms per op, raw ÷ service',
            'Measured ratio',
          ],
          rows.map((x) => {
            const ts = total(x.s);
            const tw = total(x.w);
            const js = x.s?.cpu.javaMsPerOp;
            const jw = x.w?.cpu.javaMsPerOp;
            return [
              `${x.workload} ${x.budget}`,
              String(x.clients),
              `${f(x.s?.cpu.benchMsPerOp)} + ${f(x.s?.cpu.serverMsPerOp)} + ${f(js)} = ${f(ts)}`,
              `${f(x.w?.cpu.benchMsPerOp)} + ${f(jw)} = ${f(tw)}`,
              `${x.s?.cpu.oursPct ?? 'n/a'} / ${x.w?.cpu.oursPct ?? 'n/a'}`,
              js && jw ? `${Math.round((100 * jw) / js)}%` : 'n/a',
              x.ratio === undefined ? 'n/a' : `${Math.round(x.ratio * 100)}%`,
            ];
          }),
        ),
      );
    }
  }
  if (r.minimal) {
    const mn = r.minimal;
    out.push('');
    out.push(
      `#### Minimal protocol shape (phase \`minimal\`): the service vs the least a 3-scope reserve→commit can write, and vs the floor shape (two indexes, one read per operation) (${mn.shape})`,
    );
    out.push('');
    out.push(
      table(
        [
          'Operation',
          'Engine',
          'p50',
          'p95',
          'p99',
          'DynamoDB calls',
          'Items written',
          'WRU',
          'RRU',
          'Units by table / index',
        ],
        mn.ops.map((o) => [
          o.op,
          o.engine,
          f(o.latency.p50),
          f(o.latency.p95),
          f(o.latency.p99),
          callsText(o.perOp),
          f(o.perOp?.itemsWritten, 1),
          f(o.perOp?.writeUnits, 1),
          f(o.perOp?.readUnits, 1),
          o.perOp ? unitsText(o.perOp) : 'n/a',
        ]),
      ),
    );
    out.push('');
    out.push(
      table(
        ['Per 3-scope pair', 'WRU', 'RRU', '$ per M pairs'],
        mn.pairs.map((p) => [
          p.engine,
          f(p.writeUnits, 1),
          f(p.readUnits, 1),
          `$${f(p.usdPerMillion)}`,
        ]),
      ),
    );
    out.push('');
    out.push(
      table(
        [
          'Clients',
          'Service pairs/s',
          'Minimal pairs/s',
          'Floor pairs/s',
          'Service/minimal',
          'Service/floor',
          'Floor/minimal',
          'Service p50 / p99 ms',
          'Minimal p50 / p99 ms',
          'Floor p50 / p99 ms',
          'Other load % (svc / min / floor)',
        ],
        [...new Set(mn.throughput.map((x) => x.clients))].map((c) => {
          const s = mn.throughput.find((x) => x.clients === c && x.engine === 'service');
          const m = mn.throughput.find((x) => x.clients === c && x.engine === 'minimal');
          const fl = mn.throughput.find((x) => x.clients === c && x.engine === 'floor');
          const ratio = (a: typeof s, z: typeof s) =>
            a && z && z.perSecond > 0 ? pct(a.perSecond / z.perSecond) : 'n/a';
          return [
            String(c),
            f(s?.perSecond, 1),
            f(m?.perSecond, 1),
            f(fl?.perSecond, 1),
            ratio(s, m),
            ratio(s, fl),
            ratio(fl, m),
            `${f(s?.latency.p50, 1)} / ${f(s?.latency.p99, 1)}`,
            `${f(m?.latency.p50, 1)} / ${f(m?.latency.p99, 1)}`,
            `${f(fl?.latency.p50, 1)} / ${f(fl?.latency.p99, 1)}`,
            `${s?.cpu.otherPct ?? 'n/a'} / ${m?.cpu.otherPct ?? 'n/a'} / ${fl?.cpu.otherPct ?? 'n/a'}`,
          ];
        }),
      ),
    );
  }
  if (r.expiry) {
    const e = r.expiry;
    out.push('');
    out.push(
      `#### Expiry lag: ${e.due} holds due at once while ${e.clients} clients run reserve→commit (sweeper every ${e.intervalMs} ms)`,
    );
    out.push('');
    out.push(
      table(
        ['Holds back', 'Lag p50', 'Lag p95', 'Lag max', 'Bound', 'Pairs meanwhile'],
        [
          [
            `${e.expired}/${e.due}`,
            `${e.lagMs.p50} ms`,
            `${e.lagMs.p95} ms`,
            `${e.lagMs.max} ms`,
            `${e.boundMs} ms`,
            String(e.pairsUnderLoad),
          ],
        ],
      ),
    );
  }
  if (r.listing) {
    const listing = r.listing;
    const sizes = [...new Set(listing.rows.map((x) => x.tenantReservations))];
    const cell = (x: ListingRow | undefined) =>
      x
        ? `${x.returned}${x.hasMore ? '+' : ''} returned; p50 ${f(x.latency.p50)} / p99 ${f(x.latency.p99)} ms; ${callsText(x.perOp)}; ${f(x.perOp?.itemsRead, 1)} items read, ${f(x.perOp?.readUnits, 1)} RRU`
        : '—';
    out.push('');
    out.push(
      `#### Listing cost does not grow with the table (GET /v1/reservations?limit=50; tenants seeded by ${listing.seededBy})`,
    );
    out.push('');
    out.push(
      table(
        ['Page', ...sizes.map((n) => `Tenant with ${n} reservations`)],
        [...new Set(listing.rows.map((x) => x.page))].map((page) => [
          page,
          ...sizes.map((n) =>
            cell(listing.rows.find((x) => x.page === page && x.tenantReservations === n)),
          ),
        ]),
      ),
    );
    const offsets = listing.rows
      .filter((x) => x.offset > 50)
      .map((x) => `${x.page} page starts at ${x.offset} of ${x.tenantReservations}`);
    if (offsets.length > 0) out.push('', `(${offsets.join('; ')}.)`);
  }
  out.push('');
  out.push('#### Memory and integrity');
  out.push('');
  const mem = r.memory;
  out.push(
    `- Server peak RSS: ${mem.serverPeakMiB === undefined ? 'n/a' : `${mem.serverPeakMiB} MiB`} (${mem.how}); after each phase: ${
      Object.entries(mem.serverPeakAfterPhaseMiB)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'n/a'
    } MiB. DynamoDB Local (Java) peak ${mem.javaPeakMiB ?? 'n/a'} MiB, bench process ${mem.benchPeakMiB} MiB, not included.`,
  );
  const mismatches = r.audits.reduce((a, x) => a + x.mismatches, 0);
  out.push(
    `- Audits: ${r.audits.length} (after every phase, and a final re-read of every ledger of the run), ${r.audits.reduce((a, x) => a + x.ledgers, 0)} ledger checks, ${mismatches} mismatches; source: ${r.audits[0]?.source ?? 'n/a'}.`,
  );
  const statuses: Record<string, number> = {};
  for (const s of Object.values(r.statuses))
    for (const [code, n] of Object.entries(s)) statuses[code] = (statuses[code] ?? 0) + n;
  out.push(
    `- HTTP statuses over the run: ${Object.entries(statuses)
      .map(([c, n]) => `${c}×${n}`)
      .join(
        ', ',
      )}; ${r.staleSocketRetries} request(s) resent after the server closed an idle kept-alive socket as the client reused it (Node's keep-alive race; safe, every write carries an idempotency key).`,
  );
  if (r.profile) {
    const p = r.profile;
    out.push('');
    out.push(
      `#### Server CPU profile: ${p.workload}, ${p.seconds} s, ${p.operations} operations, ${p.busyMsPerOp} ms busy CPU per operation, idle ${p.idlePct}%`,
    );
    out.push('');
    const origins = [...new Set([...p.byComponent, ...p.selfByOrigin].map((x) => x.name))];
    const pct = (list: readonly { name: string; pct: number }[], name: string) =>
      String(list.find((x) => x.name === name)?.pct ?? '');
    out.push(
      table(
        ['Component', 'Caused % (nearest JS caller)', 'Self %', 'Inclusive %'],
        origins.map((name) => [
          name,
          pct(p.byComponent, name),
          pct(p.selfByOrigin, name),
          pct(p.inclusiveByOrigin, name),
        ]),
      ),
    );
    out.push('');
    out.push(
      `Top service functions, inclusive: ${p.topServiceInclusive
        .slice(0, 10)
        .map((s) => `\`${s.name}\` ${s.pct}%`)
        .join(', ')}.`,
    );
    out.push('');
    out.push(
      `Top functions, self: ${p.topSelf
        .slice(0, 10)
        .map((s) => `\`${s.name}\` ${s.pct}%`)
        .join(', ')}.`,
    );
  }
  return out.join('\n');
}

const BEGIN = '<!-- bench:begin (generated by npm run bench; edits here are overwritten) -->';
const END = '<!-- bench:end -->';

/** Replaces the generated block of BENCHMARKS.md, keeping everything written around it. */
export function updateBenchmarksMd(path: string, block: string): void {
  const generated = `${BEGIN}\n\n${block}\n\n${END}`;
  if (!existsSync(path)) {
    writeFileSync(path, `# Benchmarks\n\n${generated}\n`);
    return;
  }
  const text = readFileSync(path, 'utf8');
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  writeFileSync(
    path,
    from >= 0 && to > from
      ? `${text.slice(0, from)}${generated}${text.slice(to + END.length)}`
      : `${text.trimEnd()}\n\n${generated}\n`,
  );
}
