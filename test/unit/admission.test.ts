import { describe, expect, it } from 'vitest';
import {
  Admission,
  type AdmissionSettings,
  laneOf,
  type Ticket,
} from '../../infra/local/admission.js';
import { fakeAdmissionRuntime as fakeRuntime } from '../helpers/admission-runtime.js';

// A local server's admission (infra/local/admission.ts), on a clock and timers the test moves.

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

/**
 * Four places, three held by commits: reserves get one, with `waiting` more queued behind it.
 * `serveNext(ms)`: `ms` later, the reserve served answers and the first one queued goes in.
 */
function onePlaceForReserves(o: { queue: number; maxWaitMs: number; waiting: number }) {
  const { runtime, advance } = fakeRuntime(0.5);
  const a = new Admission(
    settings({
      maxInFlight: 4,
      initialLimit: 4,
      targetMs: 10_000,
      queue: o.queue,
      maxWaitMs: { settle: 60_000, take: o.maxWaitMs },
    }),
    runtime,
  );
  for (let i = 0; i < 3; i++) admitted(a.admit('settle'));
  let serving = admitted(a.admit('take'));
  const queued = Array.from({ length: o.waiting }, () => a.admit('take') as Promise<Ticket>);
  const serveNext = async (ms: number) => {
    advance(ms);
    serving.release();
    const next = await queued.shift();
    if (next?.kind !== 'admitted') throw new Error('not admitted');
    serving = next;
  };
  return { a, queued, serveNext, advance };
}

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

  it('judges a reserve’s wait by the rate reserves leave their queue, and turns it away at once when settling calls hold most of the limit', async () => {
    // 10 reserves queued, one served every 200 ms.
    const { a, serveNext } = onePlaceForReserves({ queue: 100, maxWaitMs: 1_200, waiting: 10 });
    for (let i = 0; i < 5; i++) await serveNext(200);
    // Measured over the first second: 4 let in from the queue, 4 a second. Five still wait.
    expect(a.stats).toMatchObject({ takeRate: 4, queued: 5, shedAfterWaiting: 0 });
    // The next would wait (5 + 1) / 4 = 1.5 s, past the longest (1.2 s): turned away at once. By
    // the limit over the answers' latency (4 / 200 ms: 0.3 s) it would have been queued, and
    // waited out the whole 1.2 s for nothing.
    expect(a.admit('take')).toMatchObject({ kind: 'shed' });
    expect(a.stats).toMatchObject({ shed: { take: 1 }, shedAfterWaiting: 0, queued: 5 });
  });

  it('forgets a rate of reserves measured in a slow moment once no queue has formed for 5 s, so reserves queue again', async () => {
    // One reserve served a second, two queued behind it: 1 a second.
    const { a, queued, serveNext, advance } = onePlaceForReserves({
      queue: 100,
      maxWaitMs: 2_500,
      waiting: 2,
    });
    for (let i = 0; i < 3; i++) {
      await serveNext(1_000);
      queued.push(a.admit('take') as Promise<Ticket>);
    }
    expect(a.stats.takeRate).toBe(1);
    // Two ahead: (2 + 1) / 1 a second = 3 s, past the longest (2.5 s).
    expect(a.admit('take')).toMatchObject({ kind: 'shed' });
    await serveNext(1_000);
    await serveNext(1_000);
    // No queue for 6 s: that rate is forgotten, and the limit over the answers' latency (4 over
    // 1 s) says 0.75 s for the third in line.
    advance(6_000);
    const again = [a.admit('take'), a.admit('take'), a.admit('take')];
    expect(again.every((t) => t instanceof Promise)).toBe(true);
    expect(a.stats).toMatchObject({ queued: 3, takeRate: 0, shed: { take: 1 } });
  });

  it('tells a reserve turned away to come back when those ahead of it, queued and told to come back, have been let in', async () => {
    const { a, queued, serveNext } = onePlaceForReserves({
      queue: 20,
      maxWaitMs: 60_000,
      waiting: 20,
    });
    let retryAfterMs = 0;
    // 10 s: a reserve let in every 100 ms (10 a second), its place in the queue taken again at
    // once, and 5 a second finding the queue full.
    for (let tick = 1; tick <= 100; tick++) {
      await serveNext(100);
      queued.push(a.admit('take') as Promise<Ticket>);
      if (tick % 2 === 0) {
        const shed = a.admit('take');
        if (shed instanceof Promise || shed.kind !== 'shed') throw new Error('not shed');
        retryAfterMs = shed.retryAfterMs;
      }
    }
    // Ahead of it: 20 queued and the crowd (5 a second × Retry-After), let in 10 a second:
    // Retry-After = 20 / (10 − 5) = 4 s.
    expect(a.stats.takeRate).toBeCloseTo(10, 0);
    expect(retryAfterMs).toBe(4_000);
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
    expect(climb(0.5).seen.slice(0, 2)).toEqual([1_000, 13_000]);
    // Retry-After at its most (30 s), answered with the high end of the jitter: still 30 s.
    expect(climb(0.999).seen.at(-1)).toBe(30_000);
    const { seen } = climb(0.5);
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

  /**
   * One place, no queue; every second 50 turned away and 1 answered (released and taken again at
   * once): the Retry-After told after each second. Before any answer is measured, 1 s; then the
   * crowd (50/s × Retry-After) ÷ 1 answer/s, half way each second: 13 s after the first.
   */
  function climb(random: number) {
    const { runtime, advance } = fakeRuntime(random);
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
    let current = held;
    const seen: number[] = [retryAfter()];
    for (let second = 0; second < 12; second++) {
      for (let i = 0; i < 50; i++) retryAfter();
      advance(1_000);
      current.release();
      current = admitted(a.admit('take'));
      seen.push(retryAfter());
    }
    return { seen };
  }

  it('sheds a settling call only once its own pool is full, and tells it 1 s', () => {
    const { runtime } = fakeRuntime();
    const a = new Admission(settings({ queue: 0, maxInFlight: 2 }), runtime);
    admitted(a.admit('settle'));
    admitted(a.admit('settle'));
    expect(a.admit('settle')).toEqual({ kind: 'shed', retryAfterMs: 1_000 });
  });
});
