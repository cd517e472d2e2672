/**
 * What the lean-operations target (issue 12 point 5) is up against, on DynamoDB Local alone:
 * the minimal reserve→commit shape (minimal.ts) against the same two transactions with, one
 * at a time, what the service must add: the table's secondary indexes, its reads before writes
 * (SPEC's balances in every answer), its item and condition shapes. No HTTP, no handlers: a
 * ceiling for the ratio, not the service's figure. `npx tsx test/bench/ceiling.ts`
 * (ROUNDS, default 5; the first round warms the JVM and is not averaged).
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  type AttributeDefinition,
  CreateTableCommand,
  DynamoDBClient,
  type GlobalSecondaryIndex,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '../../infra/local/dynamodb.js';
import { processCpuMs } from './system.js';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
type Key = { pk: string; sk: string };

interface Shape {
  readonly name: string;
  readonly table: string;
  /** The service's reservation item and conditions instead of the minimal ones. */
  readonly rich: boolean;
  /** Index attributes on the reservation: none, the service's five, or a 3-index design. */
  readonly indexes: 'none' | 'service' | 'three';
  /** BatchGetItems per pair: 0, 2 (one before each write) or 3 (the service's). */
  readonly reads: 0 | 2 | 3;
}

const TABLES: Record<string, { indexes: string[]; ttl: boolean }> = {
  plain: { indexes: [], ttl: false },
  service: {
    indexes: ['tenant_pk', 'status_pk', 'workspace_pk', 'app_pk', 'workflow_pk', 'agent_pk'],
    ttl: true,
  },
  three: { indexes: ['tenant_pk', 'active_pk'], ttl: true },
  two: { indexes: ['tenant_pk'], ttl: true },
};
const SHAPES: readonly Shape[] = [
  { name: 'minimal shape', table: 'plain', rich: false, indexes: 'none', reads: 0 },
  {
    name: 'minimal, 9 unpopulated indexes',
    table: 'service',
    rich: false,
    indexes: 'none',
    reads: 0,
  },
  {
    name: 'service: 9 indexes, 3 reads',
    table: 'service',
    rich: true,
    indexes: 'service',
    reads: 3,
  },
  { name: '3 indexes, 3 reads', table: 'three', rich: true, indexes: 'three', reads: 3 },
  { name: '3 indexes, 2 reads', table: 'three', rich: true, indexes: 'three', reads: 2 },
  { name: '2 indexes, 2 reads', table: 'two', rich: true, indexes: 'three', reads: 2 },
];

const ddb = await startDynamoDbLocal({});
const port = ddb.endpoint.split(':')[2];
const javaPid = Number(
  execSync(`pgrep -f "DynamoDBLocal.*-port ${port}" | head -1`).toString().trim(),
);
const client = new DynamoDBClient({
  endpoint: ddb.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  requestHandler: { httpAgent: { keepAlive: true, maxSockets: 256 } },
});
client.middlewareStack.remove('loggerMiddleware');
const doc = DynamoDBDocumentClient.from(client, {
  marshallOptions: { removeUndefinedValues: true },
});

async function createTable(name: string, indexes: readonly string[], ttl: boolean) {
  const s = 'S' as const;
  const attributes: AttributeDefinition[] = [
    { AttributeName: 'pk', AttributeType: s },
    { AttributeName: 'sk', AttributeType: s },
  ];
  const gsis: GlobalSecondaryIndex[] = [];
  const index = (pk: string, sortKey: string) => {
    attributes.push({ AttributeName: pk, AttributeType: s });
    gsis.push({
      IndexName: pk,
      KeySchema: [
        { AttributeName: pk, KeyType: 'HASH' },
        { AttributeName: sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
    });
  };
  if (indexes.length > 0) {
    attributes.push(
      { AttributeName: 'list_sk', AttributeType: s },
      { AttributeName: 'due_sk', AttributeType: s },
    );
    for (const pk of indexes) index(pk, 'list_sk');
    index('due_pk', 'due_sk');
    // The service's table also has a toolset and a directory index nothing here populates.
    if (name === 'service') {
      index('toolset_pk', 'list_sk');
      index('dir_pk', 'list_sk');
    }
  }
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: attributes,
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      ...(gsis.length > 0 && { GlobalSecondaryIndexes: gsis }),
    }),
  );
  if (ttl)
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      }),
    );
}

const ledgerKey = (scope: string): Key => ({ pk: `LEDGER#${scope}#USD_MICROCENTS`, sk: '-' });

