import { pastDeadline } from '../deadline.js';
import { DomainError, RetryLaterError } from '../domain/errors.js';
import type { Reservation } from '../domain/reservation.js';
import type { StoredOutcome } from '../store/entities/outcome.js';
import type { RefusedBudget, WriteOutcome } from '../store/write.js';
import { type ResultCodec, replayOf } from './outcomes.js';
import { growHotBudgets } from './shard-growth.js';

/** Returned by a step when what was read can no longer be trusted: read again. */
export const readAgain = Symbol('readAgain');

/** Bounded retries when a guarded write found the state changed since it was read. */
export const MAX_STALE_RETRIES = 8;

/** What every read returns: the stored outcome, when the operation was already applied. */
export interface Snapshot {
  readonly replay?: StoredOutcome | undefined;
  /**
   * false when sharded budgets were read shard by shard (not one instant): a refusal decided
   * on it is checked again on an atomic read before it is answered (docs/scaling.md).
   */
  readonly atomic?: boolean | undefined;
}

/** A decision: the result to answer, and what to write for it. */
export interface Plan<R> {
  readonly result: R;
}

/**
 * One guarded write, stated as what differs between operations. The loop itself is the same
 * for all: consistent read → replay (or 409 IDEMPOTENCY_MISMATCH) if already applied → repair
 * (writes that bring the read up to date) → decide (pure domain; throws refusals) → one
 * conditional write → on a stale condition, read again.
 */
export interface GuardedWrite<S extends Snapshot, P extends Plan<unknown>> {
  /** Names the operation in the error raised when it keeps conflicting. */
  readonly name: string;
  /** Of the request payload: the same key with another payload is a mismatch. */
  readonly fingerprint: string;
  /** How the operation's result was stored compactly, for a replay to rebuild it. */
  readonly codec?: ResultCodec<P['result']> | undefined;
  /** `atomic`: read sharded budgets at one instant (a refusal's proof). */
  read(atomic?: boolean): Promise<S>;
  /**
   * Read-repair, once the read is known not to be a replay and before deciding on it: what
   * must be written (or looked up) first for the read to mean what it says — a due period
   * rolled over, expired holds that block new work freed, a reservation past its deadline
   * expired. true: something was written, read again. A DomainError thrown is the answer, as
   * from `decide`.
   */
  repair?(snapshot: S): Promise<boolean>;
  /** The decision on what was read: pure and synchronous; throws refusals. */
  decide(snapshot: S): P;
  write(plan: P): Promise<WriteOutcome>;
  /**
   * The budgets whose conditions failed may prove a refusal: return it and it is the answer
   * (`lastAttempt`: nothing will be read again). Otherwise the loop reads again.
   */
  refusalOf?(refused: readonly RefusedBudget[], plan: P, lastAttempt: boolean): Error | undefined;
  /**
   * The idempotency record is an item of its own, and BatchGetItem is not isolated from
   * transactions as a whole: it may see a concurrent duplicate's effect yet miss its record.
   * Before refusing, look once more, so that duplicate replays instead of being refused.
   */
  readonly recheckReplayBeforeRefusing?: boolean;
  /**
   * Told when the answer is a replay, with the read that found it (none when the record
   * answered the write: then the reservation it is, if it is one): for volatile fields
   * recomputed on every answer.
   */
  onReplay?(snapshot: S | undefined, reservation?: Reservation): void;
  /** Told once the write went through (never on a replay): counts what was done. */
  onWritten?(plan: P): void;
}

export async function guardedWrite<S extends Snapshot, P extends Plan<unknown>>(
  op: GuardedWrite<S, P>,
): Promise<P['result']> {
  try {
    return await attempts(op);
  } finally {
    // A budget this process found hot grows its shards, once the answer is decided.
    await growHotBudgets();
  }
}

