import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Unit } from '../domain/amounts.js';
import { canonicalJson } from '../domain/fingerprint.js';
import type { Ledger } from '../domain/ledger.js';
import { documentClient } from './client.js';
import { reservationIdOf, scopePathOf } from './items.js';
import { keys } from './keys.js';
import { type Item, putIfAbsent, putIfAbsentInput, type TransactItem } from './transact.js';
import type { WriteOutcome } from './write.js';

/** Records outlive the SPEC's 24 h minimum; DynamoDB TTL deletes them some time after. */
export const IDEMPOTENCY_RETENTION_MS = 7 * 24 * 3_600_000;

/**
 * What a replay needs: the payload's fingerprint and the operation's result (a domain value,
 * rendered by the edge exactly as the first answer was).
 */
export interface StoredOutcome {
  readonly fingerprint: string;
  readonly result: unknown;
}

/** The idempotency records of operations whose effect has no item of its own to carry one. */
export interface IdempotencyScope {
  readonly tenant: string;
  readonly operation: string;
  readonly key: string;
}

export const idempotencyKey = (s: IdempotencyScope) =>
  keys.idempotency(s.tenant, s.operation, s.key);

/** Written in the same transaction as the effect it records, so it exists iff the effect does. */
export function idempotencyPut(
  s: IdempotencyScope,
  outcome: StoredOutcome,
  nowMs: number,
): TransactItem {
  return putIfAbsent(idempotencyItem(s, outcome, nowMs));
}

const idempotencyItem = (s: IdempotencyScope, outcome: StoredOutcome, nowMs: number) => ({
  ...idempotencyKey(s),
  type: 'idempotency',
  ...storedOutcomeAttributes(outcome),
  ttl: Math.ceil((nowMs + IDEMPOTENCY_RETENTION_MS) / 1000),
});

export const storedOutcomeAttributes = (o: StoredOutcome) => ({
  fingerprint: o.fingerprint,
  result: JSON.stringify(o.result),
});

/**
 * The balances of a result, compact: per ledger its scope's index in `scopes` and its six
 * counters. A reservation or event item already holds the scopes, the unit and the other fields
 * of its result, so storing only this makes the item under 1 KB for a typical 3-scope hold
 * (a transactional write costs 2 write units per started KB, on the put and on every update).
 */
export function compactBalances(
  balances: readonly Ledger[],
  scopes: readonly string[],
): string | undefined {
  const rows = balances.map((l) => [
    scopes.indexOf(l.scope),
    l.allocated,
    l.spent,
    l.reserved,
    l.debt,
    l.overdraftLimit,
    l.remaining,
  ]);
  return rows.some((row) => row[0] === -1) ? undefined : JSON.stringify(rows);
}

export function balancesOfCompact(text: string, scopes: readonly string[], unit: Unit): Ledger[] {
  return (JSON.parse(text) as number[][]).map(
    ([scope, allocated, spent, reserved, debt, overdraftLimit, remaining]) => ({
      scope: scopes[scope ?? -1] ?? '',
      unit,
      allocated: allocated ?? 0,
      spent: spent ?? 0,
      reserved: reserved ?? 0,
      debt: debt ?? 0,
      overdraftLimit: overdraftLimit ?? 0,
      remaining: remaining ?? 0,
    }),
  );
}

/** A record of 0.1.0 (a wire body in `response_body`): its fingerprint still guards the key. */
export const UNRENDERABLE = Symbol('a 0.1.0 record: no domain result to replay');

export function storedOutcomeOf(item: Item | undefined): StoredOutcome | undefined {
  if (!item || typeof item.fingerprint !== 'string') return undefined;
  if (typeof item.balances_compact === 'string')
    return { fingerprint: item.fingerprint, result: rebuiltResult(item, item.balances_compact) };
  if (typeof item.result === 'string')
    return { fingerprint: item.fingerprint, result: JSON.parse(item.result) };
  if (typeof item.response_body === 'string')
    return { fingerprint: item.fingerprint, result: UNRENDERABLE };
  return undefined;
}

/** A record on its own (decide has no other effect); `duplicate` carries the one that won. */
export async function putIdempotencyRecord(
  s: IdempotencyScope,
  outcome: StoredOutcome,
  nowMs: number,
): Promise<WriteOutcome> {
  // A plain conditional PutItem: half the write units of a one-item transaction.
  try {
    await documentClient.send(new PutCommand(putIfAbsentInput(idempotencyItem(s, outcome, nowMs))));
    return { kind: 'written' };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return {
      kind: 'duplicate',
      stored: storedOutcomeOf(error.Item ? unmarshall(error.Item) : undefined),
    };
  }
}

