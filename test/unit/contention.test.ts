import {
  DynamoDBClient,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Clock,
  ContentionEmulator,
  ContentionModel,
  type ContentionSettings,
  constant,
  contentionSettingsFromText,
  describeWrite,
  ItemMemory,
  type ItemWrite,
  installContentionEmulator,
  itemKeyOf,
  lognormal,
  seededRandom,
  simulate,
} from '../../infra/local/contention.js';
import {
  LEGACY_POLICIES,
  reserveCommitPair,
  SERVICE_POLICIES,
  tenantPairs,
} from '../../infra/local/contention-shapes.js';

const TABLE = 'budget-reservations';

/** A clock tests move by hand; waiting on it (the emulator's sleep) moves it too. */
function manualClock(): Clock & { at: number; sleep: (ms: number) => Promise<void> } {
  const clock = {
    at: 0,
    now: () => clock.at,
    sleep: async (ms: number) => {
      clock.at += ms;
    },
  };
  return clock;
}

/** Fixed windows: a hold of 10 ms, a cancel hold of 2 ms. */
const FIXED: Partial<ContentionSettings> = { hold: constant(10), cancelHold: constant(2) };

const key = (pk: string) => ({ pk: { S: pk }, sk: { S: '-' } });
const update = (pk: string): TransactWriteItem => ({
  Update: {
    TableName: TABLE,
    Key: key(pk),
    UpdateExpression: 'SET #n = #n + :one',
    ExpressionAttributeNames: { '#n': 'n' },
    ExpressionAttributeValues: { ':one': { N: '1' } },
  },
});
const transaction = (...pks: string[]) => ({ TransactItems: pks.map(update) });

/** A forwarded call that stays in flight until released: its holds are what is tested. */
function inFlight() {
  let release: () => void = () => {};
  const done = new Promise<string>((resolve) => {
    release = () => resolve('forwarded');
  });
  let calls = 0;
  return {
    forward: () => {
      calls++;
      return done;
    },
    release: () => release(),
    get calls() {
      return calls;
    },
  };
}

const forwarded = async () => 'forwarded';

async function refusal(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('the emulator: transaction conflicts', () => {
  it('cancels a transaction meeting a held item with TransactionConflict at its index, None elsewhere, and forwards nothing', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const first = inFlight();
    const running = emulator.handle('TransactWriteItemsCommand', transaction('L'), first.forward);
    const second = inFlight();

    const error = await refusal(
      emulator.handle('TransactWriteItemsCommand', transaction('X', 'L', 'Y'), second.forward),
    );

    expect(error).toBeInstanceOf(TransactionCanceledException);
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons.map((r) => r.Code)).toEqual(['None', 'TransactionConflict', 'None']);
    expect(second.calls).toBe(0);
    expect(emulator.counters).toMatchObject({ transactions: 2, cancelledForConflict: 1 });
    first.release();
    await running;
  });

  it('keeps the items a cancelled transaction prepared held for the cancel window, and no others', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const holder = inFlight();
    void emulator.handle('TransactWriteItemsCommand', transaction('L'), holder.forward);
    await refusal(
      emulator.handle('TransactWriteItemsCommand', transaction('X', 'L', 'Y'), forwarded),
    );

    clock.at = 1.9;
    const onX = await refusal(
      emulator.handle('TransactWriteItemsCommand', transaction('X'), forwarded),
    );
    const onY = await emulator.handle('TransactWriteItemsCommand', transaction('Y'), forwarded);
    clock.at = 2;
    const onXLater = await emulator.handle(
      'TransactWriteItemsCommand',
      transaction('X'),
      forwarded,
    );

    expect(onX).toBeInstanceOf(TransactionCanceledException);
    expect(onY).toBe('forwarded');
    expect(onXLater).toBe('forwarded');
    holder.release();
  });

  it('releases holds when the window ends, and answers a transaction only once its holds end', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const holder = inFlight();
    const running = emulator.handle('TransactWriteItemsCommand', transaction('L'), holder.forward);

    clock.at = 9.99;
    const during = await refusal(
      emulator.handle('TransactWriteItemsCommand', transaction('L'), forwarded),
    );
    clock.at = 10;
    const after = emulator.handle('TransactWriteItemsCommand', transaction('L'), forwarded);
    holder.release();

    expect(during).toBeInstanceOf(TransactionCanceledException);
    expect(await running).toBe('forwarded');
    expect(await after).toBe('forwarded');
    // The last one waited for its own 10 ms hold before answering.
    expect(clock.at).toBe(20);
  });

  it('lets go of a forwarded transaction that DynamoDB cancelled, after the cancel window', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const conditionFailed = async () => {
      throw new Error('ConditionalCheckFailed downstream');
    };
    await refusal(emulator.handle('TransactWriteItemsCommand', transaction('L'), conditionFailed));

    clock.at = 2;
    const next = await emulator.handle('TransactWriteItemsCommand', transaction('L'), forwarded);

    expect(next).toBe('forwarded');
  });
});

