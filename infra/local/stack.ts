import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import type { ContentionSettings } from './contention.js';
import type { DeliveryWorker } from './delivery-worker.js';
import {
  ensureStream,
  ensureTable,
  type LocalDynamo,
  localClient,
  StartupError,
  startDynamoDbLocal,
} from './dynamodb.js';
import { type StreamPoller, startStreamPoller } from './stream-poller.js';

export interface LocalStack {
  readonly runtimeUrl: string;
  readonly adminUrl: string;
  readonly dynamoEndpoint: string;
  /** The webhook delivery worker, when events are on (tests wait on it). */
  readonly deliveries?: DeliveryWorker | undefined;
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  readonly inMemory?: boolean;
  readonly announce?: boolean;
  /** Overrides RUNTIME_PORT / ADMIN_PORT (0 picks a free port). */
  readonly runtimePort?: number;
  readonly adminPort?: number;
  /** false: no sweeper interval (tests drive the sweeper themselves). */
  readonly sweeper?: boolean;
  /** Server time for every handler and the sweeper (tests advance it instead of sleeping). */
  readonly clock?: () => number;
  /**
   * Emulate DynamoDB's transaction conflicts and per-key throttling on the service's client
   * (infra/local/contention.ts); `{}` for the defaults. Off when absent.
   */
  readonly contention?: Partial<ContentionSettings> | undefined;
}

