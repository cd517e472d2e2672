import type { Unit } from '../../domain/amounts.js';
import type { Ledger } from '../../domain/budget.js';
import { canonicalJson } from '../../domain/fingerprint.js';
import type { Reservation } from '../../domain/reservation.js';
import type { UsageEvent } from '../../domain/settlement.js';
import type { Item } from '../expressions.js';

// The outcome an idempotent operation stores with its record, so that a replay answers what
// the first request answered (docs/idempotency.md): the request's fingerprint and the
// operation's result. The store persists what the operation hands it: the whole result as JSON,
// or — when the operation's codec says its record rebuilds the rest — the result's balances as
// numbers (and its caps), to keep reservation and event items under 1 KB.

/** A result's compact form: its balances (one per scope of the record, in order) and caps. */
export interface CompactResult {
  readonly balances: readonly Ledger[];
  readonly caps?: unknown;
}

/** What an operation hands the store to keep with its record. */
export interface OutcomeToStore {
  readonly fingerprint: string;
  readonly result: unknown;
  /** Present when the operation's codec rebuilds `result` exactly from it and the record. */
  readonly compact?: CompactResult | undefined;
}

/** A stored outcome as read back: the fingerprint, and the result in the form it was kept. */
export interface StoredOutcome {
  readonly fingerprint: string;
  readonly result: StoredResult;
}

export type StoredResult =
  | { readonly form: 'whole'; readonly value: unknown }
  /** The operation's codec rebuilds the result from this and its record (`on`). */
  | { readonly form: 'compact'; readonly compact: CompactResult; readonly on: RecordFacts }
  /** Written by 0.1.0 (a wire body): its fingerprint still guards the key, nothing replays. */
  | { readonly form: 'unrenderable' };

/** The record a compact result is kept on, decoded: what its operation's codec rebuilds from. */
export interface RecordFacts {
  readonly reservation?: Reservation | undefined;
  readonly event?: UsageEvent | undefined;
}

