import { mkdir, rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import { buildConsole } from './build-console.js';
import {
  bundle,
  bundleTable,
  functionEntries,
  importTimes,
  kb,
  LIMIT_BYTES,
  outDir,
  targetBytes,
  weightByPackage,
} from './bundles.js';
import { writeClientTypes } from './client-types.js';
import { replaceSection } from './docs.js';
import { writeOpenApiDocuments } from './openapi.js';

/**
 * `npm run build`: writes the OpenAPI documents (infra/openapi.ts), bundles every function
 * exactly as the stack does into dist/, and prints each bundle's size against its target
 * (infra/bundles.ts) and its module import time (median of BUILD_IMPORT_REPS fresh processes,
 * default 5; 0 skips it), with what weighs most in the largest; then builds the operator
 * console into console/dist. `--docs` also writes the table into docs/deploy.md.
 * Exits 1 when a bundle exceeds 500 kB.
 */
async function main(): Promise<void> {
  // First: the GET /openapi.json functions bundle the documents (generated from the schemas).
  await writeOpenApiDocuments();
  await writeClientTypes(); // the typed client (client/generated) from those documents
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const bundles = await Promise.all(functionEntries().map((f) => bundle(f)));
  bundles.sort((a, b) => b.bytes - a.bytes);
  const reps = Number(process.env.BUILD_IMPORT_REPS ?? 5);
  const times = reps > 0 ? importTimes(bundles, reps) : undefined;

  const width = Math.max(...bundles.map((b) => b.name.length));
  const header = ['minified', 'target', times ? `import ms` : ''];
  console.log(`${'function'.padEnd(width)}  ${header.map((h) => h.padStart(9)).join('  ')}  entry`);
  for (const b of bundles) {
    const target = targetBytes(b);
    const flag =
      b.bytes > LIMIT_BYTES ? '  OVER 500 kB' : target && b.bytes > target ? '  over target' : '';
    const time = times?.get(b.name);
    const cells = [kb(b.bytes), target ? kb(target) : '', time ? time.toFixed(0) : ''];
    console.log(
      `${b.name.padEnd(width)}  ${cells.map((c) => c.padStart(9)).join('  ')}  functions/${b.entry}.ts${flag}`,
    );
  }
  const [largest] = bundles;
  if (largest) {
    console.log(`\nlargest: ${largest.name}; what it is made of:`);
    for (const [pkg, bytes] of weightByPackage(largest.metafile).slice(0, 6)) {
      console.log(`  ${pkg.padEnd(28)} ${kb(bytes).padStart(9)}`);
    }
  }
  const overTarget = bundles.filter((b) => {
    const target = targetBytes(b);
    return target !== undefined && b.bytes > target;
  });
  console.log(
    `\n${bundles.length} bundles in dist/ (AWS SDK external: the runtime provides it; docs/deploy.md § Bundling)` +
      `; ${overTarget.length} over their size target` +
      (times ? `; import times: median of ${reps} processes each, on ${cpus().length} cores` : ''),
  );
  if (process.argv.includes('--docs')) {
    await replaceSection('bundles', bundleTable(bundles, times));
    console.log('docs/deploy.md: bundle table written');
  }
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