async function pair(v: Shape, tenant: string, c: number) {
  const T = v.table;
  const scopes = [
    `tenant:${tenant}`,
    `tenant:${tenant}/workspace:w`,
    `tenant:${tenant}/workspace:w/agent:a-${c}`,
  ];
  const id = `rsv_${randomBytes(16).toString('hex')}`;
  const now = Date.now();
  const R: Key = { pk: `RESERVATION#${id}`, sk: '-' };
  const read = (keys: Key[]) =>
    doc.send(new BatchGetCommand({ RequestItems: { [T]: { Keys: keys, ConsistentRead: true } } }));
  const spread = c % 4;
  const listed = {
    list_sk: `${now}#${id}`,
    due_pk: `DUE#${c % 16}`,
    due_sk: `${now + 65_000}#${tenant}#${id}`,
  };
  const indexAttributes =
    v.indexes === 'service'
      ? {
          ...listed,
          tenant_pk: `T#${tenant}~${spread}`,
          status_pk: `T#${tenant}#ACTIVE~${spread}`,
          workspace_pk: `T#${tenant}#workspace#w~${spread}`,
          agent_pk: `T#${tenant}#agent#a-${c}~${spread}`,
        }
      : v.indexes === 'three'
        ? { ...listed, tenant_pk: `T#${tenant}~${spread}`, active_pk: `T#${tenant}~${spread}` }
        : {};
  const item = v.rich
    ? {
        ...R,
        type: 'reservation',
        tenant,
        status: 'ACTIVE',
        idempotency_key: `k-${id}`,
        subject: { tenant, workspace: 'w', agent: `a-${c}` },
        action: { kind: 'llm.completion', name: 'm' },
        unit: 'USD_MICROCENTS',
        estimate: 1000,
        created_at_ms: now,
        expires_at_ms: now + 60_000,
        ttl_ms: 60_000,
        grace_period_ms: 5000,
        deadline_ms: now + 65_000,
        scopes,
        overage_policy: 'REJECT',
        fingerprint: randomBytes(32),
        balances: scopes.flatMap(() => [1e9, 0, 1000, 0, 0]),
        ...indexAttributes,
      }
    : { ...R, tenant, scopes, estimate: 1000, status: 'ACTIVE', expires: now + 60_000 };
  const failure = v.rich ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};
  const hold = (scope: string): TransactItem => ({
    Update: {
      TableName: T,
      Key: ledgerKey(scope),
      UpdateExpression: 'SET #reserved = #reserved + :d, #remaining = #remaining - :d',
      ConditionExpression: v.rich
        ? 'attribute_exists(#pk) AND #remaining >= :d AND #debt = :zero AND (attribute_not_exists(#status) OR #status = :active)'
        : '#remaining >= :d',
      ExpressionAttributeNames: {
        '#reserved': 'reserved',
        '#remaining': 'remaining',
        ...(v.rich && { '#pk': 'pk', '#debt': 'debt', '#status': 'status' }),
      },
      ExpressionAttributeValues: { ':d': 1000, ...(v.rich && { ':zero': 0, ':active': 'ACTIVE' }) },
      ...failure,
    },
  });
  if (v.reads > 0) await read([R, ...scopes.map(ledgerKey)]);
  await doc.send(
    new TransactWriteCommand({
      TransactItems: [
        ...scopes.map(hold),
        {
          Put: {
            TableName: T,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
            ...failure,
          },
        },
      ],
    }),
  );
  if (v.reads === 3) await read([R, { pk: `IDEMPOTENCY#${tenant}#commit#${id}`, sk: '-' }]);
  if (v.reads > 0) await read(scopes.map(ledgerKey));
  const settle = (scope: string): TransactItem => ({
    Update: {
      TableName: T,
      Key: ledgerKey(scope),
      UpdateExpression:
        'SET #spent = #spent + :a, #reserved = #reserved - :e, #remaining = #remaining + :r',
      ...(v.rich && { ConditionExpression: 'attribute_exists(#pk)' }),
      ExpressionAttributeNames: {
        '#spent': 'spent',
        '#reserved': 'reserved',
        '#remaining': 'remaining',
        ...(v.rich && { '#pk': 'pk' }),
      },
      ExpressionAttributeValues: { ':a': 800, ':e': 1000, ':r': 200 },
      ...failure,
    },
  });
  const removed = { none: '', service: ', due_pk, due_sk', three: ', due_pk, due_sk, active_pk' }[
    v.indexes
  ];
  const status: TransactItem = v.rich
    ? {
        Update: {
          TableName: T,
          Key: R,
          UpdateExpression: `SET #status = :to, finalized_at_ms = :now, committed = :c, settle_key = :k, settle_fingerprint = :f, settle_rows = :rows${v.indexes === 'service' ? ', status_pk = :spk' : ''} REMOVE deadline_ms${removed}`,
          ConditionExpression: '#status = :active AND tenant = :tenant AND deadline_ms > :now',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':to': 'COMMITTED',
            ':now': now,
            ':c': 800,
            ':k': 'c1',
            ':f': randomBytes(32),
            ':rows': scopes.flatMap(() => [1e9, 800, 0, 0, 0]),
            ':active': 'ACTIVE',
            ':tenant': tenant,
            ...(v.indexes === 'service' && { ':spk': `T#${tenant}#COMMITTED~${spread}` }),
          },
          ...failure,
        },
      }
    : {
        Update: {
          TableName: T,
          Key: R,
          UpdateExpression: 'SET #status = :to',
          ConditionExpression: '#status = :active',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':to': 'COMMITTED', ':active': 'ACTIVE' },
        },
      };
  await doc.send(new TransactWriteCommand({ TransactItems: [status, ...scopes.map(settle)] }));
}

