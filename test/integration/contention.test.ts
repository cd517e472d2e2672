import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContentionEmulator } from '../../infra/local/contention.js';
import { L, ledgers } from '../helpers/balances.js';
import { expectError, SPEC_STATUS } from '../helpers/errors.js';
import { givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { errorOf, type Response } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// The service of this file runs with DynamoDB's transaction conflicts and throttling emulated
// on its one DynamoDB client (infra/local/contention.ts, default settings): DynamoDB Local alone
// never cancels a transaction, so without the emulator nothing here would contend.
const stack = useTestStack();
const { reserve, commit } = reservationsApi(stack);
let emulator: ContentionEmulator;
let uninstall: () => void;

beforeAll(async () => {
  // Imported after the stack: the same module graph (and client) as the servers.
  const { dynamoClient } = await import('../../functions/store/client.js');
  const contention = await import('../../infra/local/contention.js');
  emulator = contention.installContentionEmulator(dynamoClient);
  uninstall = () => contention.uninstallContentionEmulator(dynamoClient);
});

afterAll(() => uninstall?.());

/** A success, or SPEC's error body (exactly its keys, one of its codes) with any 4xx/5xx. */
function expectSuccessOrSpecError(res: Response): void {
  if (res.status >= 200 && res.status < 300) return;
  expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(600);
  const error = errorOf(res);
  expect(Object.keys(SPEC_STATUS)).toContain(error.error);
  expectError(res, res.status, error.error);
}

describe('one tenant budget under DynamoDB contention', () => {
  it('cancels concurrent transactions for conflict, answers every request, and keeps the ledger exact', async () => {
    const allocated = 10_000_000;
    const t = await givenTenantWith(stack, { '': allocated });
    const [clients, pairsEach, estimate, actual] = [16, 4, 100, 60];
    const cancelledBefore = emulator.counters.cancelledForConflict;
    const answers: Response[] = [];
    let [reserved, committed] = [0, 0];

    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = 0; i < pairsEach; i++) {
          const body = reserveBody({ subject: { tenant: t.tenant }, estimate: usd(estimate) });
          const r = await reserve(t, body);
          answers.push(r);
          if (r.status !== 200) continue;
          reserved++;
          const c = await commit(t, r.body.reservation_id, { actual: usd(actual) });
          answers.push(c);
          if (c.status === 200) committed++;
        }
      }),
    );

    for (const a of answers) expectSuccessOrSpecError(a);
    expect(reserved).toBeGreaterThan(0);
    expect(emulator.counters.cancelledForConflict - cancelledBefore).toBeGreaterThan(0);
    // Only what was answered 200 happened: each commit charged once, each uncommitted hold kept.
    const spent = committed * actual;
    const held = (reserved - committed) * estimate;
    expect(await ledgers(stack, t)).toEqual({
      '': L(allocated, spent, held, 0, allocated - spent - held),
    });
  });
});