/**
 * Starts everything `npm start` runs, in this process. The configuration module reads the
 * environment once, so DYNAMODB_ENDPOINT is settled before any function module is imported.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  let dynamo: LocalDynamo | undefined;
  let dataDir: string | undefined;
  const inMemory = options.inMemory || ['1', 'true'].includes(process.env.DYNAMODB_IN_MEMORY ?? '');
  // Refused reservations are recorded with EVENTS_ENABLED=false too: the operator overview's
  // recent denials are read from those records (REFUSAL_EVENTS=false turns them off).
  // Locally a webhook may point at this machine (the receiver, the tests' receivers) over http,
  // until an operator PUTs a security configuration of their own.
  process.env.WEBHOOK_LOCAL_TARGETS ??= 'true';
  if (!process.env.DYNAMODB_ENDPOINT) {
    delete process.env.DYNAMODB_ENDPOINT;
    dataDir = inMemory ? undefined : (process.env.DATA_DIR ?? '.data');
    dynamo = await startDynamoDbLocal({ dataDir });
    process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
    // Cursors stay valid across restarts of a persisted store; otherwise random per process.
    if (dataDir && !process.env.CURSOR_SECRET) process.env.CURSOR_SECRET = keptSecret(dataDir);
    // Webhook secrets sealed in a persisted store must open after a restart: the key is kept too.
    if (dataDir && !process.env.WEBHOOK_SEALING_KEY) {
      process.env.WEBHOOK_SEALING_KEY = keptSecret(dataDir, 'webhook-sealing-key', 'base64');
    }
  }
  const servers: HttpServer[] = [];
  let timer: NodeJS.Timeout | undefined;
  const pollers: StreamPoller[] = [];
  let deliveries: DeliveryWorker | undefined;
  const stop = async () => {
    if (timer) clearInterval(timer);
    const closed = Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    for (const s of servers) s.closeAllConnections(); // keep-alive sockets would hold close() open
    await closed;
    await Promise.all(pollers.map((p) => p.stop()));
    deliveries?.stop();
    await deliveries?.settled(5_000);
    await dynamo?.stop();
  };
  try {
    // Imported only now: the function modules read their configuration once, at import.
    const { config } = await import('../../functions/config/settings.js');
    if (options.clock) {
      const { useClock } = await import('../../functions/clock.js');
      useClock(options.clock);
    }
    if (options.contention) {
      // Imported only when asked: nothing of the emulator is loaded otherwise.
      const { installContentionEmulator } = await import('./contention.js');
      const { dynamoClient } = await import('../../functions/store/client.js');
      installContentionEmulator(dynamoClient, { settings: options.contention });
    }
    const { createLocalServer } = await import('./server.js');
    const endpoint = process.env.DYNAMODB_ENDPOINT ?? '';
    const client = localClient(endpoint, config.AWS_REGION);
    const webhooks = config.WEBHOOK_URLS.length;
    const events = config.EVENTS_ENABLED;
    // The stream is on only when something reads it: DynamoDB Local keeps every record for a
    // day, in its database (docs/decisions.md § Estimate accuracy: the cost, measured).
    const streamed = events || config.ESTIMATE_ACCURACY;
    const table = await ensureTable(client, config.TABLE_NAME, streamed).catch((error: unknown) => {
      throw dynamo ? error : unreachable(endpoint, error);
    });
    const streamArn = streamed ? await ensureStream(client, config.TABLE_NAME) : undefined;
    client.destroy();

    const runtime = createLocalServer('runtime');
    const admin = createLocalServer('admin');
    servers.push(runtime, admin);
    const host = config.HOST;
    const runtimePort = await listenOrExplain(
      runtime,
      options.runtimePort ?? config.RUNTIME_PORT,
      host,
      'RUNTIME_PORT',
    );
    const adminPort = await listenOrExplain(
      admin,
      options.adminPort ?? config.ADMIN_PORT,
      host,
      'ADMIN_PORT',
    );

    if (options.sweeper !== false) {
      const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');
      const { log } = await import('../../functions/log.js');
      let running = false;
      timer = setInterval(() => {
        if (running) return; // never two local sweeps at once
        running = true;
        sweepOnce()
          .catch((error: unknown) => log.error('sweep failed', { error }))
          .finally(() => {
            running = false;
          });
      }, config.EXPIRY_SWEEP_INTERVAL_MS);
      timer.unref();
    }

    if (streamArn) {
      // The table's stream, read as Lambda's event source mappings would: one poller per
      // consumer, each with its own place in the stream (as each mapping has in AWS).
      const { log } = await import('../../functions/log.js');
      const poll = (
        checkpoint: string,
        handle: Parameters<typeof startStreamPoller>[0]['handle'],
      ) =>
        startStreamPoller({
          endpoint: process.env.DYNAMODB_ENDPOINT ?? '',
          region: config.AWS_REGION,
          streamArn,
          intervalMs: config.STREAM_POLL_INTERVAL_MS,
          // A new table's stream is read from its start; an existing one's from now, or from
          // where the last run left off (the checkpoint in DATA_DIR).
          from: table === 'created' ? 'TRIM_HORIZON' : 'LATEST',
          checkpointFile: dataDir && join(dataDir, checkpoint),
          handle,
          log,
        });
      if (events) {
        // Webhook deliveries: the local worker takes the delivery queue's part, and resumes the
        // deliveries a previous run left unfinished.
        deliveries = await startDeliveryWorker(config, log);
        // Events: the log, the bus and the delivery queue.
        const consumer = await import('../../functions/jobs/stream-events.js');
        await consumer.bootstrapOnce();
        pollers.push(poll('stream-checkpoint.json', (event) => consumer.handler(event)));
      }
      if (config.ESTIMATE_ACCURACY) {
        const accuracy = await import('../../functions/jobs/estimate-accuracy.js');
        pollers.push(poll('accuracy-checkpoint.json', (event) => accuracy.handler(event)));
      }
    }

    const stack = {
      runtimeUrl: `http://${urlHost(host)}:${runtimePort}`,
      adminUrl: `http://${urlHost(host)}:${adminPort}`,
      dynamoEndpoint: process.env.DYNAMODB_ENDPOINT ?? '',
      deliveries,
      stop,
    };
    if (options.announce) {
      const where = dynamo
        ? inMemory
          ? 'embedded DynamoDB Local, in memory'
          : `embedded DynamoDB Local, data in ${dataDir}/`
        : `DynamoDB at ${stack.dynamoEndpoint} (DYNAMODB_ENDPOINT)`;
      console.log(`budget reservation service — table ${config.TABLE_NAME} (${table}) on ${where}`);
      if (!dynamo && inMemory) {
        console.log(
          '  in-memory ignored: DYNAMODB_ENDPOINT is set, so that DynamoDB keeps the data',
        );
      }
      if (!isLoopback(host)) {
        console.log(
          `  warning: HOST=${host} serves both servers beyond this machine; the admin key and the tenants' keys are all that guard them (use TLS in front)`,
        );
      }
      console.log(`  runtime server: ${stack.runtimeUrl}   (GET /actuator/health)`);
      console.log(`  admin server:   ${stack.adminUrl}   (GET /actuator/health)`);
      console.log(`  console:        ${stack.adminUrl}/console   (sign in with ADMIN_API_KEY)`);
      console.log(`  expiry sweeper: every ${config.EXPIRY_SWEEP_INTERVAL_MS} ms`);
      console.log(
        config.POWERTOOLS_METRICS_DISABLED
          ? '  logs: one JSON line per request; metrics off (POWERTOOLS_METRICS_DISABLED=false prints them as CloudWatch EMF)'
          : '  logs: one JSON line per request, and its metrics as CloudWatch EMF documents',
      );
      console.log(
        !events
          ? '  events: off (EVENTS_ENABLED=false)'
          : webhooks > 0
            ? `  events: kept ${config.EVENT_RETENTION_DAYS} days (GET /v1/admin/events); ${webhooks} WEBHOOK_URLS subscribed, signed (X-Cycles-Signature)`
            : `  events: kept ${config.EVENT_RETENTION_DAYS} days (GET /v1/admin/events); webhooks: POST /v1/admin/webhooks, or WEBHOOK_URLS`,
      );
      console.log(
        config.ESTIMATE_ACCURACY
          ? '  estimate accuracy: from the table stream (ESTIMATE_ACCURACY=false turns it off)'
          : '  estimate accuracy: off (ESTIMATE_ACCURACY=false)',
      );
      if (options.contention) {
        const { DEFAULT_SETTINGS } = await import('./contention.js');
        const s = { ...DEFAULT_SETTINGS, ...options.contention };
        console.log(
          `  contention emulated: holds ${s.hold.text}, cancel holds ${s.cancelHold.text}, ${s.writeUnitsPerSecond} WRU/s per item and index key, extra latency ${s.latency.text} (docs/contention-emulator.md)`,
        );
      }
      if (!config.ADMIN_API_KEY) {
        console.log('  ADMIN_API_KEY is not set: admin operations answer 401. Start with e.g.');
        console.log('    ADMIN_API_KEY=change-me npm start');
      }
      console.log(
        '  bootstrap: create a tenant, then an API key (X-Admin-API-Key), then budgets (X-Service-API-Key) — see README.md',
      );
    }
    return stack;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A random secret generated once and kept in the data directory (readable by its owner only). */
