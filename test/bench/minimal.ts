/**
 * The minimal protocol shape (issue 12, "lean operations"): the least DynamoDB work a
 * reserve→commit can be, as a second baseline beside the raw engine. On a table of its own
 * without any secondary index, on the bench's DynamoDB Local:
 * - reserve: one TransactWriteItems of one conditional Update per scope (`remaining >= :amt`;
 *   reserved += amt, remaining -= amt) and one Put of a small reservation item;
 * - commit: one TransactWriteItems of one Update per scope (reserved -= est, spent += actual,
 *   remaining += est − actual) and one Update of the reservation (COMMITTED if ACTIVE).
 * No reads before writes, no idempotency records. Measured next to the service, interleaved,
 * and counted by the same tally (tally.ts) on a client of its own.
 *
 * The floor shape (issue 31), a third baseline: the least a design keeping SPEC's guarantees can
 * do (test/bench/ceiling.ts, "2 indexes, 2 reads"): a listing index by tenant and the sweeper's
 * sparse due index (keys only) on a table of its own; the service's reservation item and
 * conditions; one strongly consistent BatchGetItem before each write (reserve: the record and
 * the ledgers, SPEC's balances in the answer; commit: the reservation and its ledgers).
 */
import { randomBytes } from 'node:crypto';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  ScanCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { Subject } from '../../functions/domain/scopes.js';
import { CONFLICT_RETRY_BUDGET, conflictBackoffMs } from '../../functions/store/transact.js';
import type { AuditResult } from './audit.js';
import { type Bench, say } from './context.js';
import { ACTUAL, ESTIMATE, reserveBody } from './latency.js';
import { ALLOCATED, type BenchTenant, TTL_MS, UNIT } from './provision.js';
import { closedLoop, type LatencySummary, summarize } from './stats.js';
import {
  costPerMillion,
  diffTally,
  installTally,
  type PerOp,
  perOp,
  type Tally,
  type TallyControl,
} from './tally.js';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** `minimal`: no index, no read; `floor`: two keys-only indexes, one read per operation. */
export type Shape = 'minimal' | 'floor';
export type Engine = 'service' | Shape;

/** A reservation of the minimal shape, as its engine keeps it to commit it. */
export interface MinimalReservation {
  readonly id: string;
  readonly scopes: readonly string[];
  readonly estimate: number;
}

const ledgerKey = (scope: string) => ({ pk: `LEDGER#${scope}#${UNIT}`, sk: '-' });
const reservationKey = (id: string) => ({ pk: `RSV#${id}`, sk: '-' });
const NAMES = { '#r': 'reserved', '#m': 'remaining', '#s': 'spent' };

/** The service's hold condition: the ledger exists, has room, no debt, and is not frozen. */
const FLOOR_HOLD_CONDITION =
  'attribute_exists(#pk) AND #m >= :amt AND #debt = :zero AND (attribute_not_exists(#status) OR #status = :active)';

/**
 * The floor's reservation: the service's attributes (its replay, its terms) and the two
 * indexes' keys, a listing spread of 4 and 16 due shards as the service's.
 */
function floorItem(
  id: string,
  tenant: string,
  scopes: readonly string[],
  estimate: number,
  now: number,
) {
  const spread = randomBytes(1)[0] ?? 0;
  return {
    ...reservationKey(id),
    type: 'reservation',
    id,
    tenant,
    status: 'ACTIVE',
    idempotency_key: `k-${id}`,
    subject: { workspace: 'w', agent: scopes.at(-1)?.split('agent:')[1] ?? '' },
    action: { kind: 'llm.completion', name: 'm' },
    unit: UNIT,
    estimate,
    created_at_ms: now,
    expires_at_ms: now + TTL_MS,
    ttl_ms: TTL_MS,
    grace_period_ms: 5_000,
    deadline_ms: now + TTL_MS + 5_000,
    scopes,
    overage_policy: 'REJECT',
    fingerprint: randomBytes(32),
    balance_rows: scopes.flatMap(() => [ALLOCATED, 0, estimate, 0, 0]),
    tenant_pk: `T#${tenant}~${spread % 4}`,
    list_sk: `${String(now).padStart(15, '0')}#${id}`,
    due_pk: `DUE#${spread % 16}`,
    due_sk: `${String(now + TTL_MS + 5_000).padStart(15, '0')}#${tenant}#${id}`,
  };
}

