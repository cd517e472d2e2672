import { type ChildProcess, spawn } from 'node:child_process';
import type { ProbeRequest, ProbeSnapshot } from './probe.js';

/**
 * The service under test, in a process of its own: `infra/local/main.ts` (what `npm start`
 * runs) with the probe preloaded, so its memory and CPU are measured apart from the load
 * generator and from the Java process of DynamoDB Local.
 */
export class ServerProcess {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private output = '';
  private exited: string | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly runtimeUrl: string,
    readonly adminUrl: string,
  ) {
    child.on('exit', (code, signal) => {
      this.exited = `the server exited (code ${code}, signal ${signal})`;
      for (const p of this.pending.values()) p.reject(new Error(this.failure()));
      this.pending.clear();
    });
    child.on('error', (error) => {
      this.exited ??= `the server's channel failed: ${error.message}`;
    });
    child.on('message', (m: { id: number; result?: unknown; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m.result);
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(env: Record<string, string>): Promise<ServerProcess> {
    const { freePort } = await import('../../infra/local/dynamodb.js');
    const [runtimePort, adminPort] = [await freePort(), await freePort()];
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', './test/bench/probe.ts', 'infra/local/main.ts'],
      {
        env: {
          ...process.env,
          ...env,
          RUNTIME_PORT: String(runtimePort),
          ADMIN_PORT: String(adminPort),
        },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      },
    );
    const server = new ServerProcess(
      child,
      `http://127.0.0.1:${runtimePort}`,
      `http://127.0.0.1:${adminPort}`,
    );
    // BENCH_SERVER_LOG=<file>: the server's whole output there too (a diagnosis aid).
    const logFile = process.env.BENCH_SERVER_LOG;
    const { appendFileSync } = await import('node:fs');
    const keep = (d: Buffer) => {
      server.output = (server.output + d.toString()).slice(-4_000);
      if (logFile) appendFileSync(logFile, d);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    // Its stdout/stderr are kept (last 4 KB) for a failure message.
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (exited) throw new Error(`the server exited during startup:\n${server.output}`);
      try {
        const res = await fetch(`${server.runtimeUrl}/actuator/health`);
        if (res.ok) break;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the server did not start within 60 s:\n${server.output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return server;
  }

  private failure(): string {
    return `${this.exited ?? 'the server failed'}; its last output:\n${this.output}`;
  }

  private ask<T>(command: ProbeRequest['command'], path?: string): Promise<T> {
    const id = this.nextId++;
    if (this.exited) return Promise.reject(new Error(this.failure()));
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, command, ...(path && { path }) } satisfies ProbeRequest);
    });
  }

  snapshot(): Promise<ProbeSnapshot> {
    return this.ask('snapshot');
  }

  /** Capacity sizing in the server's counting middleware (off during load runs). */
  sizing(on: boolean): Promise<void> {
    return this.ask(on ? 'sizing-on' : 'sizing-off');
  }

  startProfile(): Promise<void> {
    return this.ask('profile-start');
  }

  stopProfile(path: string): Promise<void> {
    return this.ask('profile-stop', path);
  }

  /** Recent server output, for a failure message. */
  get recentOutput(): string {
    return this.output;
  }

  /** Last resort when the bench itself is exiting: synchronous, no waiting. */
  killNow(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  stop(): Promise<void> {
    return new Promise((done) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return done();
      this.child.once('exit', () => done());
      this.child.kill('SIGTERM');
      setTimeout(() => this.child.kill('SIGKILL'), 5_000).unref();
    });
  }
}
