/**
 * After every phase: every ledger of the tenants it touched is checked against the items that
 * must explain it — reserved = Σ estimates of ACTIVE reservations holding on it, spent = Σ
 * charges (commit actuals + event actuals), debt = 0 (the bench never overdraws), allocated as
 * created, and remaining = allocated − spent − reserved − debt.
 */

import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { derivedId } from '../../functions/domain/fingerprint.js';
import { RESERVATION_STATUSES } from '../../functions/domain/reservation.js';
import {
  keys,
  LIST_SPREAD,
  ledgerIndexPartition,
  listPartitions,
} from '../../functions/store/keys.js';
import type { HttpTarget, Json } from './http.js';
import type { BenchTenant } from './provision.js';

export interface LedgerState {
  readonly scope: string;
  readonly unit: string;
  readonly allocated: number;
  readonly spent: number;
  readonly reserved: number;
  readonly debt: number;
  readonly remaining: number;
}

interface Holding {
  readonly status: string;
  readonly unit: string;
  readonly scopes: readonly string[];
  readonly estimate: number;
  readonly committed?: number | undefined;
}

interface Charge {
  readonly unit: string;
  readonly scopes: readonly string[];
  readonly actual: number;
}

interface TenantState {
  readonly ledgers: readonly LedgerState[];
  readonly reservations: readonly Holding[];
  readonly events: readonly Charge[];
}

export interface AuditResult {
  readonly phase: string;
  readonly source: 'table' | 'api';
  readonly tenants: number;
  readonly ledgers: number;
  readonly reservations: number;
  readonly active: number;
  readonly events: number;
  readonly mismatches: number;
  readonly examples: readonly string[];
  readonly ms: number;
}

export interface Auditor {
  readonly source: 'table' | 'api';
  readLedgers(t: BenchTenant): Promise<LedgerState[]>;
  read(t: BenchTenant): Promise<TenantState>;
}

function check(t: BenchTenant, state: TenantState): string[] {
  const problems: string[] = [];
  const expected = new Map<string, { reserved: number; charges: number }>();
  const at = (scope: string, unit: string) => {
    const k = `${scope}#${unit}`;
    let e = expected.get(k);
    if (!e) {
      e = { reserved: 0, charges: 0 };
      expected.set(k, e);
    }
    return e;
  };
  for (const r of state.reservations) {
    for (const scope of r.scopes) {
      const e = at(scope, r.unit);
      if (r.status === 'ACTIVE') e.reserved += r.estimate;
      if (r.status === 'COMMITTED') e.charges += r.committed ?? 0;
    }
  }
  for (const ev of state.events)
    for (const scope of ev.scopes) at(scope, ev.unit).charges += ev.actual;
  const seen = new Set<string>();
  for (const l of state.ledgers) {
    const k = `${l.scope}#${l.unit}`;
    seen.add(k);
    const e = expected.get(k) ?? { reserved: 0, charges: 0 };
    const say = (what: string) => problems.push(`${t.tenant} ${k}: ${what}`);
    if (l.reserved !== e.reserved) say(`reserved ${l.reserved} ≠ Σ active holds ${e.reserved}`);
    if (l.spent !== e.charges) say(`spent ${l.spent} ≠ Σ charges ${e.charges}`);
    if (l.debt !== 0) say(`debt ${l.debt} ≠ 0`);
    const created = t.budgets.get(l.scope);
    if (created !== undefined && l.allocated !== created)
      say(`allocated ${l.allocated} ≠ ${created} as created`);
    if (l.remaining !== l.allocated - l.spent - l.reserved - l.debt)
      say(`remaining ${l.remaining} ≠ allocated − spent − reserved − debt`);
  }
  for (const [k, e] of expected) {
    if (!seen.has(k) && (e.reserved !== 0 || e.charges !== 0))
      problems.push(`${t.tenant} ${k}: holds or charges on a scope without a ledger`);
  }
  for (const scope of t.budgets.keys()) {
    if (!state.ledgers.some((l) => l.scope === scope))
      problems.push(`${t.tenant} ${scope}: budget created but ledger not found`);
  }
  return problems;
}

