import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  applyUpdate,
  ImageCache,
  type Item,
  keyReadUnits,
  pageReadUnits,
  type WriteUnits,
  writeUnits,
} from './capacity.js';

/**
 * DynamoDB requests counted by a client middleware (never estimated): one entry per command.
 * Capacity units are computed from the items each request reads and writes by AWS's rules
 * (capacity.ts); requests are not altered.
 */
export interface CommandTally {
  calls: number;
  errors: number;
  /** Put / Update / Delete actions (TransactWriteItems, BatchWriteItem, single-item writes). */
  itemsWritten: number;
  /** ConditionCheck actions of a TransactWriteItems: read-only, but billed as writes. */
  conditionChecks: number;
  /** Keys asked for by GetItem / BatchGetItem. */
  keysRequested: number;
  /** Items returned by GetItem / BatchGetItem / Query / Scan. */
  itemsRead: number;
  readUnits: number;
  writeUnits: number;
  /** Writes sized without a known old image (assumed ≤ 1 KB, no index change). */
  unsized: number;
  /** Wall time inside `send` (marshalling, signing, HTTP, DynamoDB, unmarshalling), ms. */
  ms: number;
  /** Capacity units by where they are consumed: `table` or the index name. */
  units: Record<string, number>;
}

export type Tally = Record<string, CommandTally>;

const NUMERIC = [
  'calls',
  'errors',
  'itemsWritten',
  'conditionChecks',
  'keysRequested',
  'itemsRead',
  'readUnits',
  'writeUnits',
  'unsized',
  'ms',
] as const;

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);

const empty = (): CommandTally => ({
  calls: 0,
  errors: 0,
  itemsWritten: 0,
  conditionChecks: 0,
  keysRequested: 0,
  itemsRead: 0,
  readUnits: 0,
  writeUnits: 0,
  unsized: 0,
  ms: 0,
  units: {},
});

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const obj = (v: unknown): Item => (v && typeof v === 'object' ? (v as Item) : {});

function addUnits(t: CommandTally, where: string, n: number, read: boolean): void {
  if (!n) return;
  if (read) t.readUnits += n;
  else t.writeUnits += n;
  t.units[where] = (t.units[where] ?? 0) + n;
}

function addWrite(t: CommandTally, w: WriteUnits): void {
  addUnits(t, 'table', w.table, false);
  for (const [index, n] of Object.entries(w.indexes)) addUnits(t, index, n, false);
}

/** The images a write request leaves, computed before it is sent, applied once it succeeds. */
type Planned = { key: Item; after: Item | undefined }[];

function planWrites(command: string, input: Item, t: CommandTally, cache: ImageCache): Planned {
  const planned: Planned = [];
  const write = (action: Item, kind: string, transactional: boolean) => {
    const key = kind === 'Put' ? obj(action.Item) : obj(action.Key);
    const before = cache.get(key);
    if (kind === 'ConditionCheck') {
      t.conditionChecks++;
      addUnits(t, 'table', writeUnits(before ?? {}, before ?? {}, true).table, false);
      return;
    }
    t.itemsWritten++;
    if (kind === 'Update' && !before) {
      // Never read by this client: sized as one started KB, its index entries unchanged.
      t.unsized++;
      addUnits(t, 'table', transactional ? 2 : 1, false);
      planned.push({ key, after: undefined });
      return;
    }
    const after =
      kind === 'Put'
        ? obj(action.Item)
        : kind === 'Update' && before
          ? applyUpdate(
              before,
              String(action.UpdateExpression ?? ''),
              obj(action.ExpressionAttributeNames) as Record<string, string>,
              obj(action.ExpressionAttributeValues),
            )
          : undefined;
    addWrite(t, writeUnits(before, after, transactional));
    planned.push({ key, after });
  };
  switch (command) {
    case 'TransactWriteItems':
      for (const entry of list(input.TransactItems)) {
        const [kind, action] = Object.entries(obj(entry))[0] ?? [];
        if (kind) write(obj(action), kind, true);
      }
      break;
    case 'BatchWriteItem':
      for (const requests of Object.values(obj(input.RequestItems))) {
        for (const r of list(requests)) {
          const put = obj(obj(r).PutRequest);
          if (put.Item) write(put, 'Put', false);
          else write(obj(obj(r).DeleteRequest), 'Delete', false);
        }
      }
      break;
    case 'PutItem':
      write(input, 'Put', false);
      break;
    case 'UpdateItem':
      write(input, 'Update', false);
      break;
    case 'DeleteItem':
      write(input, 'Delete', false);
      break;
  }
  return planned;
}

