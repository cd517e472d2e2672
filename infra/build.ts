import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { budgetEventsConsumer, routeEntries, sweeper } from '../functions/routes.js';
import { buildConsole } from './build-console.js';
import { writeOpenApiDocuments } from './openapi.js';
import { entryFile, esbuildOptions, repoRoot } from './service-function.js';

/**
 * `npm run build`: writes the OpenAPI documents (infra/openapi.ts), then bundles every function exactly as the stack does (same esbuild options) into
 * dist/<entry>/index.mjs and prints each bundle's size, with what weighs most in the largest;
 * then the operator console into console/dist.
 * Exits 1 when a bundle exceeds the budget: every byte is read and parsed at cold start.
 */
const LIMIT_BYTES = 500_000;
const outDir = join(repoRoot, 'dist');

interface Bundle {
  readonly name: string;
  readonly entry: string;
  readonly bytes: number;
  readonly metafile: Metafile;
}

async function bundle(name: string, entry: string): Promise<Bundle> {
  // .cjs: the repository is "type": "module"; in Lambda the asset's index.js is CommonJS.
  const outfile = join(outDir, entry, 'index.cjs');
  const result = await build({
    ...esbuildOptions,
    external: [...esbuildOptions.external],
    mainFields: [...esbuildOptions.mainFields],
    banner: { js: esbuildOptions.banner },
    entryPoints: [entryFile(entry)],
    bundle: true,
    outfile,
    metafile: true,
    logLevel: 'warning',
  });
  return { name, entry, bytes: (await stat(outfile)).size, metafile: result.metafile };
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

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;

async function main(): Promise<void> {
  // First: the GET /openapi.json functions bundle the documents (generated from the schemas).
  await writeOpenApiDocuments();
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const functions = [
    ...routeEntries().map(([id, route]) => [id, route.entry] as const),
    ['sweeper', sweeper.entry] as const,
    ['budgetEvents', budgetEventsConsumer.entry] as const,
  ];
  const bundles = await Promise.all(functions.map(([name, entry]) => bundle(name, entry)));
  bundles.sort((a, b) => b.bytes - a.bytes);

  const width = Math.max(...bundles.map((b) => b.name.length));
  console.log(`${'function'.padEnd(width)}  ${'minified'.padStart(9)}  entry`);
  for (const b of bundles) {
    const flag = b.bytes > LIMIT_BYTES ? '  OVER BUDGET' : '';
    console.log(
      `${b.name.padEnd(width)}  ${kb(b.bytes).padStart(9)}  functions/${b.entry}.ts${flag}`,
    );
  }
  const [largest] = bundles;
  if (largest) {
    console.log(`\nlargest: ${largest.name}; what it is made of:`);
    for (const [pkg, bytes] of weightByPackage(largest.metafile).slice(0, 6)) {
      console.log(`  ${pkg.padEnd(28)} ${kb(bytes).padStart(9)}`);
    }
  }
  console.log(`\nbundles in dist/ (AWS SDK external: the runtime provides it; docs/deploy.md)`);
  // The operator console: served from console/dist locally, built beside its function by synth.
  const site = await buildConsole();
  console.log(
    `console in console/dist: ${kb(site.bytes.js)} script, ${kb(site.bytes.css)} stylesheet (minified)`,
  );
  const over = bundles.filter((b) => b.bytes > LIMIT_BYTES);
  if (over.length > 0) {
    console.error(`${over.length} bundle(s) over ${kb(LIMIT_BYTES)}`);
    process.exitCode = 1;
  }
}

await main();
