/**
 * Admission for a local server (docs/decisions.md § Contention, "Admission"): how many requests
 * it works on at once, which waits first, and when excess work is answered 429 `CONCURRENCY`
 * before anything is done for it.
 *
 * Why locally: DynamoDB Local applies one call at a time, so past a few dozen requests in
 * flight more concurrency only lengthens every request (256 in flight made a reserve take 4 s
 * at p50 and 40 s at p99 under 1,000 clients) until their deadlines pass and the work is
 * wasted. In AWS a function's concurrency and DynamoDB's partitions take that role; what this
 * emulates is what a deployment gets from them: requests either served at normal latency or
 * refused at once.
 *
 * - **Adaptive limit** (AIMD on latency): the requests worked on at once grow by one per
 *   limit's worth of answers that came within `targetMs` and shrink by a fifth (at most once
 *   per `targetMs`) when one came later, between `minLimit` and `maxInFlight`.
 * - **Settling first**: commits, releases and extends (`settle`) have a pool of their own,
 *   `maxInFlight`, as their own functions have their own concurrency in AWS; everything else
 *   (`take`) is let in only while all requests in flight, settling ones included, are under the
 *   adaptive limit. So settling work is never turned away or kept waiting by reserves: a hold
 *   once granted is the work most worth finishing, and each settled hold frees budget for the
 *   next reserve. Past its limit a request waits in a queue (settling ones first).
 * - **Bounded waits, shed at once**: a request whose expected wait passes its lane's
 *   `maxWaitMs`, or that finds the queue full, is answered 429 at once; one still waiting at its
 *   lane's `maxWaitMs` too. Nothing was read or written for it. The expected wait of a reserve is
 *   the requests ahead of it over the rate its lane was let in while it had a queue (measured:
 *   settling calls share the limit, so the limit over the latency overstated it and reserves
 *   were queued that then waited the whole `maxWaitMs` for nothing); without such a rate in the
 *   last 5 s, and for settling calls, its limit over the answers' recent latency (Little's law,
 *   so an idle second before a burst does not count as slowness).
 * - **Retry-After from the backlog**: a reserve turned away is told when its turn would come: the
 *   reserves ahead of it (those queued, and the crowd already told to come back: turned away per
 *   second × Retry-After) over the rate reserves are let in, smoothed, 1–30 s, each answer
 *   jittered ±50 % so that those turned away together do not return together. A settling call is
 *   told 1 s: it is let in first.
 */

export type Lane = 'settle' | 'take';

export interface AdmissionSettings {
  /** Requests worked on at once, at most (LOCAL_MAX_IN_FLIGHT; 0: no limit at all). */
  readonly maxInFlight: number;
  /** The adaptive limit never goes below this. */
  readonly minLimit: number;
  /** Where it starts. */
  readonly initialLimit: number;
  /** An answer later than this (from admission to answer) shrinks the limit. */
  readonly targetMs: number;
  /** Requests waiting at most (0: none wait; past the limit, 429 at once). */
  readonly queue: number;
  /** How long a request of each lane may wait for its turn. */
  readonly maxWaitMs: Readonly<Record<Lane, number>>;
}

export type Ticket =
  | { readonly kind: 'admitted'; readonly release: () => void }
  | { readonly kind: 'shed'; readonly retryAfterMs: number };

export interface AdmissionStats {
  limit: number;
  inFlight: number;
  queued: number;
  admitted: Record<Lane, number>;
  /** Turned away: at once (expected wait too long, queue full) or after waiting. */
  shed: Record<Lane, number>;
  shedAfterWaiting: number;
  /** Admitted after waiting in the queue. */
  waited: number;
  retryAfterSeconds: number;
  /** Reserves (`take`) let in per second while they had a queue (0: not measured yet). */
  takeRate: number;
}

/** The clock and randomness it runs on (tests give their own). */
export interface AdmissionRuntime {
  readonly now: () => number;
  readonly random: () => number;
  readonly setTimer: (run: () => void, ms: number) => { cancel(): void };
}

