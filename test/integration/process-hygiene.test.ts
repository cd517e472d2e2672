import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/dynamodb.js';
import { spawnRunner, untilHealthy } from '../helpers/runner.js';

// The runner as users and supervisors start it, in processes of its own; everything it starts
// has this unique directory on its command line (DynamoDB Local's -dbPath and its watchdog).
const root = mkdtempSync(join(tmpdir(), 'brs-hygiene-'));
/** Every process a test launched, as seen once the runner was up (npm, its shell, the server). */
const launched = new Set<number>();

afterAll(() => {
  // Whatever a failed test left: the launched processes and their children (checked by command
  // line, in case a pid was reused), then anything naming the directory.
  for (const pid of launched) for (const d of descendantsOf(pid)) launched.add(d);
  const ours = processes().filter(
    (p) => launched.has(p.pid) && /npm|infra\/local\/main/.test(p.args),
  );
  for (const { pid } of ours) kill(pid, 'SIGKILL');
  for (const { pid } of processesNaming(root)) kill(pid, 'SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly args: string;
}

/** Live processes (zombies, already dead but not yet reaped, are left out). */
function processes(): Proc[] {
  return execFileSync('ps', ['-eo', 'pid=,ppid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m) => m !== null && !m[3]?.startsWith('Z'))
    .map((m) => ({ pid: Number(m?.[1]), ppid: Number(m?.[2]), args: m?.[4] ?? '' }));
}

const processesNaming = (dir: string) => processes().filter((p) => p.args.includes(dir));
const alive = (pid: number) => processes().some((p) => p.pid === pid);

function descendantsOf(pid: number): number[] {
  const all = processes();
  const out: number[] = [];
  const walk = (parent: number) => {
    for (const p of all.filter((q) => q.ppid === parent)) {
      out.push(p.pid);
      walk(p.pid);
    }
  };
  walk(pid);
  return out;
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Polls until `done()` holds; resolves with the milliseconds it took, or -1 after `ms`. */
async function within(ms: number, done: () => boolean): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (done()) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 100));
  }
  return done() ? Date.now() - start : -1;
}

interface Runner {
  readonly child: ChildProcess;
  readonly dataDir: string;
  /** The Node process serving both ports (under npm: npm's grandchild). */
  readonly serverPid: number;
  readonly output: () => string;
}

/** `npm start` (or the runner itself, `node --import tsx`) on a fresh data dir and free ports. */
async function startRunner(name: string, how: 'npm start' | 'node'): Promise<Runner> {
  const dataDir = join(root, name);
  const [runtimePort, adminPort] = [await freePort(), await freePort()];
  const runner = spawnRunner(
    {
      DATA_DIR: dataDir,
      RUNTIME_PORT: String(runtimePort),
      ADMIN_PORT: String(adminPort),
      ADMIN_API_KEY: 'hygiene-admin',
      TABLE_NAME: 'hygiene-table',
      LOG_LEVEL: 'warn',
    },
    { how },
  );
  const { child, output } = runner;
  if (child.pid !== undefined) launched.add(child.pid);
  await untilHealthy(runner, { runtime: runtimePort, admin: adminPort });
  const pid = child.pid ?? -1;
  for (const descendant of descendantsOf(pid)) launched.add(descendant);
  const server =
    how === 'node'
      ? pid
      : processes().find(
          (p) =>
            descendantsOf(pid).includes(p.pid) &&
            /^\S*node\S* .*infra\/local\/main\.ts/.test(p.args),
        )?.pid;
  if (server === undefined) throw new Error(`no server process under npm ${pid}`);
  return { child, dataDir, serverPid: server, output };
}

/** DynamoDB Local and its watchdog: the processes naming the data dir. */
const storeOf = (runner: Runner) => processesNaming(runner.dataDir);

// Each test starts whole runners (Node, Java): on a loaded machine one start-up alone can take 20 s.
describe('process hygiene of the local runner', { timeout: 150_000 }, () => {
  it('stops DynamoDB Local within seconds when the server is SIGKILLed', async () => {
    const runner = await startRunner('server-sigkill', 'node');
    expect(storeOf(runner).some((p) => p.args.includes('DynamoDBLocal.jar'))).toBe(true);

    kill(runner.serverPid, 'SIGKILL');

    const took = await within(5_000, () => storeOf(runner).length === 0);
    expect(storeOf(runner).map((p) => p.args)).toEqual([]);
    expect(took).toBeGreaterThanOrEqual(0);
  });

  it('stops the server and DynamoDB Local when only the npm process gets SIGTERM', async () => {
    const runner = await startRunner('npm-sigterm', 'npm start');
    const npmPid = runner.child.pid ?? -1;
    const tree = descendantsOf(npmPid);
    expect(tree).toContain(runner.serverPid);

    kill(npmPid, 'SIGTERM'); // a supervisor stopping `npm start` signals npm's pid, nothing else

    const took = await within(
      6_000,
      () => !alive(runner.serverPid) && storeOf(runner).length === 0,
    );
    expect(alive(runner.serverPid)).toBe(false);
    expect(storeOf(runner).map((p) => p.args)).toEqual([]);
    expect(tree.filter(alive)).toEqual([]);
    expect(took).toBeGreaterThanOrEqual(0);
    expect(runner.output()).toContain('shutting down');
  });

  it('stops the server and DynamoDB Local when the npm process is SIGKILLed', async () => {
    const runner = await startRunner('npm-sigkill', 'npm start');
    const npmPid = runner.child.pid ?? -1;
    const tree = descendantsOf(npmPid);

    kill(npmPid, 'SIGKILL');

    await within(6_000, () => tree.every((pid) => !alive(pid)) && storeOf(runner).length === 0);
    expect(tree.filter(alive)).toEqual([]);
    expect(storeOf(runner).map((p) => p.args)).toEqual([]);
  });
});