describe('the emulator: plain writes and reads', () => {
  it('refuses a plain write on a held item with TransactionConflictException, and lets it through after', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const holder = inFlight();
    void emulator.handle('TransactWriteItemsCommand', transaction('L'), holder.forward);
    const put = { TableName: TABLE, Item: { ...key('L'), n: { N: '0' } } };

    const during = await refusal(emulator.handle('PutItemCommand', put, forwarded));
    const read = await emulator.handle(
      'GetItemCommand',
      { TableName: TABLE, Key: key('L') },
      forwarded,
    );
    clock.at = 10;
    const after = await emulator.handle('PutItemCommand', put, forwarded);

    expect(during).toBeInstanceOf(TransactionConflictException);
    expect(read).toBe('forwarded');
    expect(after).toBe('forwarded');
    expect(emulator.counters).toMatchObject({ plainWrites: 2, plainWriteConflicts: 1 });
    holder.release();
  });

  it('cancels a TransactGetItems meeting a held item with TransactionConflict at its index, as AWS does, and reads it after', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({ settings: FIXED, clock, sleep: clock.sleep });
    const holder = inFlight();
    void emulator.handle('TransactWriteItemsCommand', transaction('L'), holder.forward);
    const read = {
      TransactItems: ['X', 'L', 'Y'].map((pk) => ({ Get: { TableName: TABLE, Key: key(pk) } })),
    };
    const reader = inFlight();

    const during = await refusal(emulator.handle('TransactGetItemsCommand', read, reader.forward));
    clock.at = 10;
    const after = await emulator.handle('TransactGetItemsCommand', read, forwarded);

    expect(during).toBeInstanceOf(TransactionCanceledException);
    const reasons = (during as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons.map((r) => r.Code)).toEqual(['None', 'TransactionConflict', 'None']);
    expect(reader.calls).toBe(0);
    expect(after).toBe('forwarded');
    expect(emulator.counters).toMatchObject({
      transactionalReads: 2,
      readsCancelledForConflict: 1,
    });
    holder.release();
  });
});

// ---- throttling ------------------------------------------------------------------------------

/** `perSecond` writes, evenly spaced over `seconds`; whether any was throttled. */
function throttledAt(
  write: (i: number) => ItemWrite,
  perSecond: number,
  seconds: number,
  transactional: boolean,
): boolean {
  const clock = manualClock();
  // Holds shorter than the spacing: only the rate limit can refuse.
  const model = new ContentionModel(
    {
      hold: constant(0.01),
      cancelHold: constant(0),
      latency: constant(0),
      writeUnitsPerSecond: 1_000,
      burstSeconds: 1,
    },
    clock,
    seededRandom(1),
  );
  for (let i = 0; i < perSecond * seconds; i++) {
    clock.at = (1000 * i) / perSecond;
    const refused = transactional
      ? model.prepareTransaction([write(i)]).kind === 'cancelled'
      : model.plainWrite(write(i)) !== 'ok';
    if (refused) return true;
  }
  return false;
}

const memory = () => new ItemMemory();
const smallItem = (pk: string, extra: Record<string, unknown> = {}) =>
  marshall({ pk, sk: '-', n: 1, ...extra });