async function attempts<S extends Snapshot, P extends Plan<unknown>>(
  op: GuardedWrite<S, P>,
): Promise<P['result']> {
  for (let attempt = 0; ; attempt++) {
    // Between attempts: past the request's deadline, nothing more is tried (nothing was written).
    if (attempt > 0 && pastDeadline()) throw busy();
    const snapshot = await op.read();
    if (snapshot.replay) {
      op.onReplay?.(snapshot);
      return replayOf(snapshot.replay, op.fingerprint, op.codec);
    }
    const plan = await decideOrReplay(op, snapshot);
    if ('replayed' in plan) return plan.replayed;
    if (plan.decided !== readAgain) {
      const outcome = await op.write(plan.decided);
      if (outcome.kind === 'written') {
        op.onWritten?.(plan.decided);
        return plan.decided.result;
      }
      if (outcome.kind === 'duplicate') {
        op.onReplay?.(undefined, outcome.reservation);
        return replayOf(outcome.stored, op.fingerprint, op.codec);
      }
      const lastAttempt = attempt >= MAX_STALE_RETRIES || pastDeadline();
      const refusal = op.refusalOf?.(outcome.refused, plan.decided, lastAttempt);
      if (refusal) throw refusal;
    }
    // The state kept moving under the write (a hot ledger): nothing was written; retryable.
    if (attempt >= MAX_STALE_RETRIES) throw busy();
  }
}

/** The answer when the state kept moving under the write: busy, nothing written (429). */
const busy = () => new RetryLaterError('CONTENTION', 100);

/** Repair, then decide; readAgain when the repair wrote something. */
async function repairAndDecide<S extends Snapshot, P extends Plan<unknown>>(
  op: GuardedWrite<S, P>,
  snapshot: S,
): Promise<P | typeof readAgain> {
  if (await op.repair?.(snapshot)) return readAgain;
  return op.decide(snapshot);
}

async function decideOrReplay<S extends Snapshot, P extends Plan<unknown>>(
  op: GuardedWrite<S, P>,
  snapshot: S,
): Promise<{ decided: P | typeof readAgain } | { replayed: P['result'] }> {
  try {
    return { decided: await repairAndDecide(op, snapshot) };
  } catch (refusal) {
    if (!(refusal instanceof DomainError)) throw refusal;
    if (snapshot.atomic === false) {
      // Refused on shards read one by one: decide again on one instant's budgets (which also
      // looks for the record once more). Its refusal is the answer.
      const again = await op.read(true);
      if (again.replay) {
        op.onReplay?.(again);
        return { replayed: replayOf(again.replay, op.fingerprint, op.codec) };
      }
      return { decided: await repairAndDecide(op, again) };
    }
    if (!op.recheckReplayBeforeRefusing) throw refusal;
    const again = await op.read();
    if (again.replay) {
      op.onReplay?.(again);
      return { replayed: replayOf(again.replay, op.fingerprint, op.codec) };
    }
    throw refusal;
  }
}

/**
 * Read → repair → decide without a write or a record, for an answer that is a decision alone (a
 * dry run): the same repair and the same atomic proof of a refusal as `guardedWrite`, which
 * `decide` asks for by throwing the refusal it would report from a read that was not atomic.
 */
export async function decideOnRead<S extends Snapshot, R>(op: {
  read(atomic?: boolean): Promise<S>;
  repair?(snapshot: S): Promise<boolean>;
  decide(snapshot: S): R;
}): Promise<R> {
  for (let atomic = false, round = 0; ; round++) {
    if (round > 0 && pastDeadline()) throw busy();
    const snapshot = await op.read(atomic);
    if (await op.repair?.(snapshot)) {
      atomic = false;
      continue;
    }
    try {
      return op.decide(snapshot);
    } catch (refusal) {
      if (!(refusal instanceof DomainError) || snapshot.atomic !== false) throw refusal;
      atomic = true;
    }
  }
}

/** Bounded attempts of a control-plane change when other changes land between read and write. */
const MAX_CHANGE_ATTEMPTS = 5;

/**
 * Read → change → conditional write, for records changed by the operator (tenants, keys, budget
 * settings): `attempt` answers readAgain when its write found the record changed since it read
 * it. After the bounded attempts nothing was written, and the answer is a retryable 429.
 */
export async function whileStale<T>(attempt: () => Promise<T | typeof readAgain>): Promise<T> {
  for (let i = 0; i < MAX_CHANGE_ATTEMPTS; i++) {
    if (i > 0 && pastDeadline()) break;
    const done = await attempt();
    if (done !== readAgain) return done;
  }
  throw busy();
}
