import { type AdmissionRuntime, admissionStats } from '../../infra/local/admission.js';

/**
 * A clock, timers and randomness for a local server's admission (infra/local/admission.ts) that
 * the test moves: time stands still between `advance` calls, and a wait's timer fires only when
 * time is moved past it.
 */
export function fakeAdmissionRuntime(random = 0.5) {
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

/** The test stack's runtime server's admission counters now (infra/local/admission.ts). */
export const runtimeAdmission = () =>
  admissionStats()
    .filter((s) => s.server === 'runtime')
    .at(-1);