export async function audit(
  auditor: Auditor,
  phase: string,
  tenants: readonly BenchTenant[],
  seen: Map<string, readonly LedgerState[]>,
): Promise<AuditResult> {
  const started = performance.now();
  let totals = { ledgers: 0, reservations: 0, active: 0, events: 0 };
  let problems: string[] = [];
  // An index read on AWS may lag a write by a moment: a mismatch must survive one re-read.
  for (let attempt = 0; attempt < 2; attempt++) {
    totals = { ledgers: 0, reservations: 0, active: 0, events: 0 };
    problems = [];
    for (const t of tenants) {
      const state = await auditor.read(t);
      seen.set(t.tenant, state.ledgers);
      totals.ledgers += state.ledgers.length;
      totals.reservations += state.reservations.length;
      totals.active += state.reservations.filter((r) => r.status === 'ACTIVE').length;
      totals.events += state.events.length;
      problems.push(...check(t, state));
    }
    if (problems.length === 0) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return {
    phase,
    source: auditor.source,
    tenants: tenants.length,
    ...totals,
    mismatches: problems.length,
    examples: problems.slice(0, 10),
    ms: Math.round(performance.now() - started),
  };
}

/**
 * The end of the run: every ledger of every bench tenant must still be exactly as its phase's
 * audit left it (no later phase may touch another's tenants) and keep the invariant.
 */
export async function finalLedgerCheck(
  auditor: Auditor,
  tenants: readonly BenchTenant[],
  seen: ReadonlyMap<string, readonly LedgerState[]>,
): Promise<AuditResult> {
  const started = performance.now();
  const problems: string[] = [];
  let ledgers = 0;
  for (const t of tenants) {
    const now = await auditor.readLedgers(t);
    ledgers += now.length;
    const before = seen.get(t.tenant) ?? [];
    for (const l of now) {
      const k = `${l.scope}#${l.unit}`;
      const then = before.find((x) => x.scope === l.scope && x.unit === l.unit);
      if (!then) problems.push(`${t.tenant} ${k}: not seen by its phase's audit`);
      else if (JSON.stringify(then) !== JSON.stringify(l))
        problems.push(`${t.tenant} ${k}: changed since its phase's audit`);
      if (l.remaining !== l.allocated - l.spent - l.reserved - l.debt)
        problems.push(`${t.tenant} ${k}: remaining ≠ allocated − spent − reserved − debt`);
    }
    if (now.length !== before.length)
      problems.push(`${t.tenant}: ${now.length} ledgers now, ${before.length} at its audit`);
  }
  return {
    phase: 'final (every ledger of the run)',
    source: auditor.source,
    tenants: tenants.length,
    ledgers,
    reservations: 0,
    active: 0,
    events: 0,
    mismatches: problems.length,
    examples: problems.slice(0, 10),
    ms: Math.round(performance.now() - started),
  };
}

const num = (v: unknown) => Number(v ?? 0);

/** Reads the table directly: the ledger index, the byStatus index (every status), and BatchGetItem. */
export class TableAuditor implements Auditor {
  readonly source = 'table' as const;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** BatchGetItem, four requests in flight, only the attributes the audit needs. */
  private async batchGet(
    keyList: readonly { pk: string; sk: string }[],
    attributes: readonly string[],
  ): Promise<Json[]> {
    const out: Json[] = [];
    const names = Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a]));
    const projection = Object.keys(names).join(', ');
    let next = 0;
    const worker = async () => {
      for (let i = next; i < keyList.length; i = next) {
        next += 100;
        let pending: Record<string, unknown>[] | undefined = keyList.slice(i, i + 100);
        while (pending && pending.length > 0) {
          const res: BatchGetCommandOutput = await this.doc.send(
            new BatchGetCommand({
              RequestItems: {
                [this.table]: {
                  Keys: pending,
                  ConsistentRead: true,
                  ProjectionExpression: projection,
                  ExpressionAttributeNames: names,
                },
              },
            }),
          );
          out.push(...((res.Responses?.[this.table] ?? []) as Json[]));
          pending = res.UnprocessedKeys?.[this.table]?.Keys;
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    return out;
  }

  private async query(input: {
    IndexName?: string;
    attribute: string;
    value: string;
  }): Promise<Json[]> {
    const out: Json[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const res: QueryCommandOutput = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          ...(input.IndexName && { IndexName: input.IndexName }),
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': input.attribute },
          ExpressionAttributeValues: { ':p': input.value },
          ...(!input.IndexName && { ConsistentRead: true }),
          ExclusiveStartKey: start,
        }),
      );
      out.push(...((res.Items ?? []) as Json[]));
      start = res.LastEvaluatedKey;
    } while (start);
    return out;
  }

  async readLedgers(t: BenchTenant): Promise<LedgerState[]> {
    const index = await this.query({
      attribute: 'pk',
      value: ledgerIndexPartition(t.tenant, `tenant:${t.tenant}`),
    });
    const fields = [
      'type',
      'scope',
      'unit',
      'shards',
      'allocated',
      'spent',
      'reserved',
      'debt',
      'remaining',
    ];
    const items = await this.batchGet(
      index.map((e) => keys.ledger(String(e.scope), e.unit as 'USD_MICROCENTS')),
      fields,
    );
    // A sharded budget is the sum of its shards (docs/scaling.md): read shards 1..n-1 too.
    const shardItems = await this.batchGet(
      items.flatMap((i) =>
        Array.from({ length: Math.max(0, num(i.shards ?? 1) - 1) }, (_, k) =>
          keys.ledgerShard(String(i.scope), i.unit as 'USD_MICROCENTS', k + 1),
        ),
      ),
      fields,
    );
    const sums = new Map<string, LedgerState>();
    for (const i of [...items.filter((x) => x.type === 'ledger'), ...shardItems]) {
      const key = `${String(i.scope)}#${String(i.unit)}`;
      const seen = sums.get(key);
      sums.set(key, {
        scope: String(i.scope),
        unit: String(i.unit),
        allocated: (seen?.allocated ?? 0) + num(i.allocated),
        spent: (seen?.spent ?? 0) + num(i.spent),
        reserved: (seen?.reserved ?? 0) + num(i.reserved),
        debt: (seen?.debt ?? 0) + num(i.debt),
        remaining: (seen?.remaining ?? 0) + num(i.remaining),
      });
    }
    return [...sums.values()].sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  }

  async read(t: BenchTenant): Promise<TenantState> {
    const ledgers = await this.readLedgers(t);
    // Every status partition of the tenant, each spread (keys.ts LIST_SPREAD): its listing.
    const spreads = await Promise.all(
      RESERVATION_STATUSES.flatMap((status) =>
        Array.from({ length: LIST_SPREAD }, (_, k) =>
          this.query({
            IndexName: 'byStatus',
            attribute: 'status_pk',
            value: listPartitions.status(t.tenant, status, k),
          }),
        ),
      ),
    );
    const listed = spreads.flat();
    const reservationItems = await this.batchGet(
      listed.map((e) => ({ pk: String(e.pk), sk: String(e.sk) })),
      ['type', 'tenant', 'status', 'unit', 'scopes', 'estimate', 'committed'],
    );
    const eventItems = await this.batchGet(
      [...t.eventKeys].map((k) => keys.event(derivedId('evt', t.tenant, k))),
      ['type', 'tenant', 'unit', 'scopes', 'actual'],
    );
    return {
      ledgers,
      reservations: reservationItems
        .filter((i) => i.type === 'reservation' && i.tenant === t.tenant)
        .map((i) => ({
          status: String(i.status),
          unit: String(i.unit),
          scopes: i.scopes as string[],
          estimate: num(i.estimate),
          committed: i.committed === undefined ? undefined : num(i.committed),
        })),
      events: eventItems
        .filter((i) => i.type === 'event' && i.tenant === t.tenant)
        .map((i) => ({
          unit: String(i.unit),
          scopes: i.scopes as string[],
          actual: num(i.actual),
        })),
    };
  }
}

