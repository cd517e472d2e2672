/**
 * What DynamoDB Local never does and AWS always does: a contention model of one DynamoDB table
 * (docs/contention-emulator.md). Real DynamoDB holds every item of a TransactWriteItems from
 * prepare to commit and *cancels* (never queues) any other write that touches one of them, and
 * caps each item and each index partition key at 1,000 write units a second. DynamoDB Local
 * applies one transaction at a time and does neither, so without this a hot ledger looks free.
 *
 * One model, two uses, one injectable clock:
 * - `installContentionEmulator`: an SDK middleware on the service's DynamoDB client that
 *   refuses what AWS would refuse, with the SDK's own exception classes, and forwards the rest
 *   to DynamoDB Local (which still does the real write);
 * - `simulate`: a discrete-event loop in virtual time over closed-loop clients whose
 *   transactions are given as item writes (no DynamoDB, no sockets).
 */
import {
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { type IndexDefinition, tableDefinition } from '../../functions/store/table.js';

// ---- time and chance ------------------------------------------------------------------------

export type Random = () => number;

/** Milliseconds, from any origin: `performance.now()` live, virtual time in the simulator. */
export interface Clock {
  now(): number;
}

/** A duration in ms, sampled with the caller's random source (so a seed fixes every draw). */
export interface Distribution {
  readonly text: string;
  sample(random: Random): number;
}

export const constant = (ms: number): Distribution => ({
  text: `${ms} ms`,
  sample: () => ms,
});

export const exponential = (meanMs: number): Distribution => ({
  text: `exponential, mean ${meanMs} ms`,
  // 1 − u is in (0, 1]: never log(0).
  sample: (random) => (meanMs > 0 ? -meanMs * Math.log(1 - random()) : 0),
});

const Z99 = 2.3263478740408408;

/** Log-normal with this median and 99th percentile: how network round trips are skewed. */
export function lognormal(medianMs: number, p99Ms: number): Distribution {
  const sigma = Math.log(p99Ms / medianMs) / Z99;
  return {
    text: `log-normal, p50 ${medianMs} ms, p99 ${p99Ms} ms`,
    sample: (random) => medianMs * Math.exp(sigma * standardNormal(random)),
  };
}

function standardNormal(random: Random): number {
  // Box–Muller; 1 − u keeps the logarithm finite.
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** mulberry32: small, fast and good enough to make a simulation repeatable from its seed. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// ---- what a write costs and touches -----------------------------------------------------------

type AttributeMap = Record<string, AttributeValue>;
type WriteKind = 'Put' | 'Update' | 'Delete' | 'ConditionCheck';

/** One item of a write as the model sees it: the item it holds and the buckets it draws on. */
export interface ItemWrite {
  /** Table + partition key + sort key. */
  readonly item: string;
  /** Write units charged to the item: 1 per started KB, 2 inside a transaction. */
  readonly units: number;
  /** Index entries put or deleted: 1 unit per started KB, per index partition key value. */
  readonly indexWrites: readonly IndexWrite[];
}

export interface IndexWrite {
  /** Table + index + the entry's index partition key value. */
  readonly partition: string;
  readonly units: number;
}

const KB = 1024;
/** DynamoDB's per-entry overhead in an index (GSI write and storage accounting). */
const INDEX_ENTRY_OVERHEAD = 100;
/** An item never seen put is sized as this: one started KB, the smallest write there is. */
export const ASSUMED_ITEM_BYTES = KB;

const startedKbs = (bytes: number) => Math.max(1, Math.ceil(bytes / KB));

/** DynamoDB's item size rules, on the marshalled form (numbers as their decimal text). */
export function attributeSize(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((a, s) => a + Buffer.byteLength(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((a, n) => a + numberSize(n), 0);
  if (v.BS !== undefined) return v.BS.reduce((a, b) => a + b.byteLength, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((a, x) => a + attributeSize(x) + 1, 0);
  if (v.M !== undefined)
    return (
      3 +
      Object.entries(v.M).reduce((a, [k, x]) => a + Buffer.byteLength(k) + attributeSize(x) + 1, 0)
    );
  return 0;
}

/** 1 byte per two significant digits, plus 1. */
function numberSize(text: string): number {
  const digits = text
    .replace(/^-/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export const itemSize = (item: AttributeMap): number =>
  Object.entries(item).reduce((a, [k, v]) => a + Buffer.byteLength(k) + attributeSize(v), 0);

const scalarText = (v: AttributeValue | undefined): string =>
  v?.S ?? v?.N ?? (v?.B ? Buffer.from(v.B).toString('base64') : JSON.stringify(v ?? null));

const { partitionKey: PK, sortKey: SK } = tableDefinition;
const INDEXES: readonly IndexDefinition[] = tableDefinition.indexes;
/** The attributes that place an item in the table and in every index. */
const KEY_ATTRIBUTES = new Set([PK, SK, ...INDEXES.flatMap((i) => [i.partitionKey, i.sortKey])]);

export const itemKeyOf = (table: string, key: AttributeMap): string =>
  `${table}\u0001${scalarText(key[PK])}\u0001${scalarText(key[SK])}`;

/** What the model remembers of an item written: its size and the attributes that key it. */
interface Remembered {
  readonly bytes: number;
  readonly keys: AttributeMap;
}

const keyAttributesOf = (item: AttributeMap): AttributeMap =>
  Object.fromEntries(Object.entries(item).filter(([k]) => KEY_ATTRIBUTES.has(k)));

/**
 * Sizes and index keys of the items written through the model, so that an Update (which names
 * only a key) is charged for the item it changes and moves its index entries from the right
 * partition. Bounded: the oldest entries go first.
 */
export class ItemMemory {
  private readonly items = new Map<string, Remembered>();

  constructor(private readonly max = 100_000) {}

  get(item: string): Remembered | undefined {
    return this.items.get(item);
  }

  set(item: string, r: Remembered | null): void {
    this.items.delete(item);
    if (r === null) return;
    this.items.set(item, r);
    if (this.items.size > this.max) {
      const oldest = this.items.keys().next().value;
      if (oldest !== undefined) this.items.delete(oldest);
    }
  }
}

/** The parts of a Put, Update, Delete or ConditionCheck the model reads (marshalled). */
interface WriteAction {
  readonly TableName?: string | undefined;
  readonly Item?: AttributeMap | undefined;
  readonly Key?: AttributeMap | undefined;
  readonly UpdateExpression?: string | undefined;
  readonly ExpressionAttributeNames?: Record<string, string> | undefined;
  readonly ExpressionAttributeValues?: AttributeMap | undefined;
}

/** A described write, and what the item looks like after it (null: gone; undefined: unknown). */
export interface DescribedWrite {
  readonly write: ItemWrite;
  readonly after: Remembered | null | undefined;
}

/**
 * The item, units and index writes of one action. Sizes: a Put's own item; an Update, Delete or
 * ConditionCheck is sized as the item was last written through the model, else 1 KB. Index
 * writes follow AWS's rules for KEYS_ONLY and ALL entries (1 unit per started KB of entry +
 * 100 bytes; a moved entry is a delete and a put); where an Update's old index keys are unknown
 * (item never seen), only the entries it puts by SETting an index partition key are counted.
 */
export function describeWrite(
  kind: WriteKind,
  action: WriteAction,
  memory: ItemMemory,
  transactional: boolean,
): DescribedWrite {
  const table = action.TableName ?? '';
  const key = kind === 'Put' ? (action.Item ?? {}) : (action.Key ?? {});
  const item = itemKeyOf(table, key);
  const known = memory.get(item);
  const perKb = transactional ? 2 : 1;
  if (kind === 'ConditionCheck') {
    const bytes = known?.bytes ?? ASSUMED_ITEM_BYTES;
    return { write: { item, units: perKb * startedKbs(bytes), indexWrites: [] }, after: undefined };
  }
  let before: AttributeMap | undefined = known?.keys;
  let after: AttributeMap | undefined;
  let bytes: number;
  const effects = kind === 'Update' ? updateEffects(action) : new Map<string, Effect>();
  if (kind === 'Put') {
    const putItem = action.Item ?? {};
    bytes = itemSize(putItem);
    // A Put on an item never seen is taken to create it (the service's Puts are put-if-absent).
    before ??= {};
    after = keyAttributesOf(putItem);
  } else if (kind === 'Update') {
    bytes = known?.bytes ?? ASSUMED_ITEM_BYTES;
    after = updatedKeys(before ?? {}, effects);
  } else {
    bytes = known?.bytes ?? ASSUMED_ITEM_BYTES;
    after = undefined;
  }
  const indexWrites: IndexWrite[] = [];
  for (const index of INDEXES) {
    const partitionOf = (keys: AttributeMap) =>
      `${table}\u0001${index.name}\u0001${scalarText(keys[index.partitionKey])}`;
    const entryBytes = (keys: AttributeMap) =>
      (index.projection === 'ALL'
        ? bytes
        : [PK, SK, index.partitionKey, index.sortKey].reduce(
            (a, k) => a + (keys[k] ? Buffer.byteLength(k) + attributeSize(keys[k]) : 0),
            0,
          )) + INDEX_ENTRY_OVERHEAD;
    const put = (keys: AttributeMap) =>
      indexWrites.push({ partition: partitionOf(keys), units: startedKbs(entryBytes(keys)) });
    if (before === undefined) {
      // An Update of an item never seen: its new entry is known only if the update sets the
      // index partition key (and does not remove the sort key).
      const setsPartition = typeof effects.get(index.partitionKey) === 'object';
      if (after && setsPartition && effects.get(index.sortKey) !== 'REMOVE')
        put({ ...key, ...after });
      continue;
    }
    const old = hasEntry(index, before) ? before : undefined;
    const now = after && hasEntry(index, after) ? after : undefined;
    const moved =
      old &&
      now &&
      (scalarText(old[index.partitionKey]) !== scalarText(now[index.partitionKey]) ||
        scalarText(old[index.sortKey]) !== scalarText(now[index.sortKey]));
    if (old && (!now || moved)) put({ ...key, ...old });
    if (now && (!old || moved)) put({ ...key, ...now });
    // An ALL entry copies the whole item: any change to it rewrites the entry.
    if (old && now && !moved && index.projection === 'ALL') put({ ...key, ...now });
  }
  const remembered =
    kind === 'Delete'
      ? null
      : after !== undefined && (kind === 'Put' || known)
        ? { bytes, keys: after }
        : undefined;
  return { write: { item, units: perKb * startedKbs(bytes), indexWrites }, after: remembered };
}

const hasEntry = (index: IndexDefinition, keys: AttributeMap) =>
  keys[index.partitionKey] !== undefined && keys[index.sortKey] !== undefined;

const UPDATE_CLAUSE = /\b(SET|REMOVE|ADD|DELETE)\s+(.*?)(?=\s+\b(?:SET|REMOVE|ADD|DELETE)\s|$)/gs;

/** Comma-separated parts at parenthesis depth 0 (`if_not_exists(#a, :b)` stays one part). */
function topLevelParts(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(from, i).trim());
      from = i + 1;
    }
  }
  parts.push(text.slice(from).trim());
  return parts.filter((p) => p.length > 0);
}

/** What an Update does to an attribute: SET to a value, SET to something computed, or REMOVE. */
type Effect = AttributeValue | 'COMPUTED' | 'REMOVE';

/** Attribute name → its effect, for the SET and REMOVE clauses of an update expression. */
function updateEffects(action: WriteAction): Map<string, Effect> {
  const names = action.ExpressionAttributeNames ?? {};
  const values = action.ExpressionAttributeValues ?? {};
  const effects = new Map<string, Effect>();
  const nameOf = (token: string) => names[token.trim()] ?? token.trim();
  for (const [, verb, body] of (action.UpdateExpression ?? '').matchAll(UPDATE_CLAUSE)) {
    for (const part of topLevelParts(body ?? '')) {
      if (verb === 'REMOVE') effects.set(nameOf(part), 'REMOVE');
      if (verb !== 'SET') continue;
      const at = part.indexOf('=');
      const rhs = part.slice(at + 1).trim();
      effects.set(nameOf(part.slice(0, at)), (/^:\w+$/.test(rhs) && values[rhs]) || 'COMPUTED');
    }
  }
  return effects;
}

/**
 * The key attributes after an Update: its SETs of plain values and its REMOVEs applied. A key
 * SET to a computed value (`if_not_exists`, arithmetic) is dropped: where its entry goes is
 * unknown, so it is not counted.
 */
function updatedKeys(before: AttributeMap, effects: Map<string, Effect>): AttributeMap {
  const after: AttributeMap = { ...before };
  for (const [attribute, effect] of effects) {
    if (!KEY_ATTRIBUTES.has(attribute)) continue;
    if (effect === 'REMOVE' || effect === 'COMPUTED') delete after[attribute];
    else after[attribute] = effect;
  }
  return after;
}

/** Each TransactItem as the model sees it, in the order sent (CancellationReasons follow it). */
export function describeTransaction(
  items: readonly TransactWriteItem[],
  memory: ItemMemory,
): DescribedWrite[] {
  return items.map((entry) => {
    if (entry.Put) return describeWrite('Put', entry.Put, memory, true);
    if (entry.Update) return describeWrite('Update', entry.Update, memory, true);
    if (entry.Delete) return describeWrite('Delete', entry.Delete, memory, true);
    return describeWrite('ConditionCheck', entry.ConditionCheck ?? {}, memory, true);
  });
}

// ---- the rules: holds and token buckets ------------------------------------------------------

export interface ContentionSettings {
  /** How long a transaction holds its items, from the moment it is sent. */
  readonly hold: Distribution;
  /** How long a cancelled transaction still holds the items it prepared before the refusal. */
  readonly cancelHold: Distribution;
  /** Extra latency added to every call before it is forwarded (live emulator only). */
  readonly latency: Distribution;
  /** The per-item and per-index-partition-key cap. */
  readonly writeUnitsPerSecond: number;
  /** Unused capacity a bucket keeps, in seconds of the cap. */
  readonly burstSeconds: number;
}

/**
 * Defaults (docs/contention-emulator.md): a transaction holds its items for an exponentially
 * distributed 13 ms (about half of a ~25 ms TransactWriteItems round trip: the prepare→commit
 * window), a cancelled one its prepared items for a quarter of that; 1,000 units/s per item and
 * per index key, with at most one second of unused capacity banked.
 */
export const DEFAULT_SETTINGS: ContentionSettings = {
  hold: exponential(13),
  cancelHold: exponential(3.25),
  latency: constant(0),
  writeUnitsPerSecond: 1_000,
  burstSeconds: 1,
};

export type CancellationCode = 'None' | 'TransactionConflict' | 'ThrottlingError';

/**
 * `until`: when the holds it took end. Its answer never comes before that: AWS answers a
 * transaction after it commits (or cancels), so a client never races its own holds.
 */
export type TransactionVerdict =
  | { readonly kind: 'prepared'; readonly ticket: number; readonly until: number }
  | {
      readonly kind: 'cancelled';
      readonly until: number;
      readonly cause: 'conflict' | 'throttle';
      /** Index-aligned with the items: the refusal at the first failing item, None elsewhere. */
      readonly reasons: readonly CancellationCode[];
    };

export type PlainWriteVerdict = 'ok' | 'conflict' | 'throttled';

export interface ContentionCounters {
  /** TransactWriteItems seen. */
  transactions: number;
  /** Cancelled with TransactionConflict: an item was held by another transaction. */
  cancelledForConflict: number;
  /** Cancelled with ThrottlingError: an item or index key was over its write rate. */
  cancelledForThrottling: number;
  /** PutItem / UpdateItem / DeleteItem seen. */
  plainWrites: number;
  /** Refused with TransactionConflictException: the item was held by a transaction. */
  plainWriteConflicts: number;
  /** Refused with ProvisionedThroughputExceededException (each SDK retry counts again). */
  plainWritesThrottled: number;
  /** TransactGetItems seen. */
  transactionalReads: number;
  /** TransactGetItems cancelled with TransactionConflict: a transaction held one of its items. */
  readsCancelledForConflict: number;
}

const emptyCounters = (): ContentionCounters => ({
  transactions: 0,
  cancelledForConflict: 0,
  cancelledForThrottling: 0,
  plainWrites: 0,
  plainWriteConflicts: 0,
  plainWritesThrottled: 0,
  transactionalReads: 0,
  readsCancelledForConflict: 0,
});

interface Hold {
  readonly until: number;
  readonly ticket: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Holds and token buckets of one table, on any clock. Prepare walks a transaction's items in
 * order, as the service sends them: the first item held by another transaction (conflict) or
 * over its rate (throttle) cancels it; the items prepared before it stay held for the cancel
 * hold. Cancelled transactions consume no units (AWS does not document billing them).
 */
export class ContentionModel {
  readonly counters: ContentionCounters = emptyCounters();
  /**
   * Transactions cancelled for a conflict, by the item met held (its key, the table's name
   * left out): where the contention is. At most 200 items are counted.
   */
  readonly conflictsByItem: Record<string, number> = {};
  private readonly holds = new Map<string, Hold>();
  private readonly buckets = new Map<string, Bucket>();
  /** Units the transaction being prepared draws per bucket (reused: one per call is costly). */
  private readonly drawn = new Map<string, number>();
  private nextTicket = 1;
  private operations = 0;

  constructor(
    readonly settings: ContentionSettings,
    private readonly clock: Clock,
    private readonly random: Random,
  ) {}

  /** A TransactWriteItems sent now: prepared (its items held), or cancelled and why. */
  prepareTransaction(writes: readonly ItemWrite[]): TransactionVerdict {
    const now = this.clock.now();
    this.tidy(now);
    this.counters.transactions++;
    this.drawn.clear();
    for (let i = 0; i < writes.length; i++) {
      const w = writes[i];
      if (!w) continue;
      const code = this.isHeld(w.item, now)
        ? 'TransactionConflict'
        : this.fits(w, now)
          ? undefined
          : 'ThrottlingError';
      if (!code) continue;
      const ticket = this.nextTicket++;
      const until = i > 0 ? now + this.settings.cancelHold.sample(this.random) : now;
      for (const prepared of writes.slice(0, i)) this.holds.set(prepared.item, { until, ticket });
      if (code === 'TransactionConflict') {
        this.counters.cancelledForConflict++;
        const byItem = this.conflictsByItem;
        const name = w.item.slice(w.item.indexOf('\u0001') + 1).replace('\u0001', ' ');
        if (name in byItem || Object.keys(byItem).length < 200)
          byItem[name] = (byItem[name] ?? 0) + 1;
      } else this.counters.cancelledForThrottling++;
      return {
        kind: 'cancelled',
        until,
        cause: code === 'TransactionConflict' ? 'conflict' : 'throttle',
        reasons: writes.map((_, j) => (j === i ? code : 'None')),
      };
    }
    const ticket = this.nextTicket++;
    const until = now + this.settings.hold.sample(this.random);
    for (const w of writes) {
      this.holds.set(w.item, { until, ticket });
      this.consume(w, now);
    }
    return { kind: 'prepared', ticket, until };
  }

  /**
   * The transaction was cancelled downstream (a condition failed in DynamoDB Local): its items
   * are let go as a cancelled transaction's would be, a cancel hold after it was sent.
   */
  cancelled(ticket: number, writes: readonly ItemWrite[], sentAt: number): void {
    const until = sentAt + this.settings.cancelHold.sample(this.random);
    for (const { item } of writes) {
      const hold = this.holds.get(item);
      if (hold?.ticket === ticket && hold.until > until) this.holds.set(item, { until, ticket });
    }
  }

  /**
   * A TransactGetItems sent now: AWS cancels it when a transaction holds one of its items
   * (`TransactionConflict` at that item); it holds nothing itself. The index of the first held
   * item, or undefined: read.
   */
  transactionalRead(items: readonly string[]): number | undefined {
    const now = this.clock.now();
    this.counters.transactionalReads++;
    const held = items.findIndex((item) => this.isHeld(item, now));
    if (held < 0) return undefined;
    this.counters.readsCancelledForConflict++;
    return held;
  }

  /** A PutItem, UpdateItem or DeleteItem sent now. */
  plainWrite(write: ItemWrite): PlainWriteVerdict {
    const now = this.clock.now();
    this.tidy(now);
    this.counters.plainWrites++;
    if (this.isHeld(write.item, now)) {
      this.counters.plainWriteConflicts++;
      return 'conflict';
    }
    this.drawn.clear();
    if (!this.fits(write, now)) {
      this.counters.plainWritesThrottled++;
      return 'throttled';
    }
    this.consume(write, now);
    return 'ok';
  }

  private isHeld(item: string, now: number): boolean {
    return (this.holds.get(item)?.until ?? -Infinity) > now;
  }

  private get capacity(): number {
    return this.settings.writeUnitsPerSecond * this.settings.burstSeconds;
  }

  private tokens(bucket: string, now: number): number {
    const b = this.buckets.get(bucket);
    if (!b) return this.capacity;
    return Math.min(
      this.capacity,
      b.tokens + ((now - b.at) * this.settings.writeUnitsPerSecond) / 1000,
    );
  }

  /** Every bucket the write draws on has room for it, on top of what its transaction drew. */
  private fits(w: ItemWrite, now: number): boolean {
    const room = (bucket: string, units: number) =>
      this.tokens(bucket, now) >= (this.drawn.get(bucket) ?? 0) + units;
    if (!room(w.item, w.units)) return false;
    for (const x of w.indexWrites) if (!room(x.partition, x.units)) return false;
    const draw = (bucket: string, units: number) =>
      this.drawn.set(bucket, (this.drawn.get(bucket) ?? 0) + units);
    draw(w.item, w.units);
    for (const x of w.indexWrites) draw(x.partition, x.units);
    return true;
  }

  private consume(w: ItemWrite, now: number): void {
    const take = (bucket: string, units: number) =>
      this.buckets.set(bucket, { tokens: this.tokens(bucket, now) - units, at: now });
    take(w.item, w.units);
    for (const x of w.indexWrites) take(x.partition, x.units);
  }

  /** Forgets expired holds and refilled buckets now and then, so memory stays flat. */
  private tidy(now: number): void {
    if (++this.operations % 4_096 !== 0) return;
    for (const [item, hold] of this.holds) if (hold.until <= now) this.holds.delete(item);
    for (const [key] of this.buckets)
      if (this.tokens(key, now) >= this.capacity) this.buckets.delete(key);
  }
}

// ---- the live emulator: an SDK middleware ----------------------------------------------------

const CONFLICT_MESSAGE = 'Transaction is ongoing for the item';
const THROTTLE_MESSAGE =
  'Throughput exceeds the current capacity for one or more keys of your table or index. Consider revisiting your key design.';

/** What AWS answers for a cancelled TransactWriteItems: reasons index-aligned with the items. */
export function transactionCanceled(
  reasons: readonly CancellationCode[],
): TransactionCanceledException {
  return new TransactionCanceledException({
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.join(', ')}]`,
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: reasons.map(
      (code): CancellationReason =>
        code === 'None'
          ? { Code: 'None' }
          : {
              Code: code,
              Message: code === 'TransactionConflict' ? CONFLICT_MESSAGE : THROTTLE_MESSAGE,
            },
    ),
  });
}

const PLAIN_WRITES: Record<string, Exclude<WriteKind, 'ConditionCheck'>> = {
  PutItemCommand: 'Put',
  UpdateItemCommand: 'Update',
  DeleteItemCommand: 'Delete',
};

export interface EmulatorOptions {
  readonly settings?: Partial<ContentionSettings> | undefined;
  readonly clock?: Clock | undefined;
  readonly random?: Random | undefined;
  /** How it waits (extra latency, an answer held until its holds end); tests move a clock. */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

/**
 * The rules applied to live calls: a TransactWriteItems takes its holds when it is sent, for a
 * window that does not depend on how long DynamoDB Local then takes (Local still applies it,
 * one at a time); one that meets a held or saturated item is cancelled and never forwarded.
 * Plain writes on a held item fail with TransactionConflictException, over-rate ones with
 * ProvisionedThroughputExceededException (which the SDK retries). A TransactGetItems that meets
 * a held item is cancelled (TransactionConflict), as AWS cancels it; other reads pass.
 */
export class ContentionEmulator {
  readonly model: ContentionModel;
  private readonly memory = new ItemMemory();
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: EmulatorOptions = {}) {
    this.clock = options.clock ?? performance;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.model = new ContentionModel(
      { ...DEFAULT_SETTINGS, ...options.settings },
      this.clock,
      this.random,
    );
  }

  get counters(): Readonly<ContentionCounters> {
    return this.model.counters;
  }

  /** One call: `command` as the SDK names it, its marshalled input, and how to send it on. */
  async handle<T>(command: string, input: unknown, forward: () => Promise<T>): Promise<T> {
    if (command === 'TransactWriteItemsCommand') {
      const items = (input as { TransactItems?: TransactWriteItem[] }).TransactItems ?? [];
      return this.transaction(items, forward);
    }
    if (command === 'TransactGetItemsCommand') {
      const gets = (input as { TransactItems?: { Get?: WriteAction }[] }).TransactItems ?? [];
      const held = this.model.transactionalRead(
        gets.map((g) => itemKeyOf(g.Get?.TableName ?? '', g.Get?.Key ?? {})),
      );
      await this.delay();
      if (held !== undefined) {
        throw transactionCanceled(
          gets.map((_, i) => (i === held ? 'TransactionConflict' : 'None')),
        );
      }
      return forward();
    }
    const kind = PLAIN_WRITES[command];
    if (kind) return this.plainWrite(kind, input as WriteAction, forward);
    if (command === 'BatchWriteItemCommand') {
      // Not refused or throttled (the service does not batch writes); only remembered.
      await this.delay();
      const result = await forward();
      this.rememberBatch(input);
      return result;
    }
    await this.delay();
    return forward();
  }

  private async transaction<T>(items: TransactWriteItem[], forward: () => Promise<T>): Promise<T> {
    const sentAt = this.clock.now();
    const described = describeTransaction(items, this.memory);
    const writes = described.map((d) => d.write);
    const verdict = this.model.prepareTransaction(writes);
    await this.delay();
    if (verdict.kind === 'cancelled') {
      await this.until(verdict.until);
      throw transactionCanceled(verdict.reasons);
    }
    try {
      const result = await forward();
      for (const d of described) if (d.after !== undefined) this.memory.set(d.write.item, d.after);
      await this.until(verdict.until);
      return result;
    } catch (error) {
      this.model.cancelled(verdict.ticket, writes, sentAt);
      throw error;
    }
  }

  /** Waits until the clock reads `at`: an answer comes after the commit it reports. */
  private async until(at: number): Promise<void> {
    const wait = at - this.clock.now();
    if (wait > 0) await this.sleep(wait);
  }

  private async plainWrite<T>(
    kind: Exclude<WriteKind, 'ConditionCheck'>,
    action: WriteAction,
    forward: () => Promise<T>,
  ): Promise<T> {
    const described = describeWrite(kind, action, this.memory, false);
    const verdict = this.model.plainWrite(described.write);
    await this.delay();
    if (verdict === 'conflict')
      throw new TransactionConflictException({
        message: CONFLICT_MESSAGE,
        $metadata: { httpStatusCode: 400 },
      });
    if (verdict === 'throttled')
      throw new ProvisionedThroughputExceededException({
        message: THROTTLE_MESSAGE,
        $metadata: { httpStatusCode: 400 },
        ThrottlingReasons: [{ reason: 'TableWriteKeyRangeThroughputExceeded' }],
      });
    const result = await forward();
    if (described.after !== undefined) this.memory.set(described.write.item, described.after);
    return result;
  }

  private rememberBatch(input: unknown): void {
    const requests = (input as { RequestItems?: Record<string, unknown[]> }).RequestItems ?? {};
    for (const [table, list] of Object.entries(requests)) {
      for (const request of list as {
        PutRequest?: { Item?: AttributeMap };
        DeleteRequest?: { Key?: AttributeMap };
      }[]) {
        const d = request.PutRequest
          ? describeWrite('Put', { TableName: table, ...request.PutRequest }, this.memory, false)
          : describeWrite(
              'Delete',
              { TableName: table, ...request.DeleteRequest },
              this.memory,
              false,
            );
        if (d.after !== undefined) this.memory.set(d.write.item, d.after);
      }
    }
  }

  private async delay(): Promise<void> {
    const ms = this.model.settings.latency.sample(this.random);
    if (ms > 0) await this.sleep(ms);
  }
}

const MIDDLEWARE_NAME = 'contentionEmulator';
let installed: ContentionEmulator | undefined;

/** The emulator installed in this process, if any (the bench's probe reports its counters). */
export const installedContentionEmulator = (): ContentionEmulator | undefined => installed;

/**
 * Installs the emulator on a DynamoDB client (and so on every DocumentClient built on it). It
 * sits in the finalizeRequest step at low priority: after serialization, so `args.input` is the
 * marshalled input the DocumentClient produced, and inside the SDK's retry middleware
 * (finalizeRequest, high priority), so every SDK retry of a throttled plain write passes through
 * it again, as each would reach AWS. TransactionCanceledException and
 * TransactionConflictException are not retried by the SDK, as with AWS.
 */
export function installContentionEmulator(
  client: DynamoDBClient,
  options: EmulatorOptions = {},
): ContentionEmulator {
  const emulator = new ContentionEmulator(options);
  client.middlewareStack.add(
    (next, context) => (args) =>
      emulator.handle(String(context.commandName), args.input, () => next(args)),
    { step: 'finalizeRequest', priority: 'low', name: MIDDLEWARE_NAME, override: true },
  );
  installed = emulator;
  return emulator;
}

export function uninstallContentionEmulator(client: DynamoDBClient): void {
  client.middlewareStack.remove(MIDDLEWARE_NAME);
  installed = undefined;
}

/**
 * `EMULATE_CONTENTION`: unset, empty, `0` or `false` is off; `1` or `true` the defaults; or
 * comma-separated settings, e.g. `hold_ms=13,latency_ms=0`. A number alone is the setting's
 * usual shape (holds exponential with that mean, latency constant); `exp:13`, `fixed:13` and
 * `lognormal:20:90` (p50:p99) name one. `cancel_hold_ms`, `wru_per_s` and `burst_s` as well.
 */
export function contentionSettingsFromText(
  text: string | undefined,
): Partial<ContentionSettings> | undefined {
  const value = text?.trim() ?? '';
  if (['', '0', 'false'].includes(value)) return undefined;
  if (['1', 'true'].includes(value)) return {};
  const settings: { -readonly [K in keyof ContentionSettings]?: ContentionSettings[K] } = {};
  for (const pair of value.split(',')) {
    const [name = '', raw = ''] = pair.split('=').map((s) => s.trim());
    switch (name) {
      case 'hold_ms':
        settings.hold = distributionOf(raw, exponential, name);
        break;
      case 'cancel_hold_ms':
        settings.cancelHold = distributionOf(raw, exponential, name);
        break;
      case 'latency_ms':
        settings.latency = distributionOf(raw, constant, name);
        break;
      case 'wru_per_s':
        settings.writeUnitsPerSecond = positiveNumber(raw, name);
        break;
      case 'burst_s':
        settings.burstSeconds = positiveNumber(raw, name);
        break;
      default:
        throw new Error(
          `EMULATE_CONTENTION: unknown setting '${name}' (hold_ms, cancel_hold_ms, latency_ms, wru_per_s, burst_s)`,
        );
    }
  }
  return settings;
}

function positiveNumber(text: string, name: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || text === '')
    throw new Error(`EMULATE_CONTENTION: ${name} must be a number ≥ 0, not '${text}'`);
  return n;
}

function distributionOf(
  text: string,
  usual: (ms: number) => Distribution,
  name: string,
): Distribution {
  const [family, ...args] = text.split(':');
  const numbers = (count: number) => {
    if (args.length !== count) throw new Error(`EMULATE_CONTENTION: ${name}=${text}`);
    return args.map((a) => positiveNumber(a, name));
  };
  switch (family) {
    case 'exp':
      return exponential(numbers(1)[0] ?? 0);
    case 'fixed':
      return constant(numbers(1)[0] ?? 0);
    case 'lognormal': {
      const [p50 = 0, p99 = 0] = numbers(2);
      return lognormal(p50, p99);
    }
    default:
      return usual(positiveNumber(text, name));
  }
}

// ---- the simulator: closed-loop clients in virtual time ---------------------------------------

/** How a request retries a cancelled transaction before it fails (the service's transact). */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly retries: number;
  backoffMs(attempt: number, random: Random): number;
  /** Whether a throttled transaction is retried like a conflict, or fails at once. */
  readonly retriesThrottling: boolean;
}

/** One request of the service as the simulator sees it: reads, then one transaction. */
export interface OperationShape {
  readonly name: string;
  /** Read calls made, one after the other, before the transaction. */
  readonly reads: number;
  readonly writes: readonly ItemWrite[];
  /**
   * The writes of attempt n (0: the first), when a retry sends other items than the first
   * attempt (a hold on a sharded budget retried on another shard); `writes` otherwise.
   */
  readonly writesAt?: ((attempt: number) => readonly ItemWrite[]) | undefined;
  readonly retry: RetryPolicy;
}

export interface SimulationOptions {
  readonly clients: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** The requests of a client's n-th pair, in order (e.g. reserve, commit). */
  readonly pair: (client: number, n: number) => readonly OperationShape[];
  /** Round trip of a TransactWriteItems, committed or cancelled alike. */
  readonly transactionLatency?: Distribution | undefined;
  /** Round trip of each read call. */
  readonly readLatency?: Distribution | undefined;
  readonly settings?: Partial<ContentionSettings> | undefined;
  readonly seed: number;
  /**
   * Clients that honour the 503's Retry-After, as SPEC asks of them (retry INTERNAL_ERROR with
   * backoff): after a failed request they wait this long (jittered ±50 %), then retry a failed
   * commit (a granted hold is settled, not abandoned) or start their next pair after a failed
   * reserve. Undefined: the worst case, clients that abandon and go again at once.
   */
  readonly retryAfterMs?: number | undefined;
  /**
   * The work a reservation guards (an LLM call, a tool run): the time between a reserve's
   * answer and its commit. Undefined: none, a closed loop that only reserves and commits.
   */
  readonly workTime?: Distribution | undefined;
}

export interface OperationTally {
  requests: number;
  failed: number;
}

export interface SimulationResult {
  readonly clients: number;
  readonly measuredSeconds: number;
  /** Pairs whose every request succeeded, completed in the window. */
  readonly pairs: number;
  readonly pairsPerSecond: number;
  readonly failedPairs: number;
  readonly requests: number;
  /** Requests that ran out of retries: today's service answers them 503 (500 before). */
  readonly failedRequests: number;
  readonly failureRate: number;
  readonly byOperation: Readonly<Record<string, OperationTally>>;
  /** Transactions sent (first attempts and retries). */
  readonly attempts: number;
  /** Of the attempts: cancelled for a conflict, and for throttling. */
  readonly conflictRate: number;
  readonly throttleRate: number;
  readonly pairLatencyMs: { readonly p50: number; readonly p99: number };
}

/**
 * In-region round trips (docs/contention-emulator.md § Calibration): a TransactWriteItems of 5
 * items measured p50 25.3 ms, p99 92.5 ms, and a failing one the same (alexdebrie 2020); no
 * public figure for a small strongly consistent BatchGetItem, taken below that benchmark's
 * PutItem (p50 7.55, p99 16.2 ms).
 */
export const DEFAULT_TRANSACTION_LATENCY = lognormal(25, 92.5);
export const DEFAULT_READ_LATENCY = lognormal(5, 16);

/** Min-heap of timed callbacks; the sequence number breaks ties in scheduling order. */
class EventQueue {
  private readonly heap: TimedEvent[] = [];
  private seq = 0;

  push(at: number, run: () => void): void {
    const h = this.heap;
    const event = { at, seq: this.seq++, run };
    let i = h.length;
    h.push(event);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = h[parent] as TimedEvent;
      if (!earlier(event, above)) break;
      h[i] = above;
      i = parent;
    }
    h[i] = event;
  }

  pop(): TimedEvent | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    // Sift the last event down from the root, moving smaller children up.
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= h.length) break;
      const right = left + 1;
      const child =
        right < h.length && earlier(h[right] as TimedEvent, h[left] as TimedEvent) ? right : left;
      const smaller = h[child] as TimedEvent;
      if (!earlier(smaller, last)) break;
      h[i] = smaller;
      i = child;
    }
    h[i] = last;
    return top;
  }
}

interface TimedEvent {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
}

const earlier = (a: TimedEvent, b: TimedEvent) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

const percentile = (sorted: readonly number[], q: number): number =>
  sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;

/**
 * N clients, each running pairs back to back: every request makes its reads, then sends its
 * transaction, which the model prepares or cancels at the moment it is sent; the answer comes
 * a transaction latency later. A cancelled request retries by its policy and fails once the
 * retries are spent; a failed request ends its pair and the client starts the next one.
 * Everything completing inside the window (after the warm-up) is counted. Deterministic for a
 * seed.
 */
export function simulate(o: SimulationOptions): SimulationResult {
  const random = seededRandom(o.seed);
  const transactionLatency = o.transactionLatency ?? DEFAULT_TRANSACTION_LATENCY;
  const readLatency = o.readLatency ?? DEFAULT_READ_LATENCY;
  let now = 0;
  const queue = new EventQueue();
  const model = new ContentionModel(
    { ...DEFAULT_SETTINGS, ...o.settings },
    { now: () => now },
    random,
  );
  const windowStart = o.warmupMs;
  const windowEnd = o.warmupMs + o.durationMs;
  const inWindow = (t: number) => t >= windowStart && t < windowEnd;
  const byOperation: Record<string, OperationTally> = {};
  const latencies: number[] = [];
  let [pairs, failedPairs, attempts, conflicts, throttles] = [0, 0, 0, 0, 0];

  const finishRequest = (op: OperationShape, ok: boolean) => {
    if (!inWindow(now)) return;
    const tally = byOperation[op.name] ?? { requests: 0, failed: 0 };
    byOperation[op.name] = tally;
    tally.requests++;
    if (!ok) tally.failed++;
  };
  const startPair = (client: number, n: number) => {
    const ops = o.pair(client, n);
    const began = now;
    const request = (i: number) => {
      const op = ops[i];
      if (!op) {
        if (inWindow(now)) {
          pairs++;
          latencies.push(now - began);
        }
        startPair(client, n + 1);
        return;
      }
      let reads = i > 0 && o.workTime ? o.workTime.sample(random) : 0;
      for (let r = 0; r < op.reads; r++) reads += readLatency.sample(random);
      queue.push(now + reads, () => attempt(op, i, 0));
    };
    const attempt = (op: OperationShape, i: number, retry: number) => {
      const verdict = model.prepareTransaction(op.writesAt ? op.writesAt(retry) : op.writes);
      if (inWindow(now)) {
        attempts++;
        if (verdict.kind === 'cancelled' && verdict.cause === 'conflict') conflicts++;
        if (verdict.kind === 'cancelled' && verdict.cause === 'throttle') throttles++;
      }
      const answeredAt = Math.max(now + transactionLatency.sample(random), verdict.until);
      queue.push(answeredAt, () => {
        if (verdict.kind === 'prepared') {
          finishRequest(op, true);
          request(i + 1);
          return;
        }
        const retryable = verdict.cause === 'conflict' || op.retry.retriesThrottling;
        if (retryable && retry < op.retry.retries) {
          queue.push(now + op.retry.backoffMs(retry, random), () => attempt(op, i, retry + 1));
          return;
        }
        finishRequest(op, false);
        if (o.retryAfterMs !== undefined) {
          const wait = o.retryAfterMs * (0.5 + random());
          // A commit is retried until it lands; a refused reserve gives up its pair.
          if (i > 0) queue.push(now + wait, () => attempt(op, i, 0));
          else queue.push(now + wait, () => startPair(client, n + 1));
          if (i === 0 && inWindow(now)) failedPairs++;
          return;
        }
        if (inWindow(now)) failedPairs++;
        startPair(client, n + 1);
      });
    };
    request(0);
  };

  // Clients start spread over the first 100 ms, as a load generator's would.
  for (let c = 0; c < o.clients; c++) queue.push(random() * 100, () => startPair(c, 0));
  for (let event = queue.pop(); event && event.at < windowEnd; event = queue.pop()) {
    now = event.at;
    event.run();
  }

  const seconds = o.durationMs / 1000;
  const requests = Object.values(byOperation).reduce((a, t) => a + t.requests, 0);
  const failedRequests = Object.values(byOperation).reduce((a, t) => a + t.failed, 0);
  latencies.sort((a, b) => a - b);
  return {
    clients: o.clients,
    measuredSeconds: seconds,
    pairs,
    pairsPerSecond: pairs / seconds,
    failedPairs,
    requests,
    failedRequests,
    failureRate: requests > 0 ? failedRequests / requests : 0,
    byOperation,
    attempts,
    conflictRate: attempts > 0 ? conflicts / attempts : 0,
    throttleRate: attempts > 0 ? throttles / attempts : 0,
    pairLatencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
  };
}
