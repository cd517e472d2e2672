import { describe, expect, it } from 'vitest';
import { DomainError, RetryLaterError } from '../../functions/domain/errors.js';
import type { StoredOutcome } from '../../functions/store/entities/outcome.js';
import type { WriteOutcome } from '../../functions/store/write.js';
import { guardedWrite, MAX_STALE_RETRIES } from '../../functions/use-cases/guarded-write.js';

// The loop in isolation: reads and writes are scripted sequences, so every branch is exercised
// without a table. The store's side of each outcome is covered by the integration tests.

interface Script {
  reads: { replay?: StoredOutcome }[];
  writes: WriteOutcome[];
}

/** An outcome stored whole, as an idempotency record keeps it. */
const stored = (fingerprint: string, value: unknown): StoredOutcome => ({
  fingerprint,
  result: { form: 'whole', value },
});

function scripted(script: Script, overrides: Record<string, unknown> = {}) {
  const calls = { reads: 0, writes: 0, decides: 0 };
  const op = {
    name: 'test',
    fingerprint: 'f',
    read: async () => {
      const snapshot = script.reads[Math.min(calls.reads, script.reads.length - 1)] ?? {};
      calls.reads++;
      return snapshot;
    },
    decide: () => {
      calls.decides++;
      return { result: { answer: calls.decides } };
    },
    write: async () => {
      const outcome = script.writes[Math.min(calls.writes, script.writes.length - 1)];
      calls.writes++;
      return outcome ?? { kind: 'written' as const };
    },
    ...overrides,
  };
  return { op, calls };
}

describe('guardedWrite', () => {
  it('answers the decided result after one read and one write', async () => {
    const { op, calls } = scripted({ reads: [{}], writes: [{ kind: 'written' }] });

    const result = await guardedWrite(op);

    expect(result).toEqual({ answer: 1 });
    expect(calls).toEqual({ reads: 1, writes: 1, decides: 1 });
  });

  it('replays a stored outcome without deciding or writing', async () => {
    const { op, calls } = scripted({
      reads: [{ replay: stored('f', { answer: 'first' }) }],
      writes: [],
    });

    expect(await guardedWrite(op)).toEqual({ answer: 'first' });
    expect(calls.writes + calls.decides).toBe(0);
  });

  it('refuses the same key with another payload with 409 IDEMPOTENCY_MISMATCH', async () => {
    const { op } = scripted({
      reads: [{}],
      writes: [{ kind: 'duplicate', stored: stored('other', {}) }],
    });

    await expect(guardedWrite(op)).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
  });

  it('reads again after a stale write, and answers what the second decision decided', async () => {
    const { op, calls } = scripted({
      reads: [{}],
      writes: [{ kind: 'stale', refused: [] }, { kind: 'written' }],
    });

    expect(await guardedWrite(op)).toEqual({ answer: 2 });
    expect(calls).toEqual({ reads: 2, writes: 2, decides: 2 });
  });

  it('gives up after a bounded number of stale attempts with a retryable (503) answer', async () => {
    const { op, calls } = scripted({ reads: [{}], writes: [{ kind: 'stale', refused: [] }] });

    const error = await guardedWrite(op).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(RetryLaterError);
    expect(error).toMatchObject({ reason: 'CONTENTION' });
    expect(calls.writes).toBe(MAX_STALE_RETRIES + 1);
  });

  it("answers the refusal a stale write's evidence proves, without reading again", async () => {
    const refusal = new DomainError('BUDGET_EXCEEDED', 'no');
    const { op, calls } = scripted(
      { reads: [{}], writes: [{ kind: 'stale', refused: [{ index: 0, budget: undefined }] }] },
      { refusalOf: () => refusal },
    );

    await expect(guardedWrite(op)).rejects.toBe(refusal);
    expect(calls.reads).toBe(1);
  });

  it('reads again without deciding or writing when the repair wrote something', async () => {
    let repairs = 0;
    const { op, calls } = scripted(
      { reads: [{}], writes: [{ kind: 'written' }] },
      { repair: async () => ++repairs === 1 },
    );

    expect(await guardedWrite(op)).toEqual({ answer: 1 });
    expect(calls).toEqual({ reads: 2, writes: 1, decides: 1 });
  });

  it('answers a refusal the repair throws, as one the decision throws', async () => {
    const refusal = new DomainError('RESERVATION_EXPIRED', 'expired');
    const { op, calls } = scripted(
      { reads: [{}], writes: [] },
      {
        repair: async () => {
          throw refusal;
        },
      },
    );

    await expect(guardedWrite(op)).rejects.toBe(refusal);
    expect(calls).toEqual({ reads: 1, writes: 0, decides: 0 });
  });

  it('replays instead of refusing when a second look finds the record (opt-in)', async () => {
    const refusing = {
      decide: () => {
        throw new DomainError('RESERVATION_FINALIZED', 'already COMMITTED');
      },
    };
    const reads = [{}, { replay: stored('f', 'won') }];
    const withRecheck = scripted(
      { reads, writes: [] },
      {
        ...refusing,
        recheckReplayBeforeRefusing: true,
      },
    );
    const without = scripted({ reads, writes: [] }, refusing);

    expect(await guardedWrite(withRecheck.op)).toBe('won');
    await expect(guardedWrite(without.op)).rejects.toMatchObject({
      code: 'RESERVATION_FINALIZED',
    });
  });
});
