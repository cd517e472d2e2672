import { BatchWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { holdChange } from '../../functions/domain/ledger.js';
import type { Subject } from '../../functions/domain/scopes.js';
import { ledgerUpdate } from '../../functions/store/budgets/placement.js';
import { type Bench, say } from './context.js';
import type { Json } from './http.js';
import { ESTIMATE, reserveBody } from './latency.js';
import type { BenchTenant } from './provision.js';
import { UNIT } from './provision.js';
import { buildReserve } from './raw.js';
import { type LatencySummary, sequential, summarize } from './stats.js';
import { costPerMillion, type PerOp, perOp } from './tally.js';

export interface ListingRow {
  /** Reservations the tenant holds. */
  readonly tenantReservations: number;
  readonly page: string;
  /** Reservations before the page. */
  readonly offset: number;
  readonly returned: number;
  readonly hasMore: boolean;
  readonly latency: LatencySummary;
  readonly perOp?: PerOp | undefined;
  readonly usdPerMillion?: number | undefined;
}

export interface ListingResult {
  readonly seededBy: 'BatchWriteItem' | 'API';
  readonly seedSeconds: number;
  readonly rows: readonly ListingRow[];
}

const SUBJECT: Subject = { workspace: 'w', agent: 'a' };
const BUDGETS = ['', 'workspace:w', 'workspace:w/agent:a'];

/**
 * Writes `count` reservation items exactly as reserveTransaction's Put builds them (ACTIVE,
 * every listing and due-index attribute), 25 per BatchWriteItem, then applies their holds to
 * the ledgers in one update per scope: the books are what `count` reserves would have left.
 */
async function seedTable(b: Bench, t: BenchTenant, count: number): Promise<void> {
  const db = b.db;
  if (!db) throw new Error('no table access');
  const base = Date.now() - count;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const from = next;
      next += 25;
      if (from >= count) return;
      let requests: Record<string, unknown>[] = [];
      for (let i = from; i < Math.min(count, from + 25); i++) {
        const { items } = buildReserve(t.tenant, SUBJECT, ESTIMATE, `seed-${i}`, base + i);
        requests.push({ PutRequest: { Item: items[items.length - 1]?.Put?.Item } });
      }
      while (requests.length > 0) {
        const res = await db.doc.send(
          new BatchWriteCommand({ RequestItems: { [db.table]: requests } }),
        );
        requests = (res.UnprocessedItems?.[db.table] ?? []) as Record<string, unknown>[];
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  for (const scope of t.budgets.keys()) {
    const update = ledgerUpdate(holdChange(scope, UNIT, count * ESTIMATE)).Update;
    if (!update) throw new Error('ledgerUpdate built no Update');
    await db.doc.send(new UpdateCommand({ ...update, TableName: db.table }));
  }
}

async function seedApi(b: Bench, t: BenchTenant, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      await b.runtime.expect(
        'seed',
        'POST',
        '/v1/reservations',
        t.headers,
        reserveBody(`seed-${i}`, SUBJECT),
      );
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
}

const listPath = (limit: number, cursor?: string) =>
  `/v1/reservations?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;

/**
 * Issue 4: the cost of a page must not grow with the table. A page of 50 of a tenant with 100
 * reservations and of one with `listSize`, first page and later pages, side by side.
 */
export async function listingPhase(b: Bench): Promise<ListingResult> {
  const sizes = [100, b.opts.listSize];
  const samples = Math.max(b.opts.quick ? 10 : 20, Math.round(b.opts.samples / 5));
  const outcomes = b.outcomesOf('listing');
  const rows: ListingRow[] = [];
  const tenants: BenchTenant[] = [];
  const seededBy = b.db ? 'BatchWriteItem' : 'API';
  const seedStarted = performance.now();
  for (const size of sizes) {
    const t = await b.tenant(`list-${size}`, BUDGETS);
    tenants.push(t);
    if (b.db) await seedTable(b, t, size);
    else await seedApi(b, t, size);
  }
  const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;
  say(`  seeded ${sizes.join(' and ')} reservations by ${seededBy} in ${seedSeconds} s`);

  for (const [index, size] of sizes.entries()) {
    const t = tenants[index];
    if (!t) continue;
    const get = (path: string) => b.runtime.expect('list', 'GET', path, t.headers);
    const first = await get(listPath(50));
    // A deep page: walk with pages of 200 (the cursor binds the filters, not the limit).
    const deepOffset = Math.floor(size / 2 / 200) * 200;
    let deepCursor: string | undefined;
    for (let at = 0; at < deepOffset; at += 200) {
      const page: Json = await get(listPath(200, deepCursor));
      deepCursor = page.next_cursor as string | undefined;
    }
    const pages: { page: string; offset: number; cursor?: string | undefined }[] = [
      { page: 'first', offset: 0 },
      { page: 'second', offset: 50, cursor: first.next_cursor as string | undefined },
    ];
    if (deepOffset > 50) pages.push({ page: 'middle', offset: deepOffset, cursor: deepCursor });
    for (const p of pages) {
      if (p.offset > 0 && !p.cursor) throw new Error(`no cursor to page at ${p.offset}`);
      let last: Json = {};
      await sequential(5, () => get(listPath(50, p.cursor)), outcomes);
      const m = await b.measure(() =>
        sequential(
          samples,
          async () => {
            last = await get(listPath(50, p.cursor));
          },
          outcomes,
        ),
      );
      const po = m.service ? perOp(m.service, samples) : undefined;
      const row: ListingRow = {
        tenantReservations: size,
        page: p.page,
        offset: p.offset,
        returned: ((last.reservations as unknown[] | undefined) ?? []).length,
        hasMore: last.has_more === true,
        latency: summarize(m.value),
        perOp: po,
        usdPerMillion: po ? costPerMillion(po) : undefined,
      };
      rows.push(row);
      say(
        `  ${String(size).padStart(6)} reservations, ${p.page.padEnd(6)} page (from ${String(p.offset).padStart(5)}): ${row.returned} returned, p50 ${row.latency.p50.toFixed(2)} p99 ${row.latency.p99.toFixed(2)} ms; ${po ? `${po.callsTotal.toFixed(1)} calls, ${po.itemsRead.toFixed(1)} items read, ${po.readUnits.toFixed(1)} RRU` : 'DynamoDB counts n/a'}`,
      );
    }
  }
  await b.audit('listing', tenants);
  return { seededBy, seedSeconds, rows };
}