/** tenant, then each level of the subject, as the service derives scope paths. */
export function minimalScopes(tenant: string, subject: Subject): string[] {
  const scopes = [`tenant:${tenant}`];
  let path = `tenant:${tenant}`;
  for (const level of ['workspace', 'app', 'workflow', 'agent', 'toolset'] as const) {
    const value = subject[level];
    if (value === undefined) continue;
    path = `${path}/${level}:${value}`;
    scopes.push(path);
  }
  return scopes;
}

/** The minimal engine: its own table, its own client (same settings as the store's), its tally. */
export class MinimalEngine {
  readonly tally: Tally = {};
  readonly control: TallyControl = { sizing: true };
  conflictRetries = 0;
  private readonly client: DynamoDBClient;
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    endpoint: string,
    readonly table: string,
    readonly shape: Shape = 'minimal',
  ) {
    // As functions/store/client.ts: keep-alive sockets, 4 attempts, no logger middleware.
    this.client = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 4,
      requestHandler: { httpAgent: { keepAlive: true, maxSockets: 256 } },
    });
    this.client.middlewareStack.remove('loggerMiddleware');
    this.doc = DynamoDBDocumentClient.from(this.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    installTally(this.client, this.tally, this.control);
  }

  close(): void {
    this.client.destroy();
  }

  /**
   * pk/sk string keys, PAY_PER_REQUEST; the floor shape's two keys-only indexes: a tenant's
   * listing (`tenant_pk`, `list_sk`) and the sweeper's sparse due index (`due_pk`, `due_sk`).
   */
  async createTable(): Promise<void> {
    const s = 'S' as const;
    const index = (name: string, pk: string, sk: string) => ({
      IndexName: name,
      KeySchema: [
        { AttributeName: pk, KeyType: 'HASH' as const },
        { AttributeName: sk, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' as const },
    });
    const floor = this.shape === 'floor';
    await this.client.send(
      new CreateTableCommand({
        TableName: this.table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          ...['pk', 'sk', ...(floor ? ['tenant_pk', 'list_sk', 'due_pk', 'due_sk'] : [])].map(
            (name) => ({ AttributeName: name, AttributeType: s }),
          ),
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        ...(floor && {
          GlobalSecondaryIndexes: [
            index('byTenant', 'tenant_pk', 'list_sk'),
            index('dueForExpiry', 'due_pk', 'due_sk'),
          ],
        }),
      }),
    );
    for (let i = 0; i < 100; i++) {
      const { Table } = await this.client.send(new DescribeTableCommand({ TableName: this.table }));
      if (Table?.TableStatus === 'ACTIVE') return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Ledgers at ALLOCATED, written through the counted client so later updates are sized. */
  async seed(scopes: readonly string[]): Promise<void> {
    // The floor's ledgers carry the service's `debt` (its hold condition reads it).
    for (let i = 0; i < scopes.length; i += 25) {
      await this.doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [this.table]: scopes.slice(i, i + 25).map((scope) => ({
              PutRequest: {
                Item: {
                  ...ledgerKey(scope),
                  allocated: ALLOCATED,
                  reserved: 0,
                  spent: 0,
                  remaining: ALLOCATED,
                  ...(this.shape === 'floor' && { type: 'ledger', scope, unit: UNIT, debt: 0 }),
                },
              },
            })),
          },
        }),
      );
    }
  }

  /** The conflict retries of the raw engine's `transact`, on this client. */
  private async transact(items: TransactItem[], priority: 'admit' | 'settle', what: string) {
    const budget = CONFLICT_RETRY_BUDGET[priority];
    for (let attempt = 0; ; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
        if (!codes.includes('TransactionConflict') || attempt >= budget.retries)
          throw new Error(`minimal ${what} cancelled: ${JSON.stringify(codes)}`);
        this.conflictRetries++;
        await new Promise((r) => setTimeout(r, conflictBackoffMs(attempt, budget.capMs)));
      }
    }
  }

  /** The floor's one read before a write: strongly consistent, as the service's. */
  private async read(keys: readonly { pk: string; sk: string }[]): Promise<void> {
    await this.doc.send(
      new BatchGetCommand({
        RequestItems: { [this.table]: { Keys: [...keys], ConsistentRead: true } },
      }),
    );
  }

  async reserve(tenant: string, scopes: readonly string[], amount: number) {
    const id = `rsv_${randomBytes(12).toString('base64url')}`;
    const floor = this.shape === 'floor';
    if (floor) await this.read([reservationKey(id), ...scopes.map(ledgerKey)]);
    const now = Date.now();
    await this.transact(
      [
        ...scopes.map(
          (scope): TransactItem => ({
            Update: {
              TableName: this.table,
              Key: ledgerKey(scope),
              UpdateExpression: 'SET #r = #r + :amt, #m = #m - :amt',
              ConditionExpression: floor ? FLOOR_HOLD_CONDITION : '#m >= :amt',
              ExpressionAttributeNames: {
                '#r': NAMES['#r'],
                '#m': NAMES['#m'],
                ...(floor && { '#pk': 'pk', '#debt': 'debt', '#status': 'status' }),
              },
              ExpressionAttributeValues: {
                ':amt': amount,
                ...(floor && { ':zero': 0, ':active': 'ACTIVE' }),
              },
              ...(floor && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }),
            },
          }),
        ),
        {
          Put: {
            TableName: this.table,
            Item: floor
              ? floorItem(id, tenant, scopes, amount, now)
              : {
                  ...reservationKey(id),
                  id,
                  tenant,
                  scopes,
                  estimate: amount,
                  status: 'ACTIVE',
                  expires: now + TTL_MS,
                },
            ...(floor && {
              ConditionExpression: 'attribute_not_exists(pk)',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
            }),
          },
        },
      ],
      'admit',
      'reserve',
    );
    return { id, scopes, estimate: amount } satisfies MinimalReservation;
  }

  async commit(r: MinimalReservation, actual: number): Promise<void> {
    if (this.shape === 'floor') return this.floorCommit(r, actual);
    await this.transact(
      [
        ...r.scopes.map((scope) => this.settleLedger(scope, r, actual)),
        {
          Update: {
            TableName: this.table,
            Key: reservationKey(r.id),
            UpdateExpression: 'SET #st = :committed',
            ConditionExpression: '#st = :active',
            ExpressionAttributeNames: { '#st': 'status' },
            ExpressionAttributeValues: { ':committed': 'COMMITTED', ':active': 'ACTIVE' },
          },
        },
      ],
      'settle',
      'commit',
    );
  }

  /** A commit's update of one ledger (the floor's conditioned on the ledger, as the service's). */
  private settleLedger(scope: string, r: MinimalReservation, actual: number): TransactItem {
    const floor = this.shape === 'floor';
    return {
      Update: {
        TableName: this.table,
        Key: ledgerKey(scope),
        UpdateExpression: 'SET #r = #r - :est, #s = #s + :act, #m = #m + :rel',
        ExpressionAttributeNames: { ...NAMES, ...(floor && { '#pk': 'pk' }) },
        ExpressionAttributeValues: {
          ':est': r.estimate,
          ':act': actual,
          ':rel': r.estimate - actual,
        },
        ...(floor && {
          ConditionExpression: 'attribute_exists(#pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
        }),
      },
    };
  }

  /**
   * The floor's commit: the reservation and its ledgers read, then the reservation settled
   * (conditioned as the service's, its due entry removed, its settle replay stored) and each
   * ledger updated, in one transaction.
   */
  private async floorCommit(r: MinimalReservation, actual: number): Promise<void> {
    await this.read([reservationKey(r.id), ...r.scopes.map(ledgerKey)]);
    const now = Date.now();
    const failure = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const };
    await this.transact(
      [
        {
          Update: {
            TableName: this.table,
            Key: reservationKey(r.id),
            UpdateExpression:
              'SET #st = :to, finalized_at_ms = :now, committed = :c, settle_key = :k, settle_fingerprint = :f, settle_rows = :rows REMOVE deadline_ms, due_pk, due_sk',
            ConditionExpression: '#st = :active AND deadline_ms > :now',
            ExpressionAttributeNames: { '#st': 'status' },
            ExpressionAttributeValues: {
              ':to': 'COMMITTED',
              ':now': now,
              ':c': actual,
              ':k': `c-${r.id}`,
              ':f': randomBytes(32),
              ':rows': r.scopes.flatMap(() => [ALLOCATED, actual, 0, 0, 0]),
              ':active': 'ACTIVE',
            },
            ...failure,
          },
        },
        ...r.scopes.map((scope) => this.settleLedger(scope, r, actual)),
      ],
      'settle',
      'commit',
    );
  }

  /**
   * The whole minimal table (small: one run's reservations), checked like the service's
   * ledgers: reserved = Σ estimates of ACTIVE reservations on it, spent = Σ actuals of COMMITTED
   * ones (every commit charges ACTUAL), remaining = allocated − spent − reserved.
   */
  async audit(phase: string): Promise<AuditResult> {
    const from = performance.now();
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({ TableName: this.table, ConsistentRead: true, ExclusiveStartKey: start }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    const expected = new Map<string, { reserved: number; spent: number }>();
    let reservations = 0;
    let active = 0;
    for (const i of items.filter((x) => String(x.pk).startsWith('RSV#'))) {
      reservations++;
      if (i.status === 'ACTIVE') active++;
      for (const scope of i.scopes as string[]) {
        const e = expected.get(scope) ?? { reserved: 0, spent: 0 };
        expected.set(scope, e);
        if (i.status === 'ACTIVE') e.reserved += Number(i.estimate);
        else if (i.status === 'COMMITTED') e.spent += ACTUAL;
      }
    }
    const examples: string[] = [];
    let ledgers = 0;
    let mismatches = 0;
    for (const l of items.filter((x) => String(x.pk).startsWith('LEDGER#'))) {
      ledgers++;
      const scope = String(l.pk).slice('LEDGER#'.length, -(UNIT.length + 1));
      const e = expected.get(scope) ?? { reserved: 0, spent: 0 };
      const [allocated, reserved, spent, remaining] = [
        l.allocated,
        l.reserved,
        l.spent,
        l.remaining,
      ].map(Number);
      const ok =
        allocated === ALLOCATED &&
        reserved === e.reserved &&
        spent === e.spent &&
        remaining === ALLOCATED - e.spent - e.reserved;
      if (!ok) {
        mismatches++;
        if (examples.length < 5)
          examples.push(
            `minimal ${scope}: reserved ${reserved} (expected ${e.reserved}), spent ${spent} (expected ${e.spent}), remaining ${remaining}`,
          );
      }
    }
    return {
      phase,
      source: 'table',
      tenants: new Set(items.filter((x) => x.tenant !== undefined).map((x) => x.tenant)).size,
      ledgers,
      reservations,
      active,
      events: 0,
      mismatches,
      examples,
      ms: Math.round(performance.now() - from),
    };
  }
}

