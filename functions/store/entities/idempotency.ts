import type { Item } from '../expressions.js';
import { keys } from '../keys.js';
import { type OutcomeToStore, wholeOutcomeAttributes } from './outcome.js';

// Idempotency records of the operations whose effect has no item of its own to carry one
// (extend, decide, fund: docs/idempotency.md). Their results are stored whole.

/** Written on every idempotency record from this version on (absent: written before). */
export const IDEMPOTENCY_VERSION = 1;

/** Records outlive the SPEC's 24 h minimum; DynamoDB TTL deletes them some time after. */
export const IDEMPOTENCY_RETENTION_MS = 7 * 24 * 3_600_000;

export interface IdempotencyScope {
  readonly tenant: string;
  readonly operation: string;
  readonly key: string;
}

export const idempotencyKey = (s: IdempotencyScope) =>
  keys.idempotency(s.tenant, s.operation, s.key);

/** Written in the same transaction as the effect it records, so it exists iff the effect does. */
export const idempotencyItem = (
  s: IdempotencyScope,
  outcome: OutcomeToStore,
  nowMs: number,
): Item => ({
  ...idempotencyKey(s),
  type: 'idempotency',
  v: IDEMPOTENCY_VERSION,
  ...wholeOutcomeAttributes(outcome),
  ttl: Math.ceil((nowMs + IDEMPOTENCY_RETENTION_MS) / 1000),
});
