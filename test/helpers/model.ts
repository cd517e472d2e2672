import fc from 'fast-check';

/**
 * A model test's property, run `numRuns` times from a seed: MODEL_SEED when set, else the clock.
 * A failure says the seed that reruns it (fast-check's message carries the counterexample).
 */
export async function assertModel<T>(
  name: string,
  scenario: fc.Arbitrary<T>,
  run: (s: T) => Promise<void>,
  numRuns: number,
): Promise<void> {
  const seed = Number(process.env.MODEL_SEED ?? Date.now() % 2_147_483_647);
  try {
    await fc.assert(fc.asyncProperty(scenario, run), { numRuns, seed, endOnFailure: true });
  } catch (error) {
    throw new Error(`${name} failed; rerun with MODEL_SEED=${seed}\n${String(error)}`, {
      cause: error,
    });
  }
}
