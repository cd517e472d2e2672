import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { Ledger } from '../domain/budget.js';
import { canonicalJson } from '../domain/fingerprint.js';
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
  fingerprint: fingerprintValue(o.fingerprint),
  result: JSON.stringify(o.result),
});

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * A fingerprint as stored: a SHA-256 in hex as its 32 bytes (a binary attribute, half the hex
 * text's size), anything else as the string it is.
 */
export const fingerprintValue = (fingerprint: string): string | Uint8Array =>
  SHA256_HEX.test(fingerprint) ? new Uint8Array(Buffer.from(fingerprint, 'hex')) : fingerprint;

/** The fingerprint of a stored value: bytes (since 0.4) or the hex text records held before. */
export function fingerprintOf(value: unknown): string | undefined {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  return typeof value === 'string' ? value : undefined;
}

/**
 * The balances of a result as one list of numbers, five per scope in `scopes` order: allocated,
 * spent, reserved, debt and overdraft limit; `remaining` is rebuilt (allocated − spent −
 * reserved − debt, as after every operation: docs/ledger-math.md). A DynamoDB number costs a
 * byte per two significant digits, about half its text. A reservation or event item already
 * holds the scopes, the unit and the other fields of its result, so with this alone it stays
 * under 1 KB for a typical 3-scope hold, before and after its settlement (a transactional write
 * costs 2 write units per started KB of the larger of the two). Undefined when the balances are
 * not one per scope, in order.
 */
export function balanceRows(
  balances: readonly Ledger[],
  scopes: readonly string[],
): number[] | undefined {
  if (balances.length !== scopes.length || balances.some((l, i) => l.scope !== scopes[i]))
    return undefined;
  return balances.flatMap((l) => [l.allocated, l.spent, l.reserved, l.debt, l.overdraftLimit]);
}

const ROW = 5;

function balancesOfRows(rows: readonly unknown[], scopes: readonly string[], unit: Unit): Ledger[] {
  return scopes.map((scope, i) => {
    const [allocated = 0, spent = 0, reserved = 0, debt = 0, overdraftLimit = 0] = rows
      .slice(i * ROW, (i + 1) * ROW)
      .map(Number);
    return {
      scope,
      unit,
      allocated,
      spent,
      reserved,
      debt,
      overdraftLimit,
      remaining: allocated - spent - reserved - debt,
    };
  });
}

/** Balances as items written before 0.4 stored them: a scope index and all six counters. */
function balancesOfCompact(text: string, scopes: readonly string[], unit: Unit): Ledger[] {
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

/** The balances an item stores under `rows` (since 0.4) or `compact` (text, before), if any. */
function storedBalances(item: Item, rows: string, compact: string): Ledger[] | undefined {
  const scopes = item.scopes as string[];
  const unit = item.unit as Unit;
  const list = item[rows];
  const text = item[compact];
  if (Array.isArray(list)) return balancesOfRows(list, scopes, unit);
  if (typeof text === 'string') return balancesOfCompact(text, scopes, unit);
  return undefined;
}

/** The stored form equals the value: what a replay renders is what the first answer rendered. */
const same = (rebuilt: unknown, value: unknown) =>
  canonicalJson(rebuilt) === canonicalJson(JSON.parse(JSON.stringify(value)));

/** A record of 0.1.0 (a wire body in `response_body`): its fingerprint still guards the key. */
export const UNRENDERABLE = Symbol('a 0.1.0 record: no domain result to replay');

export function storedOutcomeOf(item: Item | undefined): StoredOutcome | undefined {
  const fingerprint = fingerprintOf(item?.fingerprint);
  if (!item || fingerprint === undefined) return undefined;
  const balances = storedBalances(item, 'balance_rows', 'balances_compact');
  if (balances) return { fingerprint, result: rebuiltResult(item, balances) };
  if (typeof item.result === 'string') return { fingerprint, result: JSON.parse(item.result) };
  if (typeof item.response_body === 'string') return { fingerprint, result: UNRENDERABLE };
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
 * The stored outcome of a reservation or event item: its balances as rows when the item itself
 * then rebuilds exactly the result to replay (checked here, every time), else the whole result.
 */
export function outcomeAttributesOf(item: Item, o: StoredOutcome): Item {
  const { balances, caps } = (o.result ?? {}) as { balances?: unknown; caps?: unknown };
  const scopes = item.scopes;
  if (Array.isArray(balances) && Array.isArray(scopes)) {
    const rows = balanceRows(balances as Ledger[], scopes as string[]);
    // A reservation answered ALLOW_WITH_CAPS keeps its caps beside the balances.
    const extra: Item = caps === undefined ? {} : { caps: JSON.stringify(caps) };
    if (
      rows !== undefined &&
      same(rebuiltResult({ ...item, ...extra }, storedBalancesOf(item, rows)), o.result)
    )
      return { fingerprint: fingerprintValue(o.fingerprint), balance_rows: rows, ...extra };
  }
  return storedOutcomeAttributes(o);
}

const storedBalancesOf = (item: Item, rows: readonly number[]) =>
  balancesOfRows(rows, item.scopes as string[], item.unit as Unit);

/**
 * A reservation's or an event's result from its own item and its stored balances: exactly the
 * value that was stored (`Reserved`, `EventApplied`), so a replay renders the same bytes.
 */
function rebuiltResult(item: Item, balances: Ledger[]): unknown {
  const scopes = item.scopes as string[];
  const unit = item.unit as Unit;
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

/** A settlement's operation is its status's: commit ends COMMITTED, release RELEASED. */
const SETTLED_BY: Record<string, string> = { COMMITTED: 'commit', RELEASED: 'release' };

/**
 * Commit and release finalize a reservation once, so their outcome lives on the reservation
 * item itself (SPEC's key scope is the endpoint, and each reservation has its own commit and
 * release endpoint): one item less per settlement (docs/idempotency.md). `settle_key` says which
 * request it answers; the operation is the status the settlement writes (items written before
 * 0.4 also name it in `settle_op`).
 */
export function settledOutcomeAttributes(
  r: { readonly scopes: readonly string[]; readonly unit: Unit; readonly estimate: number },
  committed: number | undefined,
  operation: string,
  key: string,
  o: StoredOutcome,
): Item {
  const balances = (o.result as { balances?: unknown } | undefined)?.balances;
  const base = { settle_key: key, settle_fingerprint: fingerprintValue(o.fingerprint) };
  if (Array.isArray(balances)) {
    const rows = balanceRows(balances as Ledger[], r.scopes);
    const item = { ...r, scopes: [...r.scopes], committed, settle_op: operation };
    if (rows !== undefined && same(settledResult(item, storedBalancesOf(item, rows)), o.result))
      return { ...base, settle_rows: rows };
  }
  return { ...base, settle_result: JSON.stringify(o.result) };
}

/** The outcome a reservation item records for this commit or release request, if it does. */
export function settledOutcomeOf(
  item: Item | undefined,
  operation: string,
  key: string,
): StoredOutcome | undefined {
  if (!item || item.settle_key !== key || settledOperationOf(item) !== operation) return undefined;
  const fingerprint = fingerprintOf(item.settle_fingerprint) ?? '';
  const balances = storedBalances(item, 'settle_rows', 'settle_balances');
  if (balances) return { fingerprint, result: settledResult(item, balances) };
  if (typeof item.settle_result === 'string')
    return { fingerprint, result: JSON.parse(item.settle_result) };
  return undefined;
}

const settledOperationOf = (item: Item): string | undefined =>
  typeof item.settle_op === 'string' ? item.settle_op : SETTLED_BY[String(item.status)];

/** `Committed` or `Released`, exactly as the use case returned it, from the item. */
function settledResult(item: Item, balances: Ledger[]): unknown {
  const unit = item.unit as Unit;
  const estimate = Number(item.estimate);
  if (settledOperationOf(item) === 'release')
    return { status: 'RELEASED', released: { unit, amount: estimate }, balances };
  const charged = Number(item.committed);
  return {
    status: 'COMMITTED',
    charged: { unit, amount: charged },
    released: { unit, amount: Math.max(0, estimate - charged) },
    balances,
  };
}
