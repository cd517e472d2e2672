import { execFileSync } from 'node:child_process';

const POLL_MS = 500;
const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ash', 'ksh', 'mksh', 'busybox']);

/**
 * Under `npm start`, calls `onGone` once when the npm process that launched this one is gone.
 *
 * npm runs the script as `sh -c '<script>'`, and on SIGTERM or SIGINT it signals only that shell,
 * which (dash, at least) dies without passing the signal on: the server would be re-parented
 * and keep running with DynamoDB Local. So this process watches its launcher: every 500 ms it
 * checks that its parent is still its parent and, when that parent is the script's shell, that
 * the shell's parent (npm) is still alive — which also covers npm being SIGKILLed.
 *
 * Only when launched by an npm script (`npm_lifecycle_event` is set): started by hand or by a
 * supervisor, the server keeps ordinary process semantics (e.g. `nohup … &` survives logout).
 */
export function watchLauncher(onGone: (what: string) => void): void {
  if (!process.env.npm_lifecycle_event) return;
  const parent = process.ppid;
  const watched = [{ pid: parent, what: `parent process ${parent}` }];
  const grandparent = shellParent(parent);
  if (grandparent !== undefined && grandparent > 1)
    watched.push({ pid: grandparent, what: `npm process ${grandparent}` });
  const timer = setInterval(() => {
    const gone = process.ppid !== parent ? watched[0] : watched.find(({ pid }) => !isAlive(pid));
    if (!gone) return;
    clearInterval(timer);
    onGone(gone.what);
  }, POLL_MS);
  timer.unref();
}

/** The parent of `pid` when `pid` is a shell, via `ps` (absent on Windows: then undefined). */
function shellParent(pid: number): number | undefined {
  try {
    const [ppid, comm = ''] = execFileSync('ps', ['-o', 'ppid=,comm=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .trim()
      .split(/\s+/);
    const name = comm.split('/').pop() ?? '';
    return SHELLS.has(name.replace(/^-/, '')) ? Number(ppid) : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
