import { describe, expect, it } from 'vitest';
import {
  Admission,
  type AdmissionRuntime,
  type AdmissionSettings,
  laneOf,
  type Ticket,
} from '../../infra/local/admission.js';

// A local server's admission (infra/local/admission.ts), on a clock and timers the test moves.

function fakeRuntime(random = 0.5) {
  let now = 0;
  const timers: { at: number; run: () => void; cancelled: boolean }[] = [];
  const runtime: AdmissionRuntime = {
    now: () => now,
    random: () => random,
    setTimer: (run, ms) => {
      const timer = { at: now + ms, run, cancelled: false };
      timers.push(timer);
      return {
        cancel: () => {
          timer.cancelled = true;
        },
      };
    },
  };
  const advance = (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => !x.cancelled && x.at <= now)) {
      t.cancelled = true;
      t.run();
    }
  };
  return { runtime, advance };
}

const settings = (over: Partial<AdmissionSettings> = {}): AdmissionSettings => ({
  maxInFlight: 4,
  minLimit: 2,
  initialLimit: 2,
  targetMs: 100,
  queue: 10,
  maxWaitMs: { settle: 5_000, take: 1_000 },
  ...over,
});

const admitted = (t: Ticket | Promise<Ticket>) => {
  if (t instanceof Promise || t.kind !== 'admitted') throw new Error('not admitted at once');
  return t;
};

describe('admission of a local server', () => {
  it('sends commits, releases and extends to the settling lane, everything else to the other', () => {
    expect(['commitReservation', 'releaseReservation', 'extendReservation'].map(laneOf)).toEqual([
      'settle',
      'settle',
      'settle',
    ]);
    expect(['createReservation', 'decide', 'createEvent', 'listBalances'].map(laneOf)).toEqual([
      'take',
      'take',
      'take',
      'take',
    ]);
  });

  it('keeps reserves waiting past the limit, lets settling calls in on their own pool, and admits the waiting in order', async () => {
    const { runtime } = fakeRuntime();
    const a = new Admission(settings(), runtime);
    const first = admitted(a.admit('take'));
    admitted(a.admit('take'));
    const waiting = a.admit('take');
    // The limit (2) is reached by reserves: a commit still gets in, on the settling pool.
    const commit = admitted(a.admit('settle'));
    expect(waiting).toBeInstanceOf(Promise);
    expect(a.stats.queued).toBe(1);

    commit.release();
    expect(a.stats.queued).toBe(1);
    first.release();
    expect((await waiting).kind).toBe('admitted');
    expect(a.stats).toMatchObject({ waited: 1, queued: 0, shed: { take: 0, settle: 0 } });
  });

  it('answers at once, nothing done, when no request may wait, and after the longest wait otherwise', async () => {
    const { runtime, advance } = fakeRuntime();
    const none = new Admission(settings({ queue: 0 }), runtime);
    admitted(none.admit('take'));
    admitted(none.admit('take'));
    expect(none.admit('take')).toEqual({ kind: 'shed', retryAfterMs: 1_000 });

    const some = new Admission(settings(), runtime);
    admitted(some.admit('take'));
    admitted(some.admit('take'));
    const waiting = some.admit('take');
    advance(999);
    expect(some.stats.queued).toBe(1);
    advance(1);
    expect(await waiting).toEqual({ kind: 'shed', retryAfterMs: 1_000 });
    expect(some.stats).toMatchObject({ queued: 0, shedAfterWaiting: 1, shed: { take: 1 } });
  });

  it('turns away at once a newcomer whose wait, by the limit over the answers’ latency, would pass the longest', () => {
    const { runtime, advance } = fakeRuntime();
    const a = new Admission(settings({ targetMs: 10_000, queue: 100 }), runtime);
    const measured = [admitted(a.admit('take')), admitted(a.admit('take'))];
    advance(100);
    for (const t of measured) t.release();
    // Idle since: a burst is judged by what the server serves (2 at a time, 100 ms each), not
    // by how few answers the idle moment saw.
    admitted(a.admit('take'));
    admitted(a.admit('take'));
    const waiting = Array.from({ length: 20 }, () => a.admit('take'));
    const turnedAway = a.admit('take');

    expect(waiting.every((w) => w instanceof Promise)).toBe(true);
    // The 21st in line would wait 21 × 100 ms / 2 = 1,050 ms, past the longest wait (1 s).
    expect(turnedAway).toEqual({ kind: 'shed', retryAfterMs: 1_000 });
    expect(a.stats).toMatchObject({ queued: 20, shed: { take: 1 }, shedAfterWaiting: 0 });
  });

  it('grows the limit by one per limit’s worth of timely answers and cuts a fifth on a late one, at most once per target', () => {
    const { runtime, advance } = fakeRuntime();
    const a = new Admission(settings({ maxInFlight: 100, initialLimit: 10, minLimit: 2 }), runtime);
    for (let i = 0; i < 10; i++) admitted(a.admit('take')).release();
    expect(a.currentLimit).toBe(10);
    admitted(a.admit('take')).release();
    expect(a.currentLimit).toBe(11);

    const late = [admitted(a.admit('take')), admitted(a.admit('take'))];
    advance(150);
    for (const t of late) t.release();
    // Two late answers within one target: one cut, 11 × 0.8.
    expect(a.currentLimit).toBe(8);
    const later = admitted(a.admit('take'));
    advance(150);
    later.release();
    expect(a.currentLimit).toBe(7);
  });

  it('tells those turned away to come back later as the crowd outgrows what is answered, at most 30 s, jittered', () => {
    const { runtime, advance } = fakeRuntime(0.5);
    const a = new Admission(
      settings({ queue: 0, maxInFlight: 1, initialLimit: 1, minLimit: 1 }),
      runtime,
    );
    const held = admitted(a.admit('take'));
    const retryAfter = () => {
      const t = a.admit('take');
      if (t instanceof Promise || t.kind !== 'shed') throw new Error('not shed');
      return t.retryAfterMs;
    };
    // Every second: 50 turned away, 1 answered (released and taken again at once).
    let current = held;
    const seen: number[] = [retryAfter()];
    for (let second = 0; second < 12; second++) {
      for (let i = 0; i < 50; i++) retryAfter();
      advance(1_000);
      current.release();
      current = admitted(a.admit('take'));
      seen.push(retryAfter());
    }
    // Before any answer is measured, 1 s; then crowd (50/s × Retry-After) ÷ 1 answer/s, half way
    // each second: 13 s after the first.
    expect(seen.slice(0, 2)).toEqual([1_000, 13_000]);
    expect(seen.at(-1)).toBe(30_000);
    for (let i = 1; i < seen.length; i++)
      expect(seen[i] as number).toBeGreaterThanOrEqual(seen[i - 1] as number);

    // ±50 %: the same state answered with the extremes of the jitter.
    const low = new Admission(
      settings({ queue: 0, maxInFlight: 1, initialLimit: 1 }),
      fakeRuntime(0).runtime,
    );
    admitted(low.admit('take'));
    const shed = low.admit('take');
    expect(shed).toEqual({ kind: 'shed', retryAfterMs: 1_000 });
  });

  it('sheds a settling call only once its own pool is full, and tells it 1 s', () => {
    const { runtime } = fakeRuntime();
    const a = new Admission(settings({ queue: 0, maxInFlight: 2 }), runtime);
    admitted(a.admit('settle'));
    admitted(a.admit('settle'));
    expect(a.admit('settle')).toEqual({ kind: 'shed', retryAfterMs: 1_000 });
  });
});
