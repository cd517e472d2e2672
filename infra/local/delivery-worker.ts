import type { Logger } from '../../functions/log.js';
import type {
  AttemptOutcome,
  DeliveryQueue,
  DeliveryRef,
} from '../../functions/use-cases/deliveries.js';

/**
 * Plays, locally, the part of the SQS queue and the delivery function (docs/decisions.md §
 * Events and webhooks): a queue in memory and a pool of workers that run the same use case
 * (`attemptDelivery`) on each message. One lane per subscription: at most `perSubscription` of
 * a subscription's deliveries are in flight, the lanes are served in turn, so a receiver that
 * hangs or fails holds only its own lane and never delays another subscription's. A retry is a
 * timer (SQS: the message's visibility).
 *
 * Durability: the queue is memory, the deliveries are not. Every delivery is a record in the
 * table before its message exists, and unfinished ones stay on the sparse due index; at start
 * the runner resumes them (`resume`), so a crash or a restart loses no delivery (one in flight
 * at the crash is attempted again: at least once).
 */
export interface DeliveryWorkerOptions {
  readonly workers: number;
  readonly perSubscription: number;
  readonly attempt: (ref: DeliveryRef) => Promise<AttemptOutcome>;
  readonly log: Logger;
  /** When an attempt itself failed (the table did not answer): try again after this. */
  readonly errorRetryMs?: number;
}

interface Lane {
  readonly waiting: DeliveryRef[];
  inFlight: number;
}

export class DeliveryWorker implements DeliveryQueue {
  private readonly lanes = new Map<string, Lane>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly idleWaiters = new Set<() => void>();
  private inFlight = 0;
  private stopped = false;

  constructor(private readonly o: DeliveryWorkerOptions) {}

  async send(refs: readonly DeliveryRef[], delayMs = 0): Promise<number> {
    if (this.stopped) return 0;
    for (const ref of refs) {
      if (delayMs <= 0) this.push(ref);
      else this.later(ref, delayMs);
    }
    return refs.length;
  }

  /** Nothing queued, waiting for a timer, or in flight. */
  get idle(): boolean {
    return this.inFlight === 0 && this.timers.size === 0 && this.waiting() === 0;
  }

  /** Resolves once idle (tests), or false at the deadline. */
  settled(timeoutMs = 30_000): Promise<boolean> {
    if (this.idle) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(false), timeoutMs);
      const finish = (value: boolean) => {
        clearTimeout(timer);
        this.idleWaiters.delete(check);
        resolve(value);
      };
      const check = () => {
        if (this.idle) finish(true);
      };
      this.idleWaiters.add(check);
    });
  }

  /** Stops taking work and drops the timers; attempts in flight finish on their own. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const lane of this.lanes.values()) lane.waiting.length = 0;
  }

  private waiting(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.waiting.length;
    return n;
  }

  private later(ref: DeliveryRef, delayMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.push(ref);
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }

  private push(ref: DeliveryRef): void {
    if (this.stopped) return;
    let lane = this.lanes.get(ref.subscriptionId);
    if (!lane) {
      lane = { waiting: [], inFlight: 0 };
      this.lanes.set(ref.subscriptionId, lane);
    }
    lane.waiting.push(ref);
    this.pump();
  }

  /** Serves the lanes in turn, each within its share, the pool within its size. */
  private pump(): void {
    let progressed = true;
    while (progressed && this.inFlight < this.o.workers) {
      progressed = false;
      for (const [id, lane] of this.lanes) {
        if (this.inFlight >= this.o.workers) break;
        if (lane.inFlight >= this.o.perSubscription) continue;
        const ref = lane.waiting.shift();
        if (!ref) continue;
        progressed = true;
        // Rotate the lane to the back: the next round starts with the others.
        this.lanes.delete(id);
        this.lanes.set(id, lane);
        this.run(lane, ref);
      }
    }
    this.notify();
  }

  private run(lane: Lane, ref: DeliveryRef): void {
    lane.inFlight++;
    this.inFlight++;
    void this.o
      .attempt(ref)
      .then(({ retryInMs }) => {
        if (retryInMs !== undefined) this.later(ref, Math.max(1, retryInMs));
      })
      .catch((error: unknown) => {
        this.o.log.error('local delivery attempt failed, tried again', {
          error,
          delivery_id: ref.deliveryId,
        });
        this.later(ref, this.o.errorRetryMs ?? 5_000);
      })
      .finally(() => {
        lane.inFlight--;
        this.inFlight--;
        if (lane.inFlight === 0 && lane.waiting.length === 0) {
          this.lanes.delete(ref.subscriptionId);
        }
        this.pump();
      });
  }

  private notify(): void {
    for (const check of [...this.idleWaiters]) check();
  }
}
