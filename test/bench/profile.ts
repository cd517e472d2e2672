import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Bench, say } from './context.js';
import { reserveBody } from './latency.js';
import { closedLoop } from './stats.js';

interface CpuProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly CpuProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Share {
  readonly name: string;
  /** Share of the busy (non-idle) CPU time of the server, %. */
  readonly pct: number;
}

export interface ProfileSummary {
  readonly workload: string;
  readonly file: string;
  readonly seconds: number;
  readonly operations: number;
  /** Busy CPU of the server per operation, ms (profiler on). */
  readonly busyMsPerOp: number;
  readonly idlePct: number;
  /** Self time by origin: where the CPU instructions ran. */
  readonly selfByOrigin: readonly Share[];
  /**
   * Each sample charged to the nearest caller that is not Node core or native code: the
   * component that caused the work (socket writes of an SDK request count for the SDK).
   */
  readonly byComponent: readonly Share[];
  /** Time with at least one frame of that origin on the stack. */
  readonly inclusiveByOrigin: readonly Share[];
  readonly topSelf: readonly Share[];
  /** Service and local-server functions, inclusive. */
  readonly topServiceInclusive: readonly Share[];
}

/** Where a frame's code comes from: a package, a folder of the service, Node itself. */
function originOf(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)') return 'V8 / native (program)';
  if (!url) return 'builtins / native';
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return /^@(aws-sdk|smithy)\//.test(pkg) ? 'AWS SDK v3 (@aws-sdk, @smithy)' : pkg;
  const service =
    /\/(functions\/[^/]+)\//.exec(url)?.[1] ?? (/\/functions\//.test(url) && 'functions');
  if (service) return `service: ${service}`;
  if (url.includes('/infra/local/')) return 'local server: infra/local';
  if (url.includes('/test/bench/')) return 'bench probe';
  if (url.startsWith('node:')) {
    const path = url.replace(/^node:(internal\/)?/, '');
    const head = path.split('/')[0] ?? path;
    return `Node core: ${/^_?http/.test(head) ? 'http' : head}`;
  }
  return 'other';
}

const frameName = (n: CpuProfileNode) => {
  const file = n.callFrame.url.replace(/^.*\/(node_modules|functions|infra|test)\//, '$1/');
  // tsx-compiled service files report no useful line; packages and Node core do.
  const line = n.callFrame.lineNumber > 0 ? `:${n.callFrame.lineNumber + 1}` : '';
  return `${n.callFrame.functionName || '(anonymous)'} ${file || '(native)'}${line}`;
};

/** Origins whose inclusive time means something (not the event loop or native glue). */
const attributable = (origin: string) =>
  !origin.startsWith('Node core') &&
  !['builtins / native', 'GC', 'V8 / native (program)'].includes(origin);

const top = (m: Map<string, number>, total: number, k: number): Share[] =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, t]) => ({ name, pct: Math.round((1000 * t) / total) / 10 }));

export function summarizeProfile(profile: CpuProfile): Omit<
  ProfileSummary,
  'workload' | 'file' | 'seconds' | 'operations' | 'busyMsPerOp'
> & {
  busyMs: number;
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const selfOrigin = new Map<string, number>();
  const inclOrigin = new Map<string, number>();
  const inclService = new Map<string, number>();
  const component = new Map<string, number>();
  let idle = 0;
  let total = 0;
  profile.samples.forEach((id, i) => {
    // A sample lasts until the next one.
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(id);
    if (!node) return;
    total += dt;
    const origin = originOf(node.callFrame.url, node.callFrame.functionName);
    if (origin === '(idle)') {
      idle += dt;
      return;
    }
    self.set(frameName(node), (self.get(frameName(node)) ?? 0) + dt);
    selfOrigin.set(origin, (selfOrigin.get(origin) ?? 0) + dt);
    const origins = new Set<string>();
    const frames = new Set<string>();
    let responsible: string | undefined = origin === 'GC' ? 'GC' : undefined;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at);
      if (!n || n.callFrame.functionName === '(root)') continue;
      const o = originOf(n.callFrame.url, n.callFrame.functionName);
      origins.add(o);
      if (!responsible && attributable(o)) responsible = o;
      if (o.startsWith('service:') || o.startsWith('local server')) frames.add(frameName(n));
    }
    for (const o of origins) if (attributable(o)) inclOrigin.set(o, (inclOrigin.get(o) ?? 0) + dt);
    const c = responsible ?? 'Node core / native, no JS caller (event loop, socket reads)';
    component.set(c, (component.get(c) ?? 0) + dt);
    for (const f of frames) inclService.set(f, (inclService.get(f) ?? 0) + dt);
  });
  const busy = total - idle;
  return {
    busyMs: busy,
    idlePct: Math.round((1000 * idle) / Math.max(1, total)) / 10,
    selfByOrigin: top(selfOrigin, busy, 14),
    byComponent: top(component, busy, 14),
    inclusiveByOrigin: top(inclOrigin, busy, 14),
    topSelf: top(self, busy, 20),
    topServiceInclusive: top(inclService, busy, 20),
  };
}

/**
 * The server under the V8 sampling profiler while 10 clients reserve on their own agent
 * budgets (the throughput target's load). The profile is written for Chrome DevTools.
 */
export async function profilePhase(b: Bench): Promise<ProfileSummary | undefined> {
  const server = b.server;
  if (!server) return undefined;
  const clients = 10;
  const budgets = ['', ...Array.from({ length: clients }, (_, c) => `agent:a-${c}`)];
  const t = await b.tenant('profile', budgets);
  const outcomes = b.outcomesOf('profile');
  const seconds = b.opts.quick ? 2 : 8;
  const file = join(tmpdir(), `bench-server-${b.parts.runId}.cpuprofile`);
  const load = (tag: string, durationMs: number) =>
    closedLoop({
      clients,
      warmupMs: 0,
      durationMs,
      op: (c, i) =>
        b.runtime.expect(
          'reserve',
          'POST',
          '/v1/reservations',
          t.headers,
          reserveBody(`${tag}-${c}-${i}`, { agent: `a-${c}` }),
        ),
      outcomes,
    });
  await b.sizing(false);
  await load('warm', b.opts.quick ? 500 : 2_000);
  await server.startProfile();
  const run = await load('p', seconds * 1000);
  await server.stopProfile(file);
  await b.sizing(true);
  const summary = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const { busyMs, ...rest } = summary;
  const result: ProfileSummary = {
    workload: `reserve, agent budgets, ${clients} clients (service)`,
    file,
    seconds,
    operations: run.completed,
    busyMsPerOp: Math.round((100 * busyMs) / Math.max(1, run.completed)) / 100,
    ...rest,
  };
  say(
    `  ${run.completed} reserves in ${seconds} s under the profiler; server busy ${result.busyMsPerOp} ms CPU per reserve, idle ${result.idlePct}%`,
  );
  for (const s of result.byComponent.slice(0, 8)) say(`    ${s.pct}%  ${s.name}`);
  say(`  profile: ${file}`);
  await b.audit('profile', [t]);
  return result;
}
