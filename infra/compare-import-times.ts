import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { functionEntries, importTimes } from './bundles.js';
import { repoRoot } from './service-function.js';

/**
 * Import times of this checkout's bundles (dist/, from `npm run build`) beside another build's,
 * measured round robin in the same session: `tsx infra/compare-import-times.ts <other dist>
 * [NAME=value …]`, the variables set for the other build's functions only (e.g.
 * POWERTOOLS_TRACE_ENABLED=true, which loaded the X-Ray SDK before the tracer was removed).
 * Prints a Markdown table: median of ROUNDS rounds (default 3), each the median of REPS fresh
 * processes (default 7).
 */
const [otherDist, ...assignments] = process.argv.slice(2);
if (!otherDist) throw new Error('usage: compare-import-times.ts <other dist dir> [NAME=value …]');
const otherEnv = Object.fromEntries(assignments.map((a) => a.split('=') as [string, string]));
const names = (process.env.FUNCTIONS ?? '').split(',').filter((n) => n !== '');
const rounds = Number(process.env.ROUNDS ?? 3);
const reps = Number(process.env.REPS ?? 7);

const fileIn = (dist: string, entry: string) =>
  ['index.cjs', 'index.mjs'].map((f) => join(dist, entry, f)).find((f) => existsSync(f));
const entries = functionEntries().filter((f) => names.length === 0 || names.includes(f.name));
const pick = (dist: string) =>
  entries.flatMap((f) => {
    const file = fileIn(dist, f.entry);
    return file ? [{ name: f.name, file }] : [];
  });
const mine = pick(join(repoRoot, 'dist'));
const other = pick(otherDist);

const median = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
const before = new Map<string, number[]>();
const after = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const [name, ms] of importTimes(other, reps, otherEnv))
    before.set(name, [...(before.get(name) ?? []), ms]);
  for (const [name, ms] of importTimes(mine, reps))
    after.set(name, [...(after.get(name) ?? []), ms]);
}
console.log('| Function | Before (ms) | After (ms) | Change |');
console.log('| -------- | ----------: | ---------: | -----: |');
for (const { name } of mine) {
  const b = median(before.get(name) ?? []);
  const a = median(after.get(name) ?? []);
  if (Number.isNaN(b)) continue;
  console.log(
    `| ${name} | ${b.toFixed(0)} | ${a.toFixed(0)} | ${(((a - b) / b) * 100).toFixed(0)} % |`,
  );
}
