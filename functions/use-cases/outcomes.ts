import { DomainError } from '../domain/errors.js';
import { canonicalJson } from '../domain/fingerprint.js';
import type {
  CompactResult,
  OutcomeToStore,
  RecordFacts,
  StoredOutcome,
} from '../store/entities/outcome.js';

// What an idempotent operation stores so that a replay answers what its first request
// answered (docs/idempotency.md), and how a stored outcome becomes that answer again.

/**
 * An operation's own codec for its result: the part of it the record it is stored on does not
 * hold (balances, caps), and the result rebuilt from that part and the record. With it a
 * reservation or event item stays under 1 KB (docs/table-design.md).
 */
export interface ResultCodec<R> {
  compact(result: R): CompactResult;
  expand(compact: CompactResult, record: RecordFacts): R;
}

/** The stored form equals the value: what a replay renders is what the first answer rendered. */
const same = (rebuilt: unknown, value: unknown) =>
  canonicalJson(rebuilt) === canonicalJson(JSON.parse(JSON.stringify(value)));

/**
 * What to store for a result: with its compact form when the codec rebuilds it exactly from
 * `record` (checked here, every time), else the whole result alone.
 */
export function outcomeToStore<R>(
  fingerprint: string,
  result: R,
  codec?: ResultCodec<R>,
  record?: RecordFacts,
): OutcomeToStore {
  if (!codec || !record) return { fingerprint, result };
  const compact = codec.compact(result);
  return same(codec.expand(compact, record), result)
    ? { fingerprint, result, compact }
    : { fingerprint, result };
}

/** SPEC § Idempotency rules 2-3: the original result, or 409 when the payload differs. */
export function replayOf<R>(
  stored: StoredOutcome | undefined,
  fingerprint: string,
  codec?: ResultCodec<R>,
): R {
  if (!stored) throw new Error('idempotency record without a stored outcome');
  if (stored.fingerprint !== fingerprint) {
    throw new DomainError(
      'IDEMPOTENCY_MISMATCH',
      'idempotency_key was already used with a different payload',
    );
  }
  const { result } = stored;
  switch (result.form) {
    case 'whole':
      // Stored by this same operation from a value of type R.
      return result.value as R;
    case 'compact':
      if (!codec) throw new Error('a compact result without its codec');
      return codec.expand(result.compact, result.on);
    case 'unrenderable':
      throw new Error('replay of a record written by 0.1.0');
  }
}