describe('the model: write units and throttling', () => {
  it('charges 2 units per started KB of an item in a transaction, 1 outside, and 1 per KB of index entry', () => {
    const item = smallItem('R', { status_pk: 'T#t', list_sk: 'x', blob: 'b'.repeat(1_500) });
    const action = { TableName: TABLE, Item: item };

    const inTransaction = describeWrite('Put', action, memory(), true).write;
    const plain = describeWrite('Put', action, memory(), false).write;

    expect(inTransaction.units).toBe(4);
    expect(plain.units).toBe(2);
    expect(inTransaction.indexWrites).toEqual([
      { partition: `${TABLE}\u0001byStatus\u0001T#t`, units: 1 },
    ]);
  });

  it('throttles one item above 1,000 write units a second, and not below', () => {
    const write = describeWrite('Put', { TableName: TABLE, Item: smallItem('L') }, memory(), true);

    // 2 units per transactional write: 600/s is 1,200 units/s, 450/s is 900.
    expect(throttledAt(() => write.write, 600, 10, true)).toBe(true);
    expect(throttledAt(() => write.write, 450, 10, true)).toBe(false);
    expect(throttledAt(() => ({ ...write.write, units: 1 }), 1_100, 10, false)).toBe(true);
    expect(throttledAt(() => ({ ...write.write, units: 1 }), 900, 10, false)).toBe(false);
  });

  it('throttles one index partition key above 1,000 units a second, whatever items write it', () => {
    const entryOf = (i: number) =>
      describeWrite(
        'Put',
        { TableName: TABLE, Item: smallItem(`R${i}`, { status_pk: 'T#hot', list_sk: `${i}` }) },
        memory(),
        false,
      ).write;

    expect(throttledAt(entryOf, 1_100, 10, false)).toBe(true);
    expect(throttledAt(entryOf, 900, 10, false)).toBe(false);
  });

  it('is throttled exactly when the sustained rate passes the cap (property)', () => {
    const write = describeWrite('Put', { TableName: TABLE, Item: smallItem('L') }, memory(), false);
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 100, max: 950 }), fc.integer({ min: 1_050, max: 3_000 })),
        (perSecond) => throttledAt(() => write.write, perSecond, 25, false) === perSecond > 1_000,
      ),
      { numRuns: 30 },
    );
  });

  it('cancels a transaction with ThrottlingError at the saturated item, None elsewhere', async () => {
    const clock = manualClock();
    const emulator = new ContentionEmulator({
      settings: { ...FIXED, writeUnitsPerSecond: 4, burstSeconds: 1 },
      clock,
      sleep: clock.sleep,
    });
    // Four plain writes of 1 unit each take all of B's 4: its transactional update (2) cannot.
    const putB = { TableName: TABLE, Item: smallItem('B') };
    for (let i = 0; i < 4; i++) await emulator.handle('PutItemCommand', putB, forwarded);

    const error = await refusal(
      emulator.handle(
        'TransactWriteItemsCommand',
        { TransactItems: [update('A'), update('B'), update('B2')] },
        forwarded,
      ),
    );
    const plain = await refusal(emulator.handle('PutItemCommand', putB, forwarded));

    expect((error as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(
      ['None', 'ThrottlingError', 'None'],
    );
    expect(plain).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(emulator.counters).toMatchObject({ cancelledForThrottling: 1, plainWritesThrottled: 1 });
  });
});

describe('the model: what an Update touches', () => {
  it("moves an item's index entries from the partitions remembered from its Put", () => {
    const m = memory();
    const put = describeWrite(
      'Put',
      {
        TableName: TABLE,
        Item: smallItem('R', {
          status_pk: 'T#t#ACTIVE',
          list_sk: 'x',
          due_pk: 'DUE#3',
          due_sk: 'd',
        }),
      },
      m,
      true,
    );
    m.set(put.write.item, put.after ?? null);

    const settle = describeWrite(
      'Update',
      {
        TableName: TABLE,
        Key: key('R'),
        UpdateExpression: 'SET #s = :s, #f = :f REMOVE #due_pk, #due_sk',
        ExpressionAttributeNames: {
          '#s': 'status_pk',
          '#f': 'finalized',
          '#due_pk': 'due_pk',
          '#due_sk': 'due_sk',
        },
        ExpressionAttributeValues: { ':s': { S: 'T#t#COMMITTED' }, ':f': { N: '5' } },
      },
      m,
      true,
    );
    const never = describeWrite('Update', { TableName: TABLE, Key: key('unseen') }, m, true);

    const partitions = settle.write.indexWrites.map((w) => w.partition.split('\u0001').slice(1));
    expect(partitions).toEqual([
      ['byStatus', 'T#t#ACTIVE'],
      ['byStatus', 'T#t#COMMITTED'],
      ['dueForExpiry', 'DUE#3'],
    ]);
    expect(settle.write.units).toBe(2);
    expect(never.write).toEqual({
      item: itemKeyOf(TABLE, key('unseen')),
      units: 2,
      indexWrites: [],
    });
  });
});

// ---- through the SDK -------------------------------------------------------------------------

/**
 * A real DynamoDBClient whose requests end in a stub (no network), with a retry strategy that
 * records how the SDK classified each error and retries throttles at once, up to 4 attempts.
 */