export interface MinimalOp {
  readonly op: 'reserve (3 scopes)' | 'commit (3 scopes)';
  readonly engine: Engine;
  readonly latency: LatencySummary;
  readonly perOp?: PerOp | undefined;
  readonly usdPerMillion?: number | undefined;
}

/** One 3-scope reserve→commit pair: units, calls and cost, from the single-client samples. */
export interface MinimalPair {
  readonly engine: Engine;
  readonly calls: Record<string, number>;
  readonly itemsWritten: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly units: Record<string, number>;
  readonly usdPerMillion: number;
}

export interface MinimalRun {
  readonly engine: Engine;
  readonly clients: number;
  readonly perSecond: number;
  readonly perSecondByRound: readonly number[];
  readonly latency: LatencySummary;
  readonly completed: number;
  readonly measuredSeconds: number;
  readonly conflictRetriesPerOp?: number | undefined;
  /** CPU per pair, ms, by process; other processes on the machine, % of all cores. */
  readonly cpu: {
    readonly benchMsPerOp: number;
    readonly serverMsPerOp?: number | undefined;
    readonly javaMsPerOp?: number | undefined;
    readonly otherPct?: number | undefined;
  };
}

export interface MinimalResult {
  readonly table: string;
  /** Subject of every 3-scope operation: one tenant and workspace, the agent per client. */
  readonly shape: string;
  readonly ops: readonly MinimalOp[];
  readonly pairs: readonly MinimalPair[];
  readonly throughput: readonly MinimalRun[];
  readonly summary: {
    readonly clients?: number | undefined;
    readonly serviceRate?: number | undefined;
    readonly minimalRate?: number | undefined;
    readonly ratio?: number | undefined;
    readonly ratioRange?: readonly [number, number] | undefined;
    readonly serviceReserveP50?: number | undefined;
    readonly minimalReserveP50?: number | undefined;
    readonly reserveP50GapMs?: number | undefined;
    /** The same against the floor shape (issue 31); absent in runs before it. */
    readonly floorRate?: number | undefined;
    readonly floorRatio?: number | undefined;
    readonly floorRatioRange?: readonly [number, number] | undefined;
    readonly floorReserveP50?: number | undefined;
    readonly floorP50GapMs?: number | undefined;
  };
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/**
 * The `minimal` phase: the service next to the minimal shape, on the same DynamoDB Local.
 * Single client: reserve (3 scopes) then commit, one service request and one minimal request
 * alternately (order flipping), counted apart. Load: reserve→commit pairs, 3 scopes, the two
 * engines taking turns in rounds as the throughput phase's engines do.
 */
export async function minimalPhase(b: Bench, endpoint: string, cores: number) {
  const engines = {
    minimal: new MinimalEngine(endpoint, `${b.opts.table}-minimal`, 'minimal'),
    floor: new MinimalEngine(endpoint, `${b.opts.table}-floor`, 'floor'),
  };
  try {
    for (const e of Object.values(engines)) await e.createTable();
    return await measureMinimal(b, engines, cores);
  } finally {
    for (const e of Object.values(engines)) e.close();
  }
}

const SHAPES: readonly Shape[] = ['minimal', 'floor'];
const ENGINES: readonly Engine[] = ['service', ...SHAPES];
/** The engines in turn `k`: each goes first as often as the others, so drift hits all alike. */
const inTurn = (k: number): Engine[] => ENGINES.map((_, i) => ENGINES[(i + k) % 3] as Engine);

async function measureMinimal(
  b: Bench,
  engines: Record<Shape, MinimalEngine>,
  cores: number,
): Promise<MinimalResult> {
  const { samples: n, warmupSamples: w } = b.opts;
  const outcomes = b.outcomesOf('minimal');
  const minimalTenant = (label: string) => `b${b.parts.runId}-${label}`;
  /** Runs `fn` under b.measure, with each shape engine's counters diffed around it too. */
  const measure = async <T>(fn: () => Promise<T>) => {
    const before = {
      minimal: structuredClone(engines.minimal.tally),
      floor: structuredClone(engines.floor.tally),
    };
    const retries = {
      minimal: engines.minimal.conflictRetries,
      floor: engines.floor.conflictRetries,
    };
    const m = await b.measure(fn);
    return {
      ...m,
      tallies: {
        minimal: diffTally(engines.minimal.tally, before.minimal),
        floor: diffTally(engines.floor.tally, before.floor),
      },
      retries: {
        minimal: engines.minimal.conflictRetries - retries.minimal,
        floor: engines.floor.conflictRetries - retries.floor,
      },
    };
  };

  // JVM and sockets warm for the shape engines' requests too (the service's are warm).
  for (const engine of Object.values(engines)) {
    const tenant = minimalTenant(`${engine.shape}-warmup`);
    const scopes = minimalScopes(tenant, { workspace: 'w', agent: 'a' });
    await engine.seed(scopes);
    await closedLoop({
      clients: 10,
      warmupMs: 0,
      durationMs: b.opts.quick ? 500 : 2_000,
      op: async () => engine.commit(await engine.reserve(tenant, scopes, ESTIMATE), ACTUAL),
      outcomes,
      minCompletions: 0,
    });
  }

  // Single client, interleaved.
  const budgets = ['', 'workspace:w', 'workspace:w/agent:a'];
  const three: Subject = { workspace: 'w', agent: 'a' };
  const t = await b.tenant('min-lat', budgets);
  const mTenant = minimalTenant('min-lat');
  const mScopes = minimalScopes(mTenant, three);
  for (const engine of Object.values(engines)) await engine.seed(mScopes);
  const svcIds: string[] = [];
  const shapeRes: Record<Shape, MinimalReservation[]> = { minimal: [], floor: [] };
  const ops: MinimalOp[] = [];
  const post = (what: string, path: string, body: unknown) =>
    b.runtime.expect(what, 'POST', path, t.headers, body);
  const pair = async (
    op: MinimalOp['op'],
    service: (i: number) => Promise<unknown>,
    shape: (engine: MinimalEngine, i: number) => Promise<unknown>,
  ) => {
    const times: Record<Engine, number[]> = { service: [], minimal: [], floor: [] };
    const all = async (i: number, record: boolean) => {
      for (const e of inTurn(i)) {
        const started = performance.now();
        try {
          await (e === 'service' ? service(i) : shape(engines[e], i));
          if (record) times[e].push(performance.now() - started);
          outcomes.ok();
        } catch (error) {
          outcomes.fail(error);
        }
      }
    };
    for (let i = 0; i < w; i++) await all(i, false);
    const m = await measure(async () => {
      for (let i = w; i < w + n; i++) await all(i, true);
    });
    for (const e of ENGINES) {
      const tally = e === 'service' ? m.service : m.tallies[e];
      const p = tally ? perOp(tally, n) : undefined;
      const r: MinimalOp = {
        op,
        engine: e,
        latency: summarize(times[e]),
        perOp: p,
        usdPerMillion: p ? costPerMillion(p) : undefined,
      };
      ops.push(r);
      say(
        `  ${op.padEnd(20)} ${e.padEnd(8)} p50 ${r.latency.p50.toFixed(2).padStart(6)}  p95 ${r.latency.p95.toFixed(2).padStart(6)}  p99 ${r.latency.p99.toFixed(2).padStart(6)} ms   ${
          p
            ? `${Object.entries(p.calls)
                .map(([c, k]) => `${c} ${Number(k.toFixed(2))}`)
                .join(
                  ' + ',
                )}; ${p.itemsWritten.toFixed(1)} written; ${p.writeUnits.toFixed(1)} WRU ${p.readUnits.toFixed(1)} RRU`
            : 'DynamoDB counts n/a'
        }  (interleaved)`,
      );
    }
  };
  await pair(
    'reserve (3 scopes)',
    async (i) => {
      const res = await post('reserve', '/v1/reservations', reserveBody(`m3-${i}`, three));
      svcIds[i] = String(res.reservation_id);
    },
    async (engine, i) => {
      shapeRes[engine.shape][i] = await engine.reserve(mTenant, mScopes, ESTIMATE);
    },
  );
  await pair(
    'commit (3 scopes)',
    (i) =>
      post('commit', `/v1/reservations/${svcIds[i]}/commit`, {
        idempotency_key: `mc-${i}`,
        actual: { unit: UNIT, amount: ACTUAL },
      }),
    async (engine, i) => {
      const r = shapeRes[engine.shape][i];
      if (!r) throw new Error(`no ${engine.shape} reservation ${i}`);
      await engine.commit(r, ACTUAL);
    },
  );
  const pairs: MinimalPair[] = [];
  for (const e of ENGINES) {
    const reserve = ops.find((o) => o.engine === e && o.op === 'reserve (3 scopes)')?.perOp;
    const commit = ops.find((o) => o.engine === e && o.op === 'commit (3 scopes)')?.perOp;
    if (!reserve || !commit) continue;
    const sum = (a: Record<string, number>, c: Record<string, number>) => {
      const out = { ...a };
      for (const [k, v] of Object.entries(c)) out[k] = (out[k] ?? 0) + v;
      return out;
    };
    const p = {
      writeUnits: reserve.writeUnits + commit.writeUnits,
      readUnits: reserve.readUnits + commit.readUnits,
    };
    pairs.push({
      engine: e,
      calls: sum(reserve.calls, commit.calls),
      itemsWritten: reserve.itemsWritten + commit.itemsWritten,
      ...p,
      units: sum(reserve.units, commit.units),
      usdPerMillion: costPerMillion(p),
    });
  }
  for (const p of pairs)
    say(
      `  3-scope pair         ${p.engine.padEnd(8)} ${p.writeUnits.toFixed(1)} WRU + ${p.readUnits.toFixed(1)} RRU = $${p.usdPerMillion.toFixed(2)} per million pairs [${Object.entries(
        p.units,
      )
        .map(([k, v]) => `${k} ${Number(v.toFixed(2))}`)
        .join(', ')}]`,
    );
  const audited: BenchTenant[] = [t];

  // Load: reserve→commit pairs, 3 scopes, each client its own agent in one workspace.
  const throughput: MinimalRun[] = [];
  const rounds = b.opts.quick ? 1 : 3;
  const levels = b.opts.quick
    ? [
        b.opts.clients.includes(10)
          ? 10
          : (b.opts.clients[Math.floor(b.opts.clients.length / 2)] ?? 1),
      ]
    : b.opts.clients;
  await b.sizing(false);
  for (const engine of Object.values(engines)) engine.control.sizing = false;
  try {
    for (const clients of levels) {
      const agents = Array.from({ length: clients }, (_, c) => `workspace:w/agent:a-${c}`);
      const st = await b.tenant(`min-tp-${clients}`, ['', 'workspace:w', ...agents]);
      audited.push(st);
      const mt = minimalTenant(`min-tp-${clients}`);
      const scopesOf = Array.from({ length: clients }, (_, c) =>
        minimalScopes(mt, { workspace: 'w', agent: `a-${c}` }),
      );
      for (const engine of Object.values(engines)) await engine.seed([...new Set(scopesOf.flat())]);
      const opOf = (e: Engine, round: number) =>
        e === 'service'
          ? async (c: number, i: number) => {
              const key = `${round}-${c}-${i}`;
              const res = await b.runtime.expect(
                'reserve',
                'POST',
                '/v1/reservations',
                st.headers,
                reserveBody(key, { workspace: 'w', agent: `a-${c}` }),
              );
              await b.runtime.expect(
                'commit',
                'POST',
                `/v1/reservations/${String(res.reservation_id)}/commit`,
                st.headers,
                { idempotency_key: `${key}-c`, actual: { unit: UNIT, amount: ACTUAL } },
              );
            }
          : async (c: number) => {
              const engine = engines[e];
              const r = await engine.reserve(mt, scopesOf[c] ?? [], ESTIMATE);
              await engine.commit(r, ACTUAL);
            };
      const acc = new Map<
        Engine,
        {
          lat: number[];
          ops: number;
          seconds: number;
          completed: number;
          perRound: number[];
          retries: number;
          counted: boolean;
          bench: number;
          server?: number;
          java?: number;
          other?: number;
          wall: number;
        }
      >();
      for (let round = 0; round < rounds; round++) {
        for (const e of inTurn(round)) {
          const m = await measure(() =>
            closedLoop({
              clients,
              warmupMs: round === 0 ? b.opts.warmupMs : b.opts.warmupMs / 4,
              durationMs: b.opts.durationMs / rounds,
              op: opOf(e, round),
              outcomes,
              minCompletions: b.opts.quick ? clients : Math.ceil((2 * clients) / rounds),
            }),
          );
          const a = acc.get(e) ?? {
            lat: [],
            ops: 0,
            seconds: 0,
            completed: 0,
            perRound: [],
            retries: 0,
            counted: false,
            bench: 0,
            wall: 0,
          };
          acc.set(e, a);
          a.lat.push(...m.value.latencies);
          a.ops += m.value.latencies.length;
          a.seconds += m.value.measuredSeconds;
          a.completed += m.value.completed;
          a.perRound.push(m.value.perSecond);
          const retries = e === 'service' ? m.serviceConflictRetries : m.retries[e];
          a.retries += retries ?? 0;
          a.counted ||= retries !== undefined;
          a.bench += m.cpu.benchMs;
          a.wall += m.cpu.wallMs;
          if (m.cpu.serverMs !== undefined) a.server = (a.server ?? 0) + m.cpu.serverMs;
          if (m.cpu.javaMs !== undefined) a.java = (a.java ?? 0) + m.cpu.javaMs;
          if (m.cpu.otherMs !== undefined) a.other = (a.other ?? 0) + m.cpu.otherMs;
        }
      }
      for (const e of ENGINES) {
        const a = acc.get(e);
        if (!a) continue;
        const done = Math.max(1, a.completed);
        const run: MinimalRun = {
          engine: e,
          clients,
          perSecond: Math.round((10 * a.ops) / Math.max(1e-3, a.seconds)) / 10,
          perSecondByRound: a.perRound,
          latency: summarize(a.lat),
          completed: a.completed,
          measuredSeconds: r2(a.seconds),
          conflictRetriesPerOp: a.counted ? r2(a.retries / done) : undefined,
          cpu: {
            benchMsPerOp: r2(a.bench / done),
            serverMsPerOp:
              e === 'service' && a.server !== undefined ? r2(a.server / done) : undefined,
            javaMsPerOp: a.java === undefined ? undefined : r2(a.java / done),
            otherPct:
              a.other === undefined ? undefined : Math.round((100 * a.other) / (a.wall * cores)),
          },
        };
        throughput.push(run);
        say(
          `  lifecycle 3 scopes ×${String(clients).padEnd(3)} ${e.padEnd(8)} ${run.perSecond.toFixed(1).padStart(7)} pairs/s (rounds ${a.perRound.join(' / ')})  p50 ${run.latency.p50.toFixed(1).padStart(6)}  p99 ${run.latency.p99.toFixed(1).padStart(6)} ms  retries/op ${run.conflictRetriesPerOp ?? 'n/a'}  cpu ms/pair bench ${run.cpu.benchMsPerOp} server ${run.cpu.serverMsPerOp ?? 'n/a'} java ${run.cpu.javaMsPerOp ?? 'n/a'}  other load ${run.cpu.otherPct ?? 'n/a'}%`,
        );
      }
    }
  } finally {
    await b.sizing(true);
    for (const engine of Object.values(engines)) engine.control.sizing = true;
  }

  await b.audit('minimal', audited);
  for (const engine of Object.values(engines)) {
    const own = await engine.audit(`minimal (${engine.shape} table)`);
    b.audits.push(own);
    say(
      `  audit ${own.phase}: ${own.ledgers} ledgers, ${own.reservations} reservations (${own.active} active) — ${own.mismatches === 0 ? 'OK' : `${own.mismatches} MISMATCHES`} (${own.ms} ms)`,
    );
    for (const e of own.examples) say(`    ${e}`);
  }

  const at = levels.includes(10) ? 10 : levels[levels.length - 1];
  const s = throughput.find((x) => x.engine === 'service' && x.clients === at);
  const mm = throughput.find((x) => x.engine === 'minimal' && x.clients === at);
  const fl = throughput.find((x) => x.engine === 'floor' && x.clients === at);
  const roundsAgainst = (base: MinimalRun | undefined) =>
    (base?.perSecondByRound ?? [])
      .map((x, i) => (x > 0 ? (s?.perSecondByRound[i] ?? 0) / x : undefined))
      .filter((x): x is number => x !== undefined);
  const byRound = roundsAgainst(mm);
  const floorByRound = roundsAgainst(fl);
  const p50Of = (e: Engine) =>
    ops.find((o) => o.engine === e && o.op === 'reserve (3 scopes)')?.latency.p50;
  const [sp, mp, fp] = [p50Of('service'), p50Of('minimal'), p50Of('floor')];
  return {
    table: engines.minimal.table,
    shape:
      'tenant + workspace:w + agent (latency: agent a; load: agent a-<client>), unit USD_MICROCENTS',
    ops,
    pairs,
    throughput,
    summary: {
      clients: at,
      serviceRate: s?.perSecond,
      minimalRate: mm?.perSecond,
      ratio: s && mm && mm.perSecond > 0 ? s.perSecond / mm.perSecond : undefined,
      ratioRange: byRound.length > 1 ? [Math.min(...byRound), Math.max(...byRound)] : undefined,
      serviceReserveP50: sp,
      minimalReserveP50: mp,
      reserveP50GapMs: sp !== undefined && mp !== undefined ? r2(sp - mp) : undefined,
      floorRate: fl?.perSecond,
      floorRatio: s && fl && fl.perSecond > 0 ? s.perSecond / fl.perSecond : undefined,
      floorRatioRange:
        floorByRound.length > 1
          ? [Math.min(...floorByRound), Math.max(...floorByRound)]
          : undefined,
      floorReserveP50: fp,
      floorP50GapMs: sp !== undefined && fp !== undefined ? r2(sp - fp) : undefined,
    },
  };
}