function countReads(command: string, input: Item, output: Item, t: CommandTally, c: ImageCache) {
  if (command === 'GetItem') {
    t.keysRequested++;
    const item = output.Item ? obj(output.Item) : undefined;
    if (item) {
      t.itemsRead++;
      c.set(item);
    }
    addUnits(t, 'table', keyReadUnits(item, input.ConsistentRead === true), true);
  }
  if (command === 'BatchGetItem') {
    for (const [table, request] of Object.entries(obj(input.RequestItems))) {
      const found = new Map<string, Item>();
      for (const i of list(obj(output.Responses)[table])) {
        found.set(ImageCache.key(obj(i)), obj(i));
        c.set(obj(i));
      }
      const consistent = obj(request).ConsistentRead === true;
      const keys = list(obj(request).Keys);
      t.keysRequested += keys.length;
      t.itemsRead += found.size;
      for (const k of keys)
        addUnits(t, 'table', keyReadUnits(found.get(ImageCache.key(obj(k))), consistent), true);
    }
  }
  if (command === 'Query' || command === 'Scan') {
    const items = list(output.Items).map(obj);
    t.itemsRead += items.length;
    const where = typeof input.IndexName === 'string' ? input.IndexName : 'table';
    // An index entry carries 100 bytes of overhead.
    const overhead = where === 'table' ? 0 : 100;
    addUnits(t, where, pageReadUnits(items, input.ConsistentRead === true, overhead), true);
  }
}

/**
 * Sizing (capacity units) costs the process that does it some CPU; load runs, which report no
 * units, turn it off so the counted process does no more work than it would in production.
 */
export interface TallyControl {
  sizing: boolean;
}

/** Calls and items only (sizing off). */
function countItems(command: string, input: Item, output: Item, t: CommandTally): void {
  if (command === 'TransactWriteItems')
    for (const entry of list(input.TransactItems)) {
      if ('ConditionCheck' in obj(entry)) t.conditionChecks++;
      else t.itemsWritten++;
    }
  if (command === 'BatchWriteItem')
    for (const requests of Object.values(obj(input.RequestItems)))
      t.itemsWritten += list(requests).length;
  if (['PutItem', 'UpdateItem', 'DeleteItem'].includes(command)) t.itemsWritten++;
  if (command === 'GetItem') {
    t.keysRequested++;
    if (output.Item) t.itemsRead++;
  }
  if (command === 'BatchGetItem')
    for (const [table, request] of Object.entries(obj(input.RequestItems))) {
      t.keysRequested += list(obj(request).Keys).length;
      t.itemsRead += list(obj(output.Responses)[table]).length;
    }
  if (command === 'Query' || command === 'Scan') t.itemsRead += list(output.Items).length;
}

/** Adds the counting middleware to a client (and so to every DocumentClient built on it). */
export function installTally(client: DynamoDBClient, tally: Tally, control: TallyControl): void {
  const cache = new ImageCache();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
      const input = args.input as Item;
      const t = tally[command] ?? empty();
      tally[command] = t;
      t.calls++;
      const sizing = control.sizing;
      const planned = READS.has(command) || !sizing ? [] : planWrites(command, input, t, cache);
      const started = performance.now();
      try {
        const result = await next(args);
        for (const p of planned) {
          if (p.after) cache.set(p.after);
          else cache.delete(p.key);
        }
        if (sizing) countReads(command, input, obj(result.output), t, cache);
        else countItems(command, input, obj(result.output), t);
        return result;
      } catch (error) {
        t.errors++;
        throw error;
      } finally {
        t.ms += performance.now() - started;
      }
    },
    { step: 'initialize', name: 'benchTally' },
  );
}