/**
 * The stored outcome of a reservation or event item: compact balances when the item itself then
 * rebuilds exactly the result to replay (checked here, every time), else the whole result.
 */
export function outcomeAttributesOf(item: Item, o: StoredOutcome): Item {
  const { balances, caps } = (o.result ?? {}) as { balances?: unknown; caps?: unknown };
  const scopes = item.scopes;
  if (Array.isArray(balances) && Array.isArray(scopes)) {
    const compact = compactBalances(balances as Ledger[], scopes as string[]);
    // A reservation answered ALLOW_WITH_CAPS keeps its caps beside the balances.
    const extra: Item = caps === undefined ? {} : { caps: JSON.stringify(caps) };
    const stored = JSON.parse(JSON.stringify(o.result)) as unknown;
    if (
      compact !== undefined &&
      canonicalJson(rebuiltResult({ ...item, ...extra }, compact)) === canonicalJson(stored)
    ) {
      return { fingerprint: o.fingerprint, balances_compact: compact, ...extra };
    }
  }
  return storedOutcomeAttributes(o);
}

/**
 * A reservation's or an event's result from its own item and its compact balances: exactly the
 * value that was stored (`Reserved`, `EventApplied`), so a replay renders the same bytes.
 */
function rebuiltResult(item: Item, compact: string): unknown {
  const scopes = item.scopes as string[];
  const unit = item.unit as Unit;
  const balances = balancesOfCompact(compact, scopes, unit);
  if (item.type === 'event') return { eventId: String(item.event_id), balances };
  return {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath: scopePathOf(item),
    reserved: { unit, amount: Number(item.estimate) },
    reservationId: reservationIdOf(item),
    expiresAtMs: Number(item.created_at_ms) + Number(item.ttl_ms),
    balances,
    ...(typeof item.caps === 'string' && { caps: JSON.parse(item.caps) }),
  };
}

/**
 * Commit and release finalize a reservation once, so their outcome lives on the reservation
 * item itself (SPEC's key scope is the endpoint, and each reservation has its own commit and
 * release endpoint): one item less per settlement (docs/idempotency.md). `settle_op` and
 * `settle_key` say which request it answers.
 */
export function settledOutcomeAttributes(
  r: { readonly scopes: readonly string[]; readonly unit: Unit; readonly estimate: number },
  committed: number | undefined,
  operation: string,
  key: string,
  o: StoredOutcome,
): Item {
  const balances = (o.result as { balances?: unknown } | undefined)?.balances;
  const base = { settle_op: operation, settle_key: key, settle_fingerprint: o.fingerprint };
  if (Array.isArray(balances)) {
    const compact = compactBalances(balances as Ledger[], r.scopes);
    const item = { ...r, scopes: [...r.scopes], committed, settle_op: operation };
    if (
      compact !== undefined &&
      canonicalJson(settledResult(item, compact)) ===
        canonicalJson(JSON.parse(JSON.stringify(o.result)))
    ) {
      return { ...base, settle_balances: compact };
    }
  }
  return { ...base, settle_result: JSON.stringify(o.result) };
}

/** The outcome a reservation item records for this commit or release request, if it does. */
export function settledOutcomeOf(
  item: Item | undefined,
  operation: string,
  key: string,
): StoredOutcome | undefined {
  if (!item || item.settle_op !== operation || item.settle_key !== key) return undefined;
  const fingerprint = String(item.settle_fingerprint);
  if (typeof item.settle_balances === 'string')
    return { fingerprint, result: settledResult(item, item.settle_balances) };
  if (typeof item.settle_result === 'string')
    return { fingerprint, result: JSON.parse(item.settle_result) };
  return undefined;
}

/** `Committed` or `Released`, exactly as the use case returned it, from the item. */
function settledResult(item: Item, compact: string): unknown {
  const unit = item.unit as Unit;
  const estimate = Number(item.estimate);
  const balances = balancesOfCompact(compact, item.scopes as string[], unit);
  if (item.settle_op === 'release')
    return { status: 'RELEASED', released: { unit, amount: estimate }, balances };
  const charged = Number(item.committed);
  return {
    status: 'COMMITTED',
    charged: { unit, amount: charged },
    released: { unit, amount: Math.max(0, estimate - charged) },
    balances,
  };
}