function stubbedClient() {
  const errorTypes: string[] = [];
  const token = (count: number) => ({ getRetryCount: () => count, getRetryDelay: () => 0 });
  let retries = 0;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    retryStrategy: {
      acquireInitialRetryToken: async () => token(0),
      refreshRetryTokenForRetry: async (_token, info) => {
        errorTypes.push(info.errorType);
        if (info.errorType !== 'THROTTLING' || retries >= 3) throw info.error;
        return token(++retries);
      },
      recordSuccess: () => {},
    },
  });
  let reached = 0;
  client.middlewareStack.add(
    () => async () => {
      reached++;
      return { response: {}, output: { $metadata: {} } };
    },
    { step: 'deserialize', priority: 'high', name: 'stubbedDynamoDB' },
  );
  return { client, errorTypes, reachedDynamoDB: () => reached };
}

describe('the emulator on an SDK client', () => {
  it('is retried by the SDK itself when it throttles a plain write, as AWS throttles are', async () => {
    const { client, errorTypes, reachedDynamoDB } = stubbedClient();
    const clock = manualClock();
    const emulator = installContentionEmulator(client, {
      settings: { ...FIXED, writeUnitsPerSecond: 1, burstSeconds: 1 },
      clock,
      sleep: clock.sleep,
    });
    const doc = DynamoDBDocumentClient.from(client);
    await doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'P', sk: '-' } }));

    const error = await refusal(
      doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'P', sk: '-' } })),
    );

    expect(error).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(errorTypes).toEqual(['THROTTLING', 'THROTTLING', 'THROTTLING', 'THROTTLING']);
    expect(emulator.counters.plainWritesThrottled).toBe(4);
    expect(reachedDynamoDB()).toBe(1);
  });

  it('sees the marshalled input and is not retried by the SDK on a conflict', async () => {
    const { client, errorTypes, reachedDynamoDB } = stubbedClient();
    const clock = manualClock();
    installContentionEmulator(client, { settings: FIXED, clock, sleep: clock.sleep });
    const doc = DynamoDBDocumentClient.from(client);
    const items = (...pks: string[]) => ({
      TransactItems: pks.map((pk) => ({
        Update: {
          TableName: TABLE,
          Key: { pk, sk: '-' },
          UpdateExpression: 'SET #n = :n',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':n': 1 },
        },
      })),
    });
    // Held by the first until t = 10; the clock stands still between the two sends.
    const first = doc.send(new TransactWriteCommand(items('L')));

    const error = await refusal(doc.send(new TransactWriteCommand(items('X', 'L'))));
    await first;

    expect((error as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(
      ['None', 'TransactionConflict'],
    );
    expect(errorTypes).toEqual(['CLIENT_ERROR']);
    expect(reachedDynamoDB()).toBe(1);
  });
});

// ---- settings --------------------------------------------------------------------------------

describe('EMULATE_CONTENTION', () => {
  it('is off when unset or 0, the defaults for 1, and named settings otherwise', () => {
    expect(contentionSettingsFromText(undefined)).toBeUndefined();
    expect(contentionSettingsFromText('0')).toBeUndefined();
    expect(contentionSettingsFromText('1')).toEqual({});
    const s = contentionSettingsFromText(
      'hold_ms=20,latency_ms=5,cancel_hold_ms=fixed:1,wru_per_s=500',
    );

    expect(s?.hold?.text).toBe('exponential, mean 20 ms');
    expect(s?.latency?.text).toBe('5 ms');
    expect(s?.cancelHold?.text).toBe('1 ms');
    expect(s?.writeUnitsPerSecond).toBe(500);
    expect(() => contentionSettingsFromText('hold=13')).toThrow(/unknown setting 'hold'/);
  });
});

// ---- shapes and the simulator ---------------------------------------------------------------

