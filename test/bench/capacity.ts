import { type IndexDefinition, tableDefinition } from '../../functions/store/table.js';

/**
 * AWS's capacity rules applied to the items a request reads and writes. DynamoDB Local reports
 * ConsumedCapacity, but sums a transaction's items before rounding (three 300-byte updates in
 * one TransactWriteItems report 2 WRU where AWS bills 2 each), so the bench computes units
 * itself, from item sizes:
 * - an item's size is the sum of its attribute names and values (strings: UTF-8 bytes;
 *   numbers: 1 byte per 2 significant digits + 1; maps and lists: 3 + 1 per element);
 * - writes: 1 WRU per started KB of the larger of the old and new item, twice in a transaction;
 * - reads: 1 RRU per started 4 KB of each item, strongly consistent (half for eventually
 *   consistent), twice in a transaction; a key that finds no item still costs the minimum;
 * - a Query costs the started 4 KBs of all items it reads together;
 * - index upkeep: each index entry put or deleted is 1 WRU per started KB of the entry
 *   (table keys + index keys + projected attributes + 100 bytes), a key change is both —
 *   charged as standard writes (DynamoDB Local charges them twice in a transaction; AWS
 *   documents the 2× for the transaction's own items).
 */

export type Item = Record<string, unknown>;

function numberSize(n: number | bigint): number {
  if (typeof n === 'number' && Number.isSafeInteger(n)) {
    // Significant digits of an integer: drop trailing zeros, count the rest.
    let x = Math.abs(n);
    if (x === 0) return 2;
    while (x % 10 === 0) x /= 10;
    let digits = 0;
    for (; x >= 1; x = Math.floor(x / 10)) digits++;
    return Math.ceil(digits / 2) + 1;
  }
  const digits = String(n)
    .replace(/^-/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export function valueSize(v: unknown): number {
  if (v === undefined) return 0;
  if (v === null || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') return numberSize(v);
  if (v instanceof Uint8Array) return v.byteLength;
  let size = 0;
  if (v instanceof Set) {
    for (const x of v) size += valueSize(x);
    return size;
  }
  if (Array.isArray(v)) {
    for (const x of v) size += valueSize(x) + 1;
    return 3 + size;
  }
  if (typeof v === 'object') {
    for (const k in v as Item) {
      const x = (v as Item)[k];
      if (x !== undefined) size += Buffer.byteLength(k) + valueSize(x) + 1;
    }
    return 3 + size;
  }
  return 0;
}

export function itemSize(item: Item): number {
  let size = 0;
  for (const k in item) {
    const x = item[k];
    if (x !== undefined) size += Buffer.byteLength(k) + valueSize(x);
  }
  return size;
}

const kb = (bytes: number, unit: number) => Math.max(1, Math.ceil(bytes / unit));

const UPDATE_CLAUSE = /(SET|REMOVE)\s+(.*?)(?=\s+(?:SET|REMOVE)\s|$)/gs;
const SUM = /^(.*?)\s*([+-])\s*(.*)$/;

function operandOf(
  token: string,
  before: Item,
  names: Record<string, string>,
  values: Record<string, unknown>,
): unknown {
  const t = token.trim();
  return t.startsWith(':') ? values[t] : before[names[t] ?? t];
}

/** Applies a SET / REMOVE update expression (the forms the store writes) to an item image. */
export function applyUpdate(
  before: Item,
  expression: string,
  names: Record<string, string> = {},
  values: Record<string, unknown> = {},
): Item {
  const after: Item = { ...before };
  for (const [, verb, body] of expression.matchAll(UPDATE_CLAUSE)) {
    for (const part of (body ?? '').split(',')) {
      if (verb === 'REMOVE') {
        delete after[names[part.trim()] ?? part.trim()];
        continue;
      }
      const [lhs = '', rhs = ''] = part.split('=');
      const target = names[lhs.trim()] ?? lhs.trim();
      const sum = SUM.exec(rhs.trim());
      after[target] = sum
        ? Number(operandOf(sum[1] ?? '', before, names, values) ?? 0) +
          (sum[2] === '-' ? -1 : 1) * Number(operandOf(sum[3] ?? '', before, names, values) ?? 0)
        : operandOf(rhs, before, names, values);
    }
  }
  return after;
}

const KEY_ATTRIBUTES = [tableDefinition.partitionKey, tableDefinition.sortKey];

function indexEntry(index: IndexDefinition, item: Item | undefined): Item | undefined {
  if (!item || item[index.partitionKey] === undefined || item[index.sortKey] === undefined)
    return undefined;
  if (index.projection === 'ALL') return item;
  const entry: Item = {};
  for (const k of [...KEY_ATTRIBUTES, index.partitionKey, index.sortKey]) entry[k] = item[k];
  return entry;
}

/** Same attribute values (item images share unchanged nested values by reference). */
function sameEntry(a: Item, b: Item): boolean {
  if (a === b) return true;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => a[k] === b[k]);
}

export interface WriteUnits {
  readonly table: number;
  readonly indexes: Record<string, number>;
}

/** Units of one item written (`before` undefined: it did not exist; `after` undefined: deleted). */
export function writeUnits(
  before: Item | undefined,
  after: Item | undefined,
  transactional: boolean,
): WriteUnits {
  const sizeBefore = before ? itemSize(before) : 0;
  const sizeAfter = after ? itemSize(after) : 0;
  const indexes: Record<string, number> = {};
  for (const index of tableDefinition.indexes) {
    const old = indexEntry(index, before);
    const now = indexEntry(index, after);
    if (!old && !now) continue;
    // An ALL entry is the item itself: reuse its size.
    const entryUnits = (e: Item) =>
      kb((e === before ? sizeBefore : e === after ? sizeAfter : itemSize(e)) + 100, 1024);
    let units = 0;
    const keysMoved =
      old &&
      now &&
      (old[index.partitionKey] !== now[index.partitionKey] ||
        old[index.sortKey] !== now[index.sortKey]);
    if (old && (!now || keysMoved)) units += entryUnits(old);
    if (now && (!old || keysMoved)) units += entryUnits(now);
    if (old && now && !keysMoved && !sameEntry(old, now))
      units += Math.max(entryUnits(old), entryUnits(now));
    if (units > 0) indexes[index.name] = units;
  }
  return { table: (transactional ? 2 : 1) * kb(Math.max(sizeBefore, sizeAfter), 1024), indexes };
}

/** Units of reading one item by key; a missing item costs the minimum. */
export const keyReadUnits = (item: Item | undefined, consistent: boolean) =>
  (consistent ? 1 : 0.5) * (item ? kb(itemSize(item), 4096) : 1);

/** Units of a Query or Scan page: its items together, by started 4 KB. */
export const pageReadUnits = (items: readonly Item[], consistent: boolean, overheadPerItem = 0) =>
  (consistent ? 1 : 0.5) *
  kb(
    items.reduce((a, i) => a + itemSize(i) + overheadPerItem, 0),
    4096,
  );

/**
 * Recent item images by key, to size the update that follows a read (the service reads every
 * item it updates first). Bounded: in the server process it costs a few MB at most.
 */
export class ImageCache {
  private readonly images = new Map<string, Item>();

  constructor(private readonly max = 4_096) {}

  static key(k: Item): string {
    return `${String(k[tableDefinition.partitionKey])}\u0000${String(k[tableDefinition.sortKey])}`;
  }

  get(k: Item): Item | undefined {
    return this.images.get(ImageCache.key(k));
  }

  set(item: Item): void {
    const key = ImageCache.key(item);
    this.images.delete(key);
    this.images.set(key, item);
    if (this.images.size > this.max) {
      const oldest = this.images.keys().next().value;
      if (oldest !== undefined) this.images.delete(oldest);
    }
  }

  delete(k: Item): void {
    this.images.delete(ImageCache.key(k));
  }
}