function keptSecret(
  dataDir: string,
  name = 'cursor-secret',
  encoding: 'base64url' | 'base64' = 'base64url',
): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString(encoding);
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/**
 * The local delivery worker, registered as the process's delivery queue; the deliveries a
 * previous run left unfinished are queued again (those due later, at their time).
 */
async function startDeliveryWorker(
  config: { readonly WEBHOOK_WORKERS: number; readonly WEBHOOK_WORKERS_PER_SUBSCRIPTION: number },
  log: import('../../functions/log.js').Logger,
): Promise<DeliveryWorker> {
  const { DeliveryWorker } = await import('./delivery-worker.js');
  const { useLocalQueue } = await import('../../functions/outbound/queue.js');
  const { attemptPorts } = await import('../../functions/outbound/sinks.js');
  const { attemptDelivery } = await import('../../functions/use-cases/deliveries.js');
  const { queryUnfinishedDeliveries } = await import('../../functions/store/deliveries.js');
  const { serverNow } = await import('../../functions/clock.js');
  const worker = new DeliveryWorker({
    workers: config.WEBHOOK_WORKERS,
    perSubscription: config.WEBHOOK_WORKERS_PER_SUBSCRIPTION,
    attempt: (ref) => attemptDelivery(ref, attemptPorts(serverNow)),
    log,
  });
  useLocalQueue(worker);
  const now = serverNow();
  for (const d of await queryUnfinishedDeliveries(Number.MAX_SAFE_INTEGER, 1_000)) {
    await worker.send([d], Math.max(0, (d.nextRetryAtMs ?? now) - now));
  }
  return worker;
}

async function listenOrExplain(
  server: HttpServer,
  port: number,
  host: string,
  variable: string,
): Promise<number> {
  const { listen } = await import('./server.js');
  try {
    return await listen(server, port, host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new StartupError(
        `port ${port} is already in use; stop the other process or set ${variable}`,
      );
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new StartupError(
        `HOST=${host} is no address of this machine (${code}); use 127.0.0.1, 0.0.0.0 or one of its own addresses`,
      );
    }
    throw error;
  }
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const isLoopback = (host: string) => LOOPBACK.test(host);

/** How a client reaches the servers: the wildcard addresses through loopback, IPv6 in brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** A DYNAMODB_ENDPOINT that does not answer, in one line that says what to do. */
function unreachable(endpoint: string, error: unknown): unknown {
  const e = error as NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] };
  const code = e.code ?? e.errors?.[0]?.code;
  const why: Record<string, string> = {
    ECONNREFUSED: 'nothing listens there (connection refused)',
    ENOTFOUND: 'no such host',
    EAI_AGAIN: 'its host name could not be resolved',
    ETIMEDOUT: 'it did not answer in time',
    ECONNRESET: 'it closed the connection',
    EHOSTUNREACH: 'its host cannot be reached',
  };
  const reason = code && why[code];
  if (!reason) return error;
  return new StartupError(
    `cannot reach DynamoDB at ${endpoint} (DYNAMODB_ENDPOINT): ${reason}. Start it there, correct the URL, or unset DYNAMODB_ENDPOINT to run the embedded DynamoDB Local.`,
  );
}