/** Without access to the table: the service's own listings, and the events it acknowledged. */
export class ApiAuditor implements Auditor {
  readonly source = 'api' as const;

  constructor(private readonly runtime: HttpTarget) {}

  private async pages(path: string, t: BenchTenant, field: string): Promise<Json[]> {
    const out: Json[] = [];
    let cursor: string | undefined;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const body = await this.runtime.expect(
        `audit ${field}`,
        'GET',
        `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        t.headers,
      );
      out.push(...((body[field] as Json[] | undefined) ?? []));
      cursor = body.next_cursor as string | undefined;
    } while (cursor);
    return out;
  }

  async readLedgers(t: BenchTenant): Promise<LedgerState[]> {
    const amount = (v: unknown) => num((v as Json | undefined)?.amount);
    const balances = await this.pages(
      `/v1/balances?tenant=${t.tenant}&include_children=true`,
      t,
      'balances',
    );
    return balances
      .map((b) => ({
        scope: String(b.scope),
        unit: String((b.allocated as Json).unit),
        allocated: amount(b.allocated),
        spent: amount(b.spent),
        reserved: amount(b.reserved),
        debt: amount(b.debt),
        remaining: amount(b.remaining),
      }))
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  }

  async read(t: BenchTenant): Promise<TenantState> {
    const amount = (v: unknown) => num((v as Json | undefined)?.amount);
    const ledgers = await this.readLedgers(t);
    const reservations = await this.pages('/v1/reservations', t, 'reservations');
    return {
      ledgers,
      reservations: reservations.map((r) => ({
        status: String(r.status),
        unit: String((r.reserved as Json).unit),
        scopes: r.affected_scopes as string[],
        estimate: amount(r.reserved),
        committed: r.committed === undefined ? undefined : amount(r.committed),
      })),
      events: [...t.events.values()].map((e) => ({ unit: 'USD_MICROCENTS', ...e })),
    };
  }
}
