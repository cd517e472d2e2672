import { UnexpectedReply } from './http.js';

export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly max: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Nearest-rank percentiles, ms. */
export function summarize(ms: readonly number[]): LatencySummary {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    n: sorted.length,
    p50: round(at(0.5)),
    p95: round(at(0.95)),
    p99: round(at(0.99)),
    mean: round(mean),
    max: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

/** HTTP statuses and failures seen in a phase; any 5xx or unexpected answer fails the run. */
export class Outcomes {
  readonly statuses: Record<string, number> = {};
  readonly failures: string[] = [];

  ok(status = '2xx'): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  fail(error: unknown): void {
    const key = error instanceof UnexpectedReply ? String(error.status) : 'error';
    this.statuses[key] = (this.statuses[key] ?? 0) + 1;
    if (this.failures.length < 5) this.failures.push(String(error).slice(0, 400));
  }

  get unexpected(): number {
    return Object.entries(this.statuses)
      .filter(([s]) => !s.startsWith('2'))
      .reduce((a, [, n]) => a + n, 0);
  }
}

/** `count` operations one after the other; returns the latency of each successful one. */
export async function sequential(
  count: number,
  op: (i: number) => Promise<unknown>,
  outcomes: Outcomes,
): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    try {
      await op(i);
      ms.push(performance.now() - started);
      outcomes.ok();
    } catch (error) {
      outcomes.fail(error);
    }
  }
  return ms;
}

export interface LoadResult {
  /** Operations completed inside the measured window, per second. */
  readonly perSecond: number;
  readonly latency: LatencySummary;
  /** Latencies of the operations completed inside the window, ms. */
  readonly latencies: readonly number[];
  /** Every operation completed, warm-up and drain included (for per-operation counts). */
  readonly completed: number;
  readonly measuredSeconds: number;
}

/**
 * Closed loop: `clients` loops, each issuing its next operation when the last one returns.
 * The measured window opens once the warm-up time has passed and every client has completed
 * an operation, and closes after `durationMs` — later if fewer than `minCompletions` (default
 * two per client) completed in it, so slow high-concurrency runs are not measured on a handful
 * of requests.
 * Throughput and latency count the operations completing inside the window; operations in
 * flight when it closes are drained, not counted.
 */
export async function closedLoop(o: {
  readonly clients: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly op: (client: number, i: number) => Promise<unknown>;
  readonly outcomes: Outcomes;
  readonly minCompletions?: number;
}): Promise<LoadResult> {
  const start = performance.now();
  const minimum = o.minCompletions ?? 2 * o.clients;
  const giveUpAt = start + o.warmupMs + o.durationMs + 60_000;
  const warmed = new Set<number>();
  let windowStart: number | undefined;
  let windowEnd: number | undefined;
  const latencies: number[] = [];
  let completed = 0;
  const client = async (c: number) => {
    for (let i = 0; windowEnd === undefined; i++) {
      const began = performance.now();
      try {
        await o.op(c, i);
        const finished = performance.now();
        completed++;
        o.outcomes.ok();
        warmed.add(c);
        if (windowStart === undefined) {
          if (finished - start >= o.warmupMs && warmed.size === o.clients) windowStart = finished;
          else if (finished > giveUpAt) windowEnd = finished;
          continue;
        }
        if (windowEnd !== undefined) continue;
        latencies.push(finished - began);
        const elapsed = finished - windowStart;
        if ((elapsed >= o.durationMs && latencies.length >= minimum) || finished > giveUpAt)
          windowEnd = finished;
      } catch (error) {
        o.outcomes.fail(error);
        if (performance.now() > giveUpAt) windowEnd = performance.now();
        // A failing target should not turn into a busy loop.
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
  const seconds = ((windowEnd ?? performance.now()) - (windowStart ?? start)) / 1000;
  return {
    perSecond: round(latencies.length / Math.max(1e-3, seconds), 1),
    latency: summarize(latencies),
    latencies,
    completed,
    measuredSeconds: round(seconds),
  };
}