const realRuntime: AdmissionRuntime = {
  now: () => performance.now(),
  random: Math.random,
  setTimer: (run, ms) => {
    const t = setTimeout(run, ms);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
};

interface Waiting {
  readonly lane: Lane;
  readonly resolve: (ticket: Ticket) => void;
  readonly timer: { cancel(): void };
  done: boolean;
}

/** Seconds of Retry-After a turned-away `take` request gets, at most and at least. */
const RETRY_AFTER_MIN_S = 1;
const RETRY_AFTER_MAX_S = 30;
/** A settling call turned away comes back soon: it goes first. */
const SETTLE_RETRY_AFTER_MS = 1_000;
/** Rates are measured over windows of this length and smoothed. */
const WINDOW_MS = 1_000;
/** A rate of reserves let in is trusted this long after it was last measured. */
const RATE_FRESH_MS = 5_000;

export class Admission {
  private limit: number;
  private inFlight = 0;
  private settling = 0;
  private readonly queues: Record<Lane, Waiting[]> = { settle: [], take: [] };
  private lastDecrease = Number.NEGATIVE_INFINITY;
  /** Answers per second (smoothed) and this window's counts. */
  private answerRate = 0;
  private shedRate = 0;
  private windowStart: number;
  private windowAnswers = 0;
  private windowShed = 0;
  /**
   * The rate `take` requests leave their queue (per second, smoothed; undefined before the
   * first measure): counted over the time the queue was not empty, the lane's real throughput.
   */
  private takeRate: number | undefined;
  private takeRateAt = Number.NEGATIVE_INFINITY;
  private windowTakeDequeued = 0;
  private windowTakeBackloggedMs = 0;
  private takeQueuedSince: number | undefined;
  private retryAfterS = RETRY_AFTER_MIN_S;
  /** Recent latency of answers, from admission (smoothed; undefined before the first). */
  private latencyMs: number | undefined;
  readonly stats: AdmissionStats;

  constructor(
    readonly settings: AdmissionSettings,
    private readonly runtime: AdmissionRuntime = realRuntime,
  ) {
    this.limit = Math.min(settings.initialLimit, this.ceiling);
    this.windowStart = runtime.now();
    this.stats = {
      limit: this.limit,
      inFlight: 0,
      queued: 0,
      admitted: { settle: 0, take: 0 },
      shed: { settle: 0, take: 0 },
      shedAfterWaiting: 0,
      waited: 0,
      retryAfterSeconds: this.retryAfterS,
      takeRate: 0,
    };
  }

  private get ceiling(): number {
    return this.settings.maxInFlight > 0 ? this.settings.maxInFlight : Number.POSITIVE_INFINITY;
  }

  /** The requests worked on at once now. */
  get currentLimit(): number {
    return Math.floor(this.limit);
  }

  /** A request arrives: admitted now, later (it waited), or shed. */
  admit(lane: Lane): Ticket | Promise<Ticket> {
    this.roll();
    if (this.settings.maxInFlight <= 0) return this.enter(lane, false);
    if (this.hasRoom(lane) && this.ahead(lane) === 0) return this.enter(lane, false);
    if (
      this.waitingCount() >= this.settings.queue ||
      this.expectedWaitMs(lane) > this.settings.maxWaitMs[lane]
    )
      return this.shed(lane);
    return new Promise<Ticket>((resolve) => {
      const waiting: Waiting = {
        lane,
        resolve,
        done: false,
        timer: this.runtime.setTimer(() => {
          if (waiting.done) return;
          waiting.done = true;
          const queue = this.queues[lane];
          queue.splice(queue.indexOf(waiting), 1);
          this.backlogChanged();
          this.stats.shedAfterWaiting++;
          this.syncStats();
          resolve(this.shed(lane));
        }, this.settings.maxWaitMs[lane]),
      };
      this.queues[lane].push(waiting);
      this.backlogChanged();
      this.syncStats();
    });
  }

  /** Settling requests: under their own pool; the rest: all in flight under the adaptive limit. */
  private hasRoom(lane: Lane): boolean {
    return lane === 'settle'
      ? this.settling < this.settings.maxInFlight
      : this.inFlight < this.currentLimit;
  }

  /** Requests a newcomer of this lane would wait behind: those of its own lane. */
  private ahead(lane: Lane): number {
    return this.queues[lane].length;
  }

  private waitingCount(): number {
    return this.queues.settle.length + this.queues.take.length;
  }

  /**
   * How long a newcomer would wait: those ahead of it over the rate its lane leaves the queue
   * (reserves, once measured), else over what its lane serves (its limit over the answers'
   * latency). Unknown (nothing measured yet): no wait is presumed too long, the queue's timer
   * bounds it.
   */
  private expectedWaitMs(lane: Lane): number {
    const takeRate = this.freshTakeRate();
    if (lane === 'take' && takeRate !== undefined)
      return ((this.ahead(lane) + 1) * 1000) / takeRate;
    if (this.latencyMs === undefined) return 0;
    const serving = lane === 'settle' ? this.settings.maxInFlight : this.currentLimit;
    return ((this.ahead(lane) + 1) * this.latencyMs) / Math.max(1, serving);
  }

  private enter(lane: Lane, waited: boolean): Ticket {
    this.inFlight++;
    if (lane === 'settle') this.settling++;
    this.stats.admitted[lane]++;
    if (waited) this.stats.waited++;
    this.syncStats();
    const startedAt = this.runtime.now();
    let released = false;
    return {
      kind: 'admitted',
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
        if (lane === 'settle') this.settling--;
        this.answered(this.runtime.now() - startedAt);
        this.next();
      },
    };
  }

  private shed(lane: Lane): Ticket {
    this.stats.shed[lane]++;
    this.syncStats();
    if (lane === 'settle') return { kind: 'shed', retryAfterMs: SETTLE_RETRY_AFTER_MS };
    this.windowShed++;
    // ±50 %, in whole seconds as Retry-After carries them, 1–30 s.
    const jittered = Math.round(this.retryAfterS * (0.5 + this.runtime.random()));
    const seconds = Math.min(RETRY_AFTER_MAX_S, Math.max(RETRY_AFTER_MIN_S, jittered));
    return { kind: 'shed', retryAfterMs: seconds * 1000 };
  }

  /** AIMD: one more per limit's worth of timely answers; a fifth less on a late one. */
  private answered(ms: number): void {
    this.roll();
    this.windowAnswers++;
    this.latencyMs = this.latencyMs === undefined ? ms : 0.9 * this.latencyMs + 0.1 * ms;
    const now = this.runtime.now();
    if (ms > this.settings.targetMs) {
      if (now - this.lastDecrease >= this.settings.targetMs) {
        this.limit = Math.max(this.settings.minLimit, this.limit * 0.8);
        this.lastDecrease = now;
      }
    } else {
      this.limit = Math.min(this.ceiling, this.limit + 1 / Math.max(1, this.limit));
    }
    this.syncStats();
  }

  /** Admits those waiting, settling first, while there is room. */
  private next(): void {
    for (const lane of ['settle', 'take'] as const) {
      const queue = this.queues[lane];
      while (queue.length > 0 && this.hasRoom(lane)) {
        const waiting = queue.shift() as Waiting;
        waiting.done = true;
        waiting.timer.cancel();
        if (lane === 'take') this.windowTakeDequeued++;
        waiting.resolve(this.enter(lane, true));
      }
    }
    this.backlogChanged();
    this.syncStats();
  }

  /**
   * The rate reserves left their queue, if measured lately: one measured in a slow moment (a
   * stalled table) would otherwise turn every reserve away at once, so that no queue forms in
   * which to measure it again.
   */
  private freshTakeRate(): number | undefined {
    return this.runtime.now() - this.takeRateAt <= RATE_FRESH_MS ? this.takeRate : undefined;
  }

  /** Keeps the time the `take` queue was not empty: the time over which its rate is measured. */
  private backlogChanged(): void {
    const backlogged = this.queues.take.length > 0;
    if (backlogged && this.takeQueuedSince === undefined) this.takeQueuedSince = this.runtime.now();
    if (!backlogged && this.takeQueuedSince !== undefined) {
      this.windowTakeBackloggedMs += this.runtime.now() - this.takeQueuedSince;
      this.takeQueuedSince = undefined;
    }
  }

  /** Closes the measuring windows that ended: the rates, and Retry-After from them. */
  private roll(): void {
    const now = this.runtime.now();
    if (now - this.windowStart < WINDOW_MS) return;
    const seconds = (now - this.windowStart) / 1000;
    const answers = this.windowAnswers / seconds;
    const shed = this.windowShed / seconds;
    this.answerRate = this.answerRate > 0 ? 0.5 * this.answerRate + 0.5 * answers : answers;
    this.shedRate = 0.5 * this.shedRate + 0.5 * shed;
    if (this.takeQueuedSince !== undefined) {
      this.windowTakeBackloggedMs += now - this.takeQueuedSince;
      this.takeQueuedSince = now;
    }
    // A rate over too short a backlog is noise: measured once the queue lasted a tenth of it.
    if (this.windowTakeBackloggedMs >= WINDOW_MS / 10 && this.windowTakeDequeued > 0) {
      const rate = (this.windowTakeDequeued * 1000) / this.windowTakeBackloggedMs;
      this.takeRate =
        this.freshTakeRate() === undefined ? rate : 0.5 * (this.takeRate ?? rate) + 0.5 * rate;
      this.takeRateAt = now;
    }
    // A reserve turned away waits for those ahead of it: the queue and the crowd already told to
    // come back (about shedRate × Retry-After), served at the rate reserves are let in (answers'
    // rate until that is measured). Approached half way each window.
    const ahead = this.queues.take.length + this.shedRate * this.retryAfterS;
    const wanted = ahead / Math.max(1, this.freshTakeRate() ?? this.answerRate);
    this.retryAfterS = Math.min(
      RETRY_AFTER_MAX_S,
      Math.max(RETRY_AFTER_MIN_S, 0.5 * this.retryAfterS + 0.5 * wanted),
    );
    this.windowStart = now;
    this.windowAnswers = 0;
    this.windowShed = 0;
    this.windowTakeDequeued = 0;
    this.windowTakeBackloggedMs = 0;
  }

  private syncStats(): void {
    this.stats.limit = this.currentLimit;
    this.stats.inFlight = this.inFlight;
    this.stats.queued = this.waitingCount();
    this.stats.retryAfterSeconds = Math.round(this.retryAfterS * 10) / 10;
    this.stats.takeRate = Math.round((this.freshTakeRate() ?? 0) * 10) / 10;
  }
}

/** The lane of a route: settling a hold goes first. */
const SETTLING = new Set(['commitReservation', 'releaseReservation', 'extendReservation']);
export const laneOf = (routeId: string): Lane => (SETTLING.has(routeId) ? 'settle' : 'take');

/** Every local server's admission in this process, latest last: for the bench and tests. */
const registry: { readonly server: string; readonly admission: Admission }[] = [];
export const admissionStats = (): (AdmissionStats & { readonly server: string })[] =>
  registry.map(({ server, admission }) => ({ server, ...structuredClone(admission.stats) }));

/** The clock and randomness of the admissions made from now on (tests give their own). */
let runtimeOfNew: AdmissionRuntime = realRuntime;
export function useAdmissionRuntime(runtime: AdmissionRuntime): void {
  runtimeOfNew = runtime;
}

export function localAdmission(server: string, settings: AdmissionSettings): Admission {
  const admission = new Admission(settings, runtimeOfNew);
  registry.push({ server, admission });
  if (registry.length > 16) registry.shift();
  return admission;
}
