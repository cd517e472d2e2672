import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../log.js';

/**
 * Webhook delivery of budget events: POSTed as JSON, signed like the reference's events service
 * (`X-Cycles-Signature: sha256=<hex HMAC-SHA256 of the raw body>`), retried with exponential
 * backoff and jitter, bounded, then dropped with a log line and a counter. Deliveries run beside
 * the stream, never in a request: a receiver that is slow or down delays only its own events.
 */
export const SIGNATURE_HEADER = 'x-cycles-signature';
export const USER_AGENT = 'budget-reservations-events/1';

export const signatureOf = (secret: string, body: string): string =>
  `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;

/** Constant-time check of a delivery's signature, for receivers (and the tests). */
export function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  const expected = Buffer.from(signatureOf(secret, body));
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface Delivery {
  readonly eventId: string;
  readonly eventType: string;
  /** The event as JSON: signed and sent byte for byte. */
  readonly body: string;
}

/** Sends one POST and answers its status (it throws on a network error or the abort). */
export type Post = (
  url: string,
  body: string,
  headers: Record<string, string>,
  signal: AbortSignal,
) => Promise<number>;

export interface DispatcherOptions {
  readonly urls: readonly string[];
  /** The signing secret (AWS: read from Secrets Manager, cached). */
  readonly secret: () => string | Promise<string>;
  /** Retries after the first attempt (the reference's max_retries). */
  readonly maxRetries: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Per attempt. */
  readonly timeoutMs: number;
  /** Deliveries waiting or in flight per URL; past it new ones are dropped. @default 10000 */
  readonly maxPendingPerUrl?: number;
  /** Deliveries in flight per URL at once. @default 8 */
  readonly maxInFlightPerUrl?: number;
  /** @default fetch */
  readonly post?: Post;
  /** Backoff waits; tests pass a fast clock. @default setTimeout */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** @default Math.random */
  readonly random?: () => number;
  readonly log: Logger;
}

export interface DispatcherStats {
  delivered: number;
  retried: number;
  /** Given up on: retries exhausted, refused (4xx), or the queue was full. */
  dropped: number;
  pending: number;
}

/**
 * The wait before retry `n` (1, 2, …): the reference's `initial × 2^(n−1)`, capped, with "equal
 * jitter" (half fixed, half random), so receivers coming back are not hit by every sender at once.
 */
export function backoffMs(n: number, initialMs: number, maxMs: number, random: number): number {
  const full = Math.min(maxMs, initialMs * 2 ** (n - 1));
  return Math.round(full / 2 + (random * full) / 2);
}

/** 408, 429 and 5xx may pass on a later try; any other status will not. */
const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

const fetchPost: Post = async (url, body, headers, signal) => {
  const res = await fetch(url, { method: 'POST', body, headers, signal, redirect: 'manual' });
  await res.body?.cancel();
  return res.status;
};

const timerSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

interface Lane {
  readonly url: string;
  /** What logs may show: a webhook URL's path often holds its secret (Slack's do). */
  readonly origin: string;
  readonly waiting: Delivery[];
  inFlight: number;
}

export class WebhookDispatcher {
  private readonly lanes: Lane[];
  private readonly stopping = new AbortController();
  private readonly idleWaiters = new Set<() => void>();
  private readonly counters: Omit<DispatcherStats, 'pending'> = {
    delivered: 0,
    retried: 0,
    dropped: 0,
  };

  constructor(private readonly options: DispatcherOptions) {
    this.lanes = options.urls.map((url) => ({
      url,
      origin: new URL(url).origin,
      waiting: [],
      inFlight: 0,
    }));
  }

  /** Queues each event for every URL and returns at once. */
  enqueue(deliveries: readonly Delivery[]): void {
    if (this.stopping.signal.aborted) return;
    const max = this.options.maxPendingPerUrl ?? 10_000;
    for (const lane of this.lanes) {
      for (const d of deliveries) {
        if (lane.waiting.length + lane.inFlight >= max) {
          this.drop(lane, d, 'queue full', 0);
          continue;
        }
        lane.waiting.push(d);
      }
      this.pump(lane);
    }
  }

  stats(): DispatcherStats {
    const pending = this.lanes.reduce((n, l) => n + l.waiting.length + l.inFlight, 0);
    return { ...this.counters, pending };
  }

  /** Resolves true once nothing is pending, or false at `deadline` (epoch ms). */
  idle(deadline = Number.POSITIVE_INFINITY): Promise<boolean> {
    if (this.stats().pending === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer =
        deadline === Number.POSITIVE_INFINITY
          ? undefined
          : setTimeout(() => done(false), Math.max(0, deadline - Date.now()));
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.idleWaiters.delete(check);
        resolve(value);
      };
      const check = () => {
        if (this.stats().pending === 0) done(true);
      };
      this.idleWaiters.add(check);
    });
  }

  /** Abandons whatever is pending (the local runner's shutdown). */
  stop(): void {
    this.stopping.abort(new Error('webhook dispatcher stopped'));
    for (const lane of this.lanes) lane.waiting.length = 0;
    for (const check of [...this.idleWaiters]) check();
  }

  private pump(lane: Lane): void {
    const max = this.options.maxInFlightPerUrl ?? 8;
    while (lane.inFlight < max && lane.waiting.length > 0) {
      const d = lane.waiting.shift();
      if (!d) break;
      lane.inFlight++;
      void this.deliver(lane, d).finally(() => {
        lane.inFlight--;
        this.pump(lane);
        for (const check of [...this.idleWaiters]) check();
      });
    }
  }

  private async deliver(lane: Lane, d: Delivery): Promise<void> {
    const o = this.options;
    const signal = this.stopping.signal;
    const attempts = 1 + o.maxRetries;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let outcome: string;
      try {
        const headers = {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'x-cycles-event-id': d.eventId,
          'x-cycles-event-type': d.eventType,
          'x-cycles-delivery-attempt': String(attempt),
          [SIGNATURE_HEADER]: signatureOf(await o.secret(), d.body),
        };
        const attemptSignal = AbortSignal.any([signal, AbortSignal.timeout(o.timeoutMs)]);
        const status = await (o.post ?? fetchPost)(lane.url, d.body, headers, attemptSignal);
        if (status >= 200 && status < 300) {
          this.counters.delivered++;
          return;
        }
        if (!retryable(status)) return this.drop(lane, d, `refused with ${status}`, attempt);
        outcome = `answered ${status}`;
      } catch (error) {
        if (signal.aborted) return;
        outcome = error instanceof Error ? error.message : String(error);
      }
      if (attempt === attempts) return this.drop(lane, d, outcome, attempt);
      this.counters.retried++;
      const wait = backoffMs(attempt, o.initialDelayMs, o.maxDelayMs, (o.random ?? Math.random)());
      try {
        await (o.sleep ?? timerSleep)(wait, signal);
      } catch {
        return; // stopped
      }
    }
  }

  private drop(lane: Lane, d: Delivery, why: string, attempts: number): void {
    this.counters.dropped++;
    this.options.log.warn('webhook delivery dropped', {
      webhook: lane.origin,
      event_id: d.eventId,
      event_type: d.eventType,
      reason: why,
      attempts,
      dropped_total: this.counters.dropped,
    });
  }
}
