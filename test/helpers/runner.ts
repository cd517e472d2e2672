import { type ChildProcess, spawn } from 'node:child_process';
import { request } from './http.js';

export interface SpawnedRunner {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  /** Everything it printed, stdout then stderr. */
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

/**
 * The local runner in a process of its own, as a user starts it: `npm start` itself, or the
 * server process it runs (`node --import tsx infra/local/main.ts`), with `env` over this
 * process's (no DYNAMODB_ENDPOINT: it starts its own DynamoDB Local). Its output is collected.
 */
export function spawnRunner(
  env: Record<string, string>,
  { how = 'node', args = [] }: { how?: 'npm start' | 'node'; args?: string[] } = {},
): SpawnedRunner {
  const [command, argv] =
    how === 'npm start'
      ? ['npm', ['start', ...(args.length > 0 ? ['--', ...args] : [])]]
      : [process.execPath, ['--import', 'tsx', 'infra/local/main.ts', ...args]];
  const child = spawn(command, argv, {
    env: { ...process.env, DYNAMODB_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, stderr: () => stderr, output: () => stdout + stderr, exited };
}

/** Resolves once both servers answer their health check with 200; throws with the output if not. */
export async function untilHealthy(
  runner: SpawnedRunner,
  ports: { readonly runtime: number; readonly admin: number },
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const [runtime, admin] = await Promise.all([
        request('GET', `http://127.0.0.1:${ports.runtime}/actuator/health`),
        request('GET', `http://127.0.0.1:${ports.admin}/actuator/health`),
      ]);
      if (runtime.status === 200 && admin.status === 200) return;
    } catch {
      // not listening yet
    }
    if (runner.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`runner did not come up: ${runner.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
