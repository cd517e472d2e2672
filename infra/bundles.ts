import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import {
  adminKeyRotation,
  estimateAccuracyConsumer,
  type Route,
  routeEntries,
  streamEventsConsumer,
  sweeper,
  webhookDelivery,
} from '../functions/routes.js';
import { entryFile, esbuildOptions, repoRoot, routeDefines } from './service-function.js';

/** Every function the app deploys: its name, handler module, and route if it is one. */
export interface FunctionEntry {
  readonly name: string;
  readonly entry: string;
  readonly route?: Route;
}

export const functionEntries = (): FunctionEntry[] => [
  ...routeEntries().map(([name, route]) => ({ name, entry: route.entry, route })),
  { name: 'sweeper', entry: sweeper.entry },
  { name: 'streamEvents', entry: streamEventsConsumer.entry },
  { name: 'webhookDelivery', entry: webhookDelivery.entry },
  { name: 'estimateAccuracy', entry: estimateAccuracyConsumer.entry },
  { name: 'adminKeyRotation', entry: adminKeyRotation.entry },
];

/** Every byte is read and parsed at cold start: past this, `npm run build` fails. */
export const LIMIT_BYTES = 500_000;

/**
 * The sizes the functions should stay within (docs/deploy.md § Bundling): a write does real
 * work, a health check or a not-found answer almost none, and both start cold alike. The admin
 * plane's writes have the runtime's target: a function carries every schema of each schema
 * module it imports (zod schemas are built by calls a bundler must keep), so schemas are
 * grouped by the functions that use them (schemas/tenants.ts, schemas/bulk.ts).
 */
export function targetBytes(f: FunctionEntry): number | undefined {
  if (!f.route) return undefined;
  if (/\/(health|not-found)$/.test(f.entry)) return 60_000;
  // 150 kB, and the request-rate limiter every authenticated function carries since issue 25
  // (3.2 kB minified: docs/decisions.md § Rate limits), and the settlement's one read since
  // reservation ids name their budgets (updateTenant, whose close releases every reservation,
  // carries it with the admission: 155.7 kB), and the lean path of every operation's two
  // DynamoDB calls (store/wire.ts, 5.6 kB minified: docs/decisions.md § Less CPU per request).
  if (f.route.table.items === 'write') return 165_000;
  return undefined;
}

export interface Bundle extends FunctionEntry {
  readonly file: string;
  readonly bytes: number;
  readonly metafile: Metafile;
}

export const outDir = join(repoRoot, 'dist');

/**
 * One function bundled exactly as the stack bundles it (the same esbuild options), into
 * dist/<entry>/index.cjs (.cjs: the repository is "type": "module"; in Lambda the asset's
 * index.js is CommonJS), or only measured with `write: false`.
 */
export async function bundle(f: FunctionEntry, write = true): Promise<Bundle> {
  const file = join(outDir, f.entry, 'index.cjs');
  const result = await build({
    ...esbuildOptions,
    external: [...esbuildOptions.external],
    mainFields: [...esbuildOptions.mainFields],
    define: {
      ...esbuildOptions.define,
      ...(f.route && routeDefines(f.name, f.route)),
    },
    banner: { js: esbuildOptions.banner },
    entryPoints: [entryFile(f.entry)],
    bundle: true,
    outfile: file,
    metafile: true,
    write,
    logLevel: 'warning',
  });
  const output = Object.values(result.metafile.outputs).find((o) => o.entryPoint);
  return { ...f, file, bytes: output?.bytes ?? 0, metafile: result.metafile };
}

/** Bytes each package (or our own folder) contributes to a bundle, largest first. */
export function weightByPackage(metafile: Metafile): [string, number][] {
  const weights = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
      const key = pkg ?? file.split('/').slice(0, 2).join('/');
      weights.set(key, (weights.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...weights].sort((a, b) => b[1] - a[1]);
}

// A fresh process loads the bundle as Lambda's Node.js runtime does: require() of a CommonJS
// handler file, import() of an ES module one (.mjs: bundles before the switch to CommonJS), the
// AWS SDK resolved from node_modules (the runtime ships it; the bundle leaves it out),
// NODE_OPTIONS and the environment a deployed function has. It prints milliseconds.
const LOADER = `const f = process.env.BUNDLE_FILE; const t = performance.now();
(f.endsWith('.mjs') ? import(f) : Promise.resolve(require(f)))
  .then(() => process.stdout.write(String(performance.now() - t)));`;
const LAMBDA_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
  AWS_LAMBDA_FUNCTION_NAME: 'import-time',
  LAMBDA_TASK_ROOT: '/var/task',
  TABLE_NAME: 'budget-reservations',
  POWERTOOLS_SERVICE_NAME: 'BudgetReservations',
  POWERTOOLS_METRICS_NAMESPACE: 'BudgetReservations',
  LOG_LEVEL: 'info',
};

/**
 * Module import time of each bundle: median milliseconds of `reps` fresh processes, run round
 * robin across the bundles so a busy moment of the machine spreads over all of them.
 */
export function importTimes(
  bundles: readonly Pick<Bundle, 'name' | 'file'>[],
  reps: number,
  env: Readonly<Record<string, string>> = {},
): Map<string, number> {
  const samples = new Map<string, number[]>(bundles.map((b) => [b.name, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const b of bundles) {
      const out = execFileSync(process.execPath, ['--enable-source-maps', '-e', LOADER], {
        cwd: repoRoot,
        env: { PATH: process.env.PATH, ...LAMBDA_ENV, ...env, BUNDLE_FILE: b.file },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      samples.get(b.name)?.push(Number(out));
    }
  }
  return new Map(
    [...samples].map(([name, times]) => {
      const sorted = [...times].sort((a, b) => a - b);
      return [name, sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN];
    }),
  );
}

export const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;

/**
 * The bundle table of docs/deploy.md: every function, its minified size and target, and its
 * import time where measured.
 */
export function bundleTable(bundles: readonly Bundle[], times?: ReadonlyMap<string, number>) {
  const rows = [...bundles].sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name));
  const lines = [
    `| Function | Minified | Target | Import (ms) |`,
    `| -------- | -------: | -----: | ----------: |`,
    ...rows.map((b) => {
      const target = targetBytes(b);
      const over = target !== undefined && b.bytes > target ? ' (over)' : '';
      const time = times?.get(b.name);
      return `| ${b.name} | ${kb(b.bytes)} | ${target ? `${kb(target)}${over}` : ''} | ${time === undefined ? '' : time.toFixed(0)} |`;
    }),
  ];
  return lines.join('\n');
}