/** 10 closed-loop clients, 3-scope pairs, 5 s after 0.7 s of warm-up. */
async function measure(v: Shape, clients = 10, ms = 5_000) {
  const tenant = `t${randomBytes(4).toString('hex')}`;
  const scopes = [
    `tenant:${tenant}`,
    `tenant:${tenant}/workspace:w`,
    ...Array.from({ length: clients }, (_, c) => `tenant:${tenant}/workspace:w/agent:a-${c}`),
  ];
  const ledgers = scopes.map((scope) => ({
    PutRequest: {
      Item: {
        ...ledgerKey(scope),
        type: 'ledger',
        scope,
        allocated: 1e12,
        reserved: 0,
        spent: 0,
        debt: 0,
        remaining: 1e12,
      },
    },
  }));
  for (let i = 0; i < ledgers.length; i += 25)
    await doc.send(
      new BatchWriteCommand({ RequestItems: { [v.table]: ledgers.slice(i, i + 25) } }),
    );
  let stop = false;
  let pairs = 0;
  const workers = Array.from({ length: clients }, async (_, c) => {
    while (!stop) {
      await pair(v, tenant, c);
      pairs++;
    }
  });
  await new Promise((r) => setTimeout(r, 700));
  const [java0, node0, t0, n0] = [
    processCpuMs(javaPid) ?? 0,
    process.cpuUsage(),
    performance.now(),
    pairs,
  ];
  await new Promise((r) => setTimeout(r, ms));
  const [java1, node1, t1, n1] = [
    processCpuMs(javaPid) ?? 0,
    process.cpuUsage(node0),
    performance.now(),
    pairs,
  ];
  stop = true;
  await Promise.all(workers);
  const done = Math.max(1, n1 - n0);
  return {
    rate: done / ((t1 - t0) / 1000),
    javaMs: (java1 - java0) / done,
    nodeMs: (node1.user + node1.system) / 1000 / done,
  };
}

try {
  for (const [name, t] of Object.entries(TABLES)) await createTable(name, t.indexes, t.ttl);
  const rounds = Number(process.env.ROUNDS ?? 5);
  const results = new Map<string, { rate: number; javaMs: number; nodeMs: number }[]>();
  for (let round = 0; round < rounds; round++) {
    // Each round starts at another shape: DynamoDB Local slows as its tables fill.
    for (const v of SHAPES.map((_, i) => SHAPES[(i + round) % SHAPES.length] as Shape)) {
      const r = await measure(v);
      if (round > 0) results.set(v.name, [...(results.get(v.name) ?? []), r]);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const base = mean((results.get(SHAPES[0]?.name ?? '') ?? []).map((r) => r.rate));
  for (const [name, rs] of results) {
    const rate = mean(rs.map((r) => r.rate));
    process.stdout.write(
      `${name.padEnd(30)} ${rate.toFixed(1).padStart(6)} pairs/s (${Math.round((100 * rate) / base)} %)  DynamoDB Local ${mean(rs.map((r) => r.javaMs)).toFixed(1)} ms CPU/pair  client ${mean(rs.map((r) => r.nodeMs)).toFixed(1)} ms  rounds ${rs.map((r) => r.rate.toFixed(0)).join(' / ')}\n`,
    );
  }
} finally {
  client.destroy();
  await ddb.stop();
}