export function diffTally(after: Tally, before: Tally): Tally {
  const out: Tally = {};
  for (const [command, a] of Object.entries(after)) {
    const b = before[command] ?? empty();
    const d = empty();
    for (const k of NUMERIC) d[k] = a[k] - b[k];
    for (const [where, n] of Object.entries(a.units)) {
      const delta = n - (b.units[where] ?? 0);
      if (delta) d.units[where] = delta;
    }
    if (d.calls > 0) out[command] = d;
  }
  return out;
}

/** The sum of two tallies (measurements made in slices). */
export function addTally(a: Tally, b: Tally): Tally {
  const out: Tally = structuredClone(a);
  for (const [command, t] of Object.entries(b)) {
    const into = out[command] ?? empty();
    for (const k of NUMERIC) into[k] += t[k];
    for (const [where, n] of Object.entries(t.units))
      into.units[where] = (into.units[where] ?? 0) + n;
    out[command] = into;
  }
  return out;
}

/** Per-operation figures of a tally accumulated over `ops` operations. */
export interface PerOp {
  readonly calls: Record<string, number>;
  /** Mean wall time inside each kind of call, ms per operation. */
  readonly callMs: Record<string, number>;
  readonly callsTotal: number;
  readonly itemsWritten: number;
  readonly conditionChecks: number;
  readonly keysRequested: number;
  readonly itemsRead: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly unsized: number;
  readonly dynamoMs: number;
  readonly errors: number;
  /** Capacity units by table / index, per operation. */
  readonly units: Record<string, number>;
}

export function perOp(t: Tally, ops: number): PerOp {
  const per = (x: number) => x / Math.max(1, ops);
  const sum = (k: (typeof NUMERIC)[number]) =>
    per(Object.values(t).reduce((acc, c) => acc + c[k], 0));
  const units: Record<string, number> = {};
  for (const [command, c] of Object.entries(t)) {
    const kind = READS.has(command) ? 'RRU' : 'WRU';
    for (const [where, n] of Object.entries(c.units))
      units[`${where} ${kind}`] = (units[`${where} ${kind}`] ?? 0) + per(n);
  }
  return {
    calls: Object.fromEntries(Object.entries(t).map(([command, c]) => [command, per(c.calls)])),
    callMs: Object.fromEntries(Object.entries(t).map(([command, c]) => [command, per(c.ms)])),
    callsTotal: sum('calls'),
    itemsWritten: sum('itemsWritten'),
    conditionChecks: sum('conditionChecks'),
    keysRequested: sum('keysRequested'),
    itemsRead: sum('itemsRead'),
    readUnits: sum('readUnits'),
    writeUnits: sum('writeUnits'),
    unsized: sum('unsized'),
    dynamoMs: sum('ms'),
    errors: sum('errors'),
    units,
  };
}

/** us-east-1 on-demand, standard table class, after the 1 Nov 2024 price cut. */
export const PRICES = {
  region: 'us-east-1',
  tableClass: 'Standard',
  mode: 'on-demand',
  usdPerMillionWriteUnits: 0.625,
  usdPerMillionReadUnits: 0.125,
  note: 'Units computed from the items read and written, by AWS rules: a transaction’s items cost twice (2 WRU per started KB of each item written, 2 RRU per 4 KB read), strongly consistent reads 1 RRU per 4 KB (a missing key the minimum), index entries put or deleted 1 WRU per started KB (entry + 100 B), as standard writes.',
} as const;

/** USD per million operations: per-op units times the price per million units. */
export const costPerMillion = (p: Pick<PerOp, 'readUnits' | 'writeUnits'>): number =>
  p.writeUnits * PRICES.usdPerMillionWriteUnits + p.readUnits * PRICES.usdPerMillionReadUnits;

/** Capacity units by table and index, e.g. `table WRU 6, dueForExpiry WRU 2`. */
export const unitsText = (p: PerOp) =>
  Object.entries(p.units)
    .map(([where, n]) => `${where} ${Number(n.toFixed(2))}`)
    .join(', ');