/** Decodes the record an outcome is kept on (the item's own entity knows how). */
export type FactsOf = (item: Item) => RecordFacts;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * A fingerprint as stored: a SHA-256 in hex as its 32 bytes (a binary attribute, half the hex
 * text's size), anything else as the string it is.
 */
export const fingerprintValue = (fingerprint: string): string | Uint8Array =>
  SHA256_HEX.test(fingerprint) ? new Uint8Array(Buffer.from(fingerprint, 'hex')) : fingerprint;

/** The fingerprint of a stored value: bytes, or the text records held before 0.4. */
export function fingerprintOf(value: unknown): string | undefined {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  return typeof value === 'string' ? value : undefined;
}

const ROW = 5;

/**
 * Balances as one list of numbers, five per scope in `scopes` order: allocated, spent, reserved,
 * debt and overdraft limit; `remaining` is rebuilt (allocated − spent − reserved − debt, as after
 * every operation: docs/ledger-math.md). A DynamoDB number costs a byte per two significant
 * digits, about half its text. Undefined when the list would not give back exactly these
 * balances (not one per scope in order, or a remaining off the invariant).
 */
export function balanceRows(
  balances: readonly Ledger[],
  scopes: readonly string[],
  unit: Unit,
): number[] | undefined {
  if (balances.length !== scopes.length || balances.some((l, i) => l.scope !== scopes[i]))
    return undefined;
  const rows = balances.flatMap((l) => [
    l.allocated,
    l.spent,
    l.reserved,
    l.debt,
    l.overdraftLimit,
  ]);
  return canonicalJson(balancesOfRows(rows, scopes, unit)) === canonicalJson(balances)
    ? rows
    : undefined;
}

export function balancesOfRows(
  rows: readonly unknown[],
  scopes: readonly string[],
  unit: Unit,
): Ledger[] {
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

/** The outcome attributes of a record that keeps its result whole (an idempotency record). */
export const wholeOutcomeAttributes = (o: OutcomeToStore): Item => ({
  fingerprint: fingerprintValue(o.fingerprint),
  result: JSON.stringify(o.result),
});

/**
 * The outcome attributes of a record whose own `scopes` and `unit` hold the rest of the result
 * (reservation, event): rows and caps when the operation handed a compact form the rows give
 * back exactly, else the whole result.
 */
export function outcomeAttributes(
  o: OutcomeToStore,
  record: { readonly scopes: readonly string[]; readonly unit: Unit },
): Item {
  const rows = o.compact && balanceRows(o.compact.balances, record.scopes, record.unit);
  if (!o.compact || !rows) return wholeOutcomeAttributes(o);
  return {
    fingerprint: fingerprintValue(o.fingerprint),
    balance_rows: rows,
    // A reservation answered ALLOW_WITH_CAPS keeps its caps beside the balances.
    ...(o.compact.caps !== undefined && { caps: JSON.stringify(o.compact.caps) }),
  };
}

/** The outcome a record (reservation, event, idempotency record) stores, if any. */
export function storedOutcomeOf(
  item: Item | undefined,
  facts: FactsOf = () => ({}),
): StoredOutcome | undefined {
  if (!item) return undefined;
  return item.v === undefined ? outcomeOfUnversioned(item, facts) : outcomeOf(item, facts);
}

function outcomeOf(item: Item, facts: FactsOf): StoredOutcome | undefined {
  const fingerprint = fingerprintOf(item.fingerprint);
  const result = resultOf(item, item.balance_rows, item.result, facts);
  return fingerprint === undefined || !result ? undefined : { fingerprint, result };
}

/** The result kept as rows (with the record's `caps`) or as the whole result's JSON text. */
function resultOf(
  item: Item,
  rows: unknown,
  whole: unknown,
  facts: FactsOf,
): StoredResult | undefined {
  if (Array.isArray(rows)) {
    const balances = balancesOfRows(rows, item.scopes as string[], item.unit as Unit);
    return { form: 'compact', compact: withCaps(item, balances), on: facts(item) };
  }
  return typeof whole === 'string' ? { form: 'whole', value: JSON.parse(whole) } : undefined;
}

const withCaps = (item: Item, balances: readonly Ledger[]): CompactResult => ({
  balances,
  ...(typeof item.caps === 'string' && { caps: JSON.parse(item.caps) }),
});

// ---- settlements: the outcome of a commit or release, on the reservation it settles ----------

/** A settlement's operation is its status's: commit ends COMMITTED, release RELEASED. */
const SETTLED_BY: Record<string, string> = { COMMITTED: 'commit', RELEASED: 'release' };

/**
 * Commit and release finalize a reservation once, so their outcome lives on the reservation
 * item itself (SPEC's key scope is the endpoint, and each reservation has its own commit and
 * release endpoint): one item less per settlement (docs/idempotency.md). `settle_key` says which
 * request it answers; the operation is the status the settlement writes.
 */
export function settledOutcomeAttributes(
  o: OutcomeToStore,
  key: string,
  record: { readonly scopes: readonly string[]; readonly unit: Unit },
): Item {
  const rows = o.compact && balanceRows(o.compact.balances, record.scopes, record.unit);
  const base = { settle_key: key, settle_fingerprint: fingerprintValue(o.fingerprint) };
  return rows
    ? { ...base, settle_rows: rows }
    : { ...base, settle_result: JSON.stringify(o.result) };
}

/** The outcome a reservation item records for this commit or release request, if it does. */
export function settledOutcomeOf(
  item: Item | undefined,
  operation: string,
  key: string,
  facts: FactsOf = () => ({}),
): StoredOutcome | undefined {
  if (!item) return undefined;
  if (item.v === undefined) return settledOutcomeOfUnversioned(item, operation, key, facts);
  return settledOf(item, operation, key, facts);
}

function settledOf(
  item: Item,
  operation: string,
  key: string,
  facts: FactsOf,
): StoredOutcome | undefined {
  if (item.settle_key !== key || SETTLED_BY[String(item.status)] !== operation) return undefined;
  const result = resultOf(item, item.settle_rows, item.settle_result, facts);
  return result && { fingerprint: fingerprintOf(item.settle_fingerprint) ?? '', result };
}

// ---- older formats ----------------------------------------------------------------------------
// Records written before items carried `v`. 0.4's are in the current form already; 0.3's hold
// their balances as JSON text (a scope index and all six counters per balance, in any order),
// name a settlement's operation in `settle_op`, and their fingerprints as hex text (read as
// text, as any fingerprint that is not a SHA-256 still is); 0.2's hold the whole `result`, the
// current form; 0.1's the wire body in `response_body`. Delete these functions once no record
// without `v` is read: idempotency records expire 7 days after they are written, but reservation
// and event items are kept for good, so only after a backfill has rewritten every reservation
// and event item that has no `v`.

function outcomeOfUnversioned(item: Item, facts: FactsOf): StoredOutcome | undefined {
  const fingerprint = fingerprintOf(item.fingerprint);
  if (fingerprint === undefined) return undefined;
  if (typeof item.balances_compact === 'string') {
    const compact = withCaps(item, balancesOfCompact(item, item.balances_compact));
    return { fingerprint, result: { form: 'compact', compact, on: facts(item) } };
  }
  if (typeof item.response_body === 'string')
    return { fingerprint, result: { form: 'unrenderable' } };
  return outcomeOf(item, facts);
}

function settledOutcomeOfUnversioned(
  item: Item,
  operation: string,
  key: string,
  facts: FactsOf,
): StoredOutcome | undefined {
  const named =
    typeof item.settle_op === 'string' ? item.settle_op : SETTLED_BY[String(item.status)];
  if (item.settle_key !== key || named !== operation) return undefined;
  if (typeof item.settle_balances !== 'string') return settledOf(item, operation, key, facts);
  const balances = balancesOfCompact(item, item.settle_balances);
  return {
    fingerprint: fingerprintOf(item.settle_fingerprint) ?? '',
    result: { form: 'compact', compact: { balances }, on: facts(item) },
  };
}

/** 0.3's balances: per balance its scope's index in `scopes` and its six counters. */
function balancesOfCompact(item: Item, text: string): Ledger[] {
  const scopes = item.scopes as string[];
  const unit = item.unit as Unit;
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
