import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/service-function.js';
import { buildCli } from '../helpers/cli.js';
import { errorBodies, readmeBlocks, readmeScript } from '../helpers/readme.js';
import { useTestStack } from '../helpers/scaffold.js';

/**
 * Every shell block of README.md, verbatim and in order, in one bash, against a stack of this
 * file's own (ADMIN_API_KEY=change-me, as the README starts it, events on) on random ports: the blocks read
 * their URLs from ADMIN and RUNTIME (curl) and ADMIN_URL and RUNTIME_URL (the CLI), with the
 * local defaults when unset. A block that exits non-zero, or any answer that is SPEC's error
 * body, fails the test with the block's line. So the README cannot rot.
 *
 * `npx budget-reservations` runs the CLI bundled once (test/helpers/cli.ts: 0.1 s a command
 * instead of about a second through npx and tsx, some 30 commands here); that npx finds the
 * command in a clone is test/integration/cli.test.ts's to show. Any other npx is npx.
 *
 * The Cycles SDK's blocks need the `runcycles` package, which the npm registry this project
 * reaches does not have: they run when RUNCYCLES_TARBALL names a packed copy of it (then
 * `npm install runcycles` installs that file); otherwise the test lists them as left out.
 */
// Events on, as `npm start` has them: README § Events and webhooks lists them and makes webhooks;
// the estimate accuracy block reads the same stream and shows figures.
const stack = useTestStack({
  env: {
    ADMIN_API_KEY: 'change-me',
    EVENTS_ENABLED: 'true',
    ESTIMATE_ACCURACY: 'true',
    STREAM_POLL_INTERVAL_MS: '100',
  },
});
const tarball = process.env.RUNCYCLES_TARBALL;

let home: string | undefined;
let removeCli: (() => Promise<void>) | undefined;
const made = ['funds.csv'].filter((f) => !existsSync(join(repoRoot, f)));
afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
  await removeCli?.();
  // What the blocks write into the working copy (a reader's clone) goes again.
  await Promise.all(made.map((f) => rm(join(repoRoot, f), { force: true })));
});

function bash(script: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A bin folder whose `npx budget-reservations` is the bundled CLI; any other npx is npm's. */
async function npxShim(dir: string): Promise<string> {
  const cli = await buildCli();
  removeCli = cli.remove;
  const npx = execFileSync('which', ['npx'], { encoding: 'utf8' }).trim();
  const bin = join(dir, 'bin');
  await mkdir(bin, { recursive: true });
  await writeFile(
    join(bin, 'npx'),
    `#!/bin/sh\nif [ "$1" = budget-reservations ]; then shift; exec "${process.execPath}" "${cli.file}" "$@"; fi\nexec "${npx}" "$@"\n`,
  );
  await chmod(join(bin, 'npx'), 0o755);
  return bin;
}

/** The block a line of output belongs to: the last banner before it. */
const blockOf = (output: string) =>
  [...output.matchAll(/^== README\.md block at line (\d+)$/gm)].at(-1)?.[1] ?? '?';

describe('README.md', { timeout: 300_000 }, () => {
  it('runs block by block against a started stack, every step answered without an error', async () => {
    const text = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const { script, run, left } = readmeScript(readmeBlocks(text), { sdk: tarball !== undefined });
    home = await mkdtemp(join(tmpdir(), 'readme-home-'));
    const env: Record<string, string> = {
      PATH: `${await npxShim(home)}:${process.env.PATH ?? ''}`,
      // No profile, npm cache or SDK journal of the machine's user is read or written.
      HOME: home,
      npm_config_cache: join(home, '.npm'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ADMIN: stack.adminUrl,
      RUNTIME: stack.runtimeUrl,
      ADMIN_URL: stack.adminUrl,
      RUNTIME_URL: stack.runtimeUrl,
    };
    const sdkScript = tarball
      ? script.replace('npm install runcycles tsx', `npm install ${tarball} tsx`)
      : script;

    const started = performance.now();
    const result = await bash(sdkScript, env);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `README: ${run.length} blocks run in ${seconds.toFixed(1)} s (lines ${run.join(', ')}); left out: ${left.map((l) => `line ${l.line} (${l.why})`).join('; ')}`,
    );

    const refusals = errorBodies(result.stdout);
    expect(
      result.code,
      `exit ${result.code} in the block at line ${blockOf(result.stderr)}:\n${result.stderr.slice(-3000)}`,
    ).toBe(0);
    expect(refusals, `error bodies in the block at line ${blockOf(result.stdout)}`).toEqual([]);
    // The walkthroughs did what they say: the reservation committed, the CLI's tenant funded.
    expect(result.stdout).toContain('"status":"COMMITTED"');
    // The streamed call: charged in parts, committed whole, refunded in part; its accuracy.
    expect(result.stdout).toContain('"charged_total":{"unit":"USD_MICROCENTS","amount":5500000}');
    expect(result.stdout).toContain('"refunded_total":{"unit":"USD_MICROCENTS","amount":2500000}');
    expect(result.stdout).toContain('"reason_code":"MAX_RESERVATION_AMOUNT_EXCEEDED"');
    expect(result.stdout).toMatch(/"kind":"llm\.stream","settled":1,/);
    expect(result.stdout).toMatch(/tenant:globex\/workspace:prod/);
    if (tarball) expect(result.stdout).toContain('summary of 15 characters');
  });

  it('leaves out only what a reader runs in a terminal of its own, or the SDK where it cannot be installed', async () => {
    const text = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const blocks = readmeBlocks(text);
    const { left } = readmeScript(blocks, { sdk: true });
    expect(left.map((l) => l.why)).toEqual([
      expect.stringMatching(/^skip \(starts the service/),
      expect.stringMatching(/^skip \(two long-running servers/),
    ]);
    // Every shell block is run or left out with a reason: none is silently ignored.
    const shell = blocks.filter((b) => b.lang === 'sh');
    expect(shell.length).toBeGreaterThanOrEqual(8);
    expect(
      blocks.filter((b) => b.marker && !/^(skip \(.+\)|sdk( file \S+)?)$/.test(b.marker)),
    ).toEqual([]);
  });
});
