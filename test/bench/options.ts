import { parseArgs } from 'node:util';

export const PHASES = [
  'latency',
  'throughput',
  'minimal',
  'listing',
  'expiry',
  'profile',
  'contention',
  'busy-tenant',
  'isolation',
] as const;
/** The phases that need the contention emulator: run only when asked for. */
const EMULATED: readonly Phase[] = ['contention', 'busy-tenant', 'isolation'];
export type Phase = (typeof PHASES)[number];

export interface BenchOptions {
  readonly quick: boolean;
  /** Target a running service instead of starting one (all three are needed together). */
  readonly runtimeUrl?: string | undefined;
  readonly adminUrl?: string | undefined;
  readonly adminKey?: string | undefined;
  /** DynamoDB the target uses: enables the raw engine, the table audit and fast seeding. */
  readonly dynamodbEndpoint?: string | undefined;
  readonly table: string;
  /** PID of a running server, to read its peak RSS from /proc. */
  readonly serverPid?: number | undefined;
  readonly samples: number;
  readonly warmupSamples: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly clients: readonly number[];
  readonly listSize: number;
  readonly phases: ReadonlySet<Phase>;
  readonly out?: string | undefined;
  readonly markdown: boolean;
  /** Only rewrite BENCHMARKS.md from this results file, measuring nothing. */
  readonly render?: string | undefined;
}

const USAGE = `npm run bench -- [options]

  --quick                     short run for quick checks (< 60 s)
  --runtime-url URL           target a running runtime server (with --admin-url, --admin-key)
  --admin-url URL             its admin server
  --admin-key KEY             its ADMIN_API_KEY
  --dynamodb-endpoint URL     the DynamoDB Local it uses (raw engine, table audit, fast seeding)
  --table NAME                its table (default budget-reservations; own table when started here)
  --server-pid PID            its process, to report peak RSS
  --samples N                 single-client samples per operation (default 400, quick 12)
  --duration S                seconds measured per throughput run (default 5, quick 0.4)
  --warmup S                  warm-up seconds per throughput run (default 1, quick 0.1)
  --clients 1,10,50           concurrency levels
  --list-size N               reservations of the large listing tenant (default 20000, quick 1000)
  --phases a,b                subset of ${PHASES.join(',')}
  --emulate-contention        add the contention and busy-tenant phases: the simulator, and the
                              service with DynamoDB's transaction conflicts and throttling
                              emulated (EMULATE_CONTENTION, if set, gives the emulator's settings)
  --out FILE                  results file (default bench/results/<date>[-quick].json;
                              <date>-contention.json for the emulated phases alone)
  --markdown / --no-markdown  rewrite the generated table in BENCHMARKS.md (default: full runs only)
  --render FILE               only rewrite BENCHMARKS.md from a results file
`;

export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      'runtime-url': { type: 'string' },
      'admin-url': { type: 'string' },
      'admin-key': { type: 'string' },
      'dynamodb-endpoint': { type: 'string' },
      table: { type: 'string' },
      'server-pid': { type: 'string' },
      samples: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      clients: { type: 'string' },
      'list-size': { type: 'string' },
      phases: { type: 'string' },
      out: { type: 'string' },
      markdown: { type: 'boolean' },
      'no-markdown': { type: 'boolean' },
      render: { type: 'string' },
      'emulate-contention': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const remote = [values['runtime-url'], values['admin-url'], values['admin-key']];
  if (remote.some((v) => v !== undefined) && !remote.every((v) => v !== undefined)) {
    throw new Error('--runtime-url, --admin-url and --admin-key go together');
  }
  const endpoint = values['dynamodb-endpoint'];
  // The bench writes tenants and reservations, and its raw engine uses DynamoDB Local's dummy
  // credentials: only a local endpoint makes sense, and no real table is ever touched.
  if (endpoint && !/^http:\/\/(127\.0\.0\.1|localhost):\d+\/?$/.test(endpoint)) {
    throw new Error(`--dynamodb-endpoint must be a local DynamoDB Local, not ${endpoint}`);
  }
  if (endpoint && !remote[0]) throw new Error('--dynamodb-endpoint goes with --runtime-url');
  // The emulated phases run when asked for: by --emulate-contention, or by name.
  const listed = values.phases
    ? values.phases.split(',').map((p) => {
        if (!(PHASES as readonly string[]).includes(p)) throw new Error(`unknown phase ${p}`);
        return p as Phase;
      })
    : PHASES.filter((p) => !(quick && p === 'profile') && !EMULATED.includes(p));
  const phases: Phase[] = values['emulate-contention']
    ? [...listed, ...EMULATED.filter((p) => !listed.includes(p))]
    : listed;
  const samples = positive(values.samples, quick ? 12 : 400, 'samples');
  return {
    quick,
    runtimeUrl: values['runtime-url'],
    adminUrl: values['admin-url'],
    adminKey: values['admin-key'],
    dynamodbEndpoint: endpoint,
    table: values.table ?? (remote[0] ? 'budget-reservations' : `bench-${Date.now()}`),
    serverPid: values['server-pid'] ? positive(values['server-pid'], 0, 'server-pid') : undefined,
    samples,
    warmupSamples: quick ? 3 : Math.max(5, Math.round(samples / 10)),
    durationMs: positive(values.duration, quick ? 0.4 : 5, 'duration') * 1000,
    warmupMs: positive(values.warmup, quick ? 0.1 : 1, 'warmup', true) * 1000,
    clients: values.clients
      ? values.clients.split(',').map((c) => positive(c, 1, 'clients'))
      : [1, 10, 50],
    listSize: positive(values['list-size'], quick ? 1_000 : 20_000, 'list-size'),
    phases: new Set(phases),
    out: values.out,
    markdown: values['no-markdown'] ? false : (values.markdown ?? !quick),
    render: values.render,
  };
}

function positive(text: string | undefined, fallback: number, name: string, zero = false): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || (!zero && n === 0)) throw new Error(`--${name}: ${text}`);
  return n;
}

/** The command as typed, with secrets masked, so anyone can rerun it. */
export function commandLine(argv: readonly string[]): string {
  const shown = argv.map((a, i) => (argv[i - 1] === '--admin-key' ? '***' : a));
  return shown.length > 0 ? `npm run bench -- ${shown.join(' ')}` : 'npm run bench';
}