describe("today's shapes", () => {
  it('hold the tenant ledger in both transactions of a pair, and move the reservation through the indexes', () => {
    const [reserve, commit] = reserveCommitPair('acme', { scopes: 1 }, 'k', SERVICE_POLICIES);
    const ledger = `${TABLE}\u0001LEDGER#tenant:acme#USD_MICROCENTS\u0001-`;

    expect(reserve?.writes.map((w) => w.item)).toEqual([
      ledger,
      expect.stringContaining('RESERVATION#'),
    ]);
    // The commit's outcome is kept on the reservation item: no record of its own.
    expect(commit?.writes.map((w) => w.item)).toEqual([
      expect.stringContaining('RESERVATION#'),
      ledger,
    ]);
    expect(commit?.writes[0]?.indexWrites.map((w) => w.partition.split('\u0001')[2])).toEqual([
      expect.stringMatching(/^T#acme#ACTIVE(~\d+)?$/),
      expect.stringMatching(/^T#acme#COMMITTED(~\d+)?$/),
      expect.stringMatching(/^DUE#\d+$/),
    ]);
    expect([reserve?.reads, commit?.reads]).toEqual([1, 2]);
  });

  it('hold three ledgers with three scopes', () => {
    const [reserve, commit] = reserveCommitPair('acme', { scopes: 3 }, 'k', SERVICE_POLICIES);

    expect(reserve?.writes.filter((w) => w.item.includes('LEDGER#'))).toHaveLength(3);
    expect(commit?.writes.filter((w) => w.item.includes('LEDGER#'))).toHaveLength(3);
  });

  it('hold one escrow shard of a sharded budget, the same in reserve and commit, spread by key', () => {
    const shardOf = (key: string) => {
      const [reserve, commit] = reserveCommitPair(
        'acme',
        { scopes: 1, shards: 16 },
        key,
        SERVICE_POLICIES,
      );
      const held = (op: typeof reserve) =>
        op?.writes.map((w) => w.item).filter((item) => item.includes('LEDGER#')) ?? [];
      expect(held(reserve)).toHaveLength(1);
      expect(held(commit)).toEqual(held(reserve));
      return held(reserve)[0];
    };

    const shards = new Set(Array.from({ length: 40 }, (_, i) => shardOf(`k${i}`)));

    expect(shards.size).toBeGreaterThan(8);
  });

  it('retry a sharded hold on other shards, and commit on the shard the last attempt took', () => {
    const [reserve, commit] = reserveCommitPair(
      'acme',
      { scopes: 1, shards: 16 },
      'k',
      SERVICE_POLICIES,
    );
    const held = (writes: readonly { item: string }[] | undefined) =>
      (writes ?? []).map((w) => w.item).filter((item) => item.includes('LEDGER#'));
    const tried = Array.from({ length: 7 }, (_, attempt) => held(reserve?.writesAt?.(attempt)));

    expect(tried[0]).toEqual(held(reserve?.writes));
    expect(new Set(tried.flat()).size).toBeGreaterThan(3);
    expect(held(commit?.writesAt?.(0))).toEqual(tried[6]);
  });

  it('retry an unsharded hold on the same items', () => {
    const [reserve, commit] = reserveCommitPair('acme', { scopes: 3 }, 'k', SERVICE_POLICIES);

    expect(reserve?.writesAt).toBeUndefined();
    expect(commit?.writesAt).toBeUndefined();
  });
});

const quickRun = (seed: number, clients = 10) =>
  simulate({
    clients,
    warmupMs: 500,
    durationMs: 5_000,
    pair: tenantPairs('acme', { scopes: 1 }, LEGACY_POLICIES),
    transactionLatency: lognormal(25, 92.5),
    readLatency: lognormal(5, 16),
    seed,
  });

describe('the simulator', () => {
  it('is deterministic for a seed', () => {
    const [a, b, c] = [quickRun(42), quickRun(42), quickRun(43)];

    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
  });

  it('sees no conflict from one client, and conflicts that fail requests from many', () => {
    const one = quickRun(1, 1);
    const many = quickRun(1, 50);

    expect(one.conflictRate).toBe(0);
    expect(one.failedRequests).toBe(0);
    expect(many.conflictRate).toBeGreaterThan(0.5);
    expect(many.failureRate).toBeGreaterThan(0.2);
  });

  it('never conflicts when transactions hold nothing, below the rate cap (property)', () => {
    // 10 clients at ~52 ms a pair send ~385 transactions/s to the tenant ledger: 770 units/s.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.integer(), (clients, seed) => {
        const r = simulate({
          clients,
          warmupMs: 100,
          durationMs: 1_000,
          pair: tenantPairs('acme', { scopes: 1 }, SERVICE_POLICIES),
          transactionLatency: constant(20),
          readLatency: constant(4),
          settings: { hold: constant(0), cancelHold: constant(0) },
          seed,
        });
        return r.conflictRate === 0 && r.failedRequests === 0 && r.pairs > 0;
      }),
      { numRuns: 15 },
    );
  });

  it('throttles the tenant ledger when nothing holds it and 60 clients write it', () => {
    const r = simulate({
      clients: 60,
      warmupMs: 1_000,
      durationMs: 3_000,
      pair: tenantPairs('acme', { scopes: 1 }, SERVICE_POLICIES),
      transactionLatency: constant(20),
      readLatency: constant(4),
      settings: { hold: constant(0), cancelHold: constant(0) },
      seed: 5,
    });

    // 2 units per transactional write: at most 500 transactions, 250 pairs a second.
    expect(r.conflictRate).toBe(0);
    expect(r.throttleRate).toBeGreaterThan(0);
    expect(r.pairsPerSecond).toBeLessThanOrEqual(250 + 10);
  });
});
