import { METRICS_NAMESPACE, SERVICE_NAME } from '../telemetry/catalog.js';
import {
  flag,
  int,
  oneOf,
  optionalText,
  optionalUrl,
  type Setting,
  text,
  urlList,
} from './parse.js';

/**
 * Every setting the service reads, parsed once at cold start (README § Configuration). Plain
 * parsers rather than zod: every function loads this module, and zod alone weighs more than the
 * 60 kB a health check may (docs/decisions.md § Lean functions).
 */
/**
 * Outside Lambda the table is DynamoDB Local, which runs one transaction at a time: on a busy
 * laptop or CI machine a call queues for seconds behind others, which real DynamoDB never does,
 * so the local default deadline is the largest (a stalled store is tested with its own).
 */
const IN_LAMBDA = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined;

const settings = {
  ADMIN_API_KEY: text(''),
  /** The previous admin key, still accepted during a rotation window (README § Rotation). */
  ADMIN_API_KEY_PREVIOUS: text(''),
  ADMIN_API_KEY_SECRET_ID: text(''),
  /** How long a container reuses the admin key read from Secrets Manager (rotation delay). */
  ADMIN_API_KEY_CACHE_TTL_MS: int(300_000, 0, 3_600_000),
  TABLE_NAME: text('budget-reservations', { min: 3, max: 255 }),
  DYNAMODB_ENDPOINT: optionalUrl(),
  /**
   * One DynamoDB attempt's deadline, connection included, and the attempts per call: a stalled
   * call answers 503 with Retry-After well inside the function's timeout (docs/deploy.md).
   */
  DYNAMODB_ATTEMPT_TIMEOUT_MS: int(IN_LAMBDA ? 1_000 : 10_000, 50, 10_000),
  /**
   * Opening a connection: 0.5 s in Lambda; locally 5 s, where a connection to DynamoDB Local on
   * loopback is slow only when the machine is starved, and a burst opens a hundred at once.
   */
  DYNAMODB_CONNECT_TIMEOUT_MS: int(IN_LAMBDA ? 500 : 5_000, 50, 10_000),
  DYNAMODB_MAX_ATTEMPTS: int(3, 1, 5),
  /**
   * How long a request may go on starting DynamoDB calls of its retry loops (a retry after a
   * conflict, a read after a stale write); past it, it answers 429 with nothing written, and a
   * call already sent is always waited for (functions/deadline.ts). 0: the function's remaining
   * time less one call's worst case (in a 10 s function: 10 − 3 × 1 − 0.5 = 6.5 s). Locally 20 s: nothing
   * times a local function out, and DynamoDB Local queues a burst's calls for seconds.
   */
  REQUEST_DEADLINE_MS: int(IN_LAMBDA ? 0 : 20_000, 0, 900_000),
  AWS_REGION: text('us-east-1'),
  LOG_LEVEL: oneOf(['debug', 'info', 'warn', 'error', 'silent'], 'info'),
  /** Powertools' own variables (it reads them too): `service` of logs and metrics. */
  POWERTOOLS_SERVICE_NAME: text(SERVICE_NAME, { min: 1 }),
  POWERTOOLS_METRICS_NAMESPACE: text(METRICS_NAMESPACE, { min: 1 }),
  /** No EMF documents on stdout: the test stacks set it, a deployment never does. */
  POWERTOOLS_METRICS_DISABLED: flag(false),
  /** Business metrics also per tenant: one more metric per tenant, each billed (docs/deploy.md). */
  METRICS_TENANT_DIMENSION: flag(false),
  /** Local servers: the address they bind (loopback unless asked; README § Configuration). */
  HOST: text('127.0.0.1', { min: 1 }),
  RUNTIME_PORT: int(7878, 0, 65_535),
  ADMIN_PORT: int(7979, 0, 65_535),
  /**
   * Local servers: requests handled at once per server at most, as a function's concurrency caps
   * them in AWS (0: no cap, no admission at all). Below it the number adapts to latency, and
   * excess work waits a moment (settling first) or is answered 429 at once
   * (infra/local/admission.ts): DynamoDB Local runs one call at a time, so without it a flood
   * queues there until every request's deadline passes.
   */
  LOCAL_MAX_IN_FLIGHT: int(256, 0, 100_000),
  /** Local servers: requests that may wait for their turn (0: none; past the limit, 429 at once). */
  LOCAL_ADMISSION_QUEUE: int(1_000, 0, 100_000),
  /** Local servers: an answer later than this shrinks the requests handled at once. */
  LOCAL_ADMISSION_TARGET_MS: int(500, 10, 60_000),
  /**
   * Local servers: requests one API key may have in flight while another key has work (0: no
   * such share, the default). One process stands for every function here; this keeps one key's
   * burst from queuing in front of every other tenant's requests (infra/local/fair-share.ts).
   */
  LOCAL_FAIR_SHARE_PER_KEY: int(0, 0, 100_000),
  /**
   * Local servers: emulate the edge's WAF rules in front of them (infra/local/waf.ts; off by
   * default: every local client shares one source address). On, with the edge's defaults: more
   * than LOCAL_WAF_SOURCE_RATE_PER_MINUTE requests a minute from one address, or
   * LOCAL_WAF_KEY_RATE_PER_MINUTE with one API key, are answered 429; a runtime /v1/ call
   * without a key of our shape, 401 — before any function runs.
   */
  LOCAL_WAF: flag(false),
  LOCAL_WAF_SOURCE_RATE_PER_MINUTE: int(6_000, 10, 2_000_000_000),
  LOCAL_WAF_KEY_RATE_PER_MINUTE: int(3_000, 10, 2_000_000_000),
  EXPIRY_SWEEP_INTERVAL_MS: int(5_000, 100, 3_600_000),
  DATA_DIR: text('.data'),
  DYNAMODB_IN_MEMORY: flag(false),
  /** HMAC key of pagination cursors (functions/config/secrets.ts: where it comes from). */
  CURSOR_SECRET: text(''),
  CURSOR_SECRET_ID: text(''),
  MAX_BODY_BYTES: int(65_536, 1_024, 1_048_576),
  API_KEY_CACHE_TTL_MS: int(5_000, 0, 5_000),
  /**
   * The edge's origin-verify header (docs/decisions.md § Edge): in AWS the secret CloudFront
   * adds to every request it forwards (set by the CDK stack when the edge is on); locally a
   * plain value, for tests. Neither set: no check (the edge is off, or a local run).
   */
  ORIGIN_VERIFY_SECRET_ID: text(''),
  ORIGIN_VERIFY_SECRET: text(''),
  // Events and webhooks (docs/decisions.md § Events and webhooks).
  /** Local runner: derive and store events (reads the table's stream). Always on in AWS. */
  EVENTS_ENABLED: flag(true),
  /** How long events and webhook deliveries are kept (DynamoDB TTL). */
  EVENT_RETENTION_DAYS: int(30, 1, 3_650),
  /** The EventBridge bus the stream consumer puts every event on (set by the CDK stack). */
  EVENT_BUS_NAME: text(''),
  /**
   * The environment bootstrap: comma-separated URLs that get an operator (`__system__`)
   * subscription to every event at start, signed with WEBHOOK_SECRET (created once, idempotent).
   */
  WEBHOOK_URLS: urlList(),
  WEBHOOK_SECRET: text(''),
  WEBHOOK_SECRET_ID: text(''),
  /** Per delivery attempt, connection included. */
  WEBHOOK_TIMEOUT_MS: int(5_000, 100, 60_000),
  /** How long the stream consumer reuses a tenant's subscription list (webhook changes clear it). */
  WEBHOOK_CACHE_TTL_MS: int(5_000, 0, 60_000),
  /** Local targets (loopback, http) allowed until an operator PUTs a security config: local runs. */
  WEBHOOK_LOCAL_TARGETS: flag(false),
  /** AWS: the delivery queue (SQS) the consumer and replays send to. */
  WEBHOOK_QUEUE_URL: text(''),
  /** AWS: the delivery function a /test probe invokes (the one reader of signing secrets). */
  WEBHOOK_DELIVERY_FUNCTION: text(''),
  /** AWS: the KMS key that seals signing secrets and custom headers. */
  WEBHOOK_KMS_KEY_ID: text(''),
  /** Local: the AES-256-GCM key (base64) that seals them; the local runner keeps one in DATA_DIR. */
  WEBHOOK_SEALING_KEY: text(''),
  /** Local worker pool: deliveries in flight at once, and per subscription. */
  WEBHOOK_WORKERS: int(16, 1, 256),
  WEBHOOK_WORKERS_PER_SUBSCRIPTION: int(2, 1, 64),
  /**
   * Local runner: estimate accuracy is aggregated from the table's stream (on by default; off,
   * and without webhooks, the table has no stream: docs/decisions.md § Estimate accuracy).
   */
  ESTIMATE_ACCURACY: flag(true),
  /** Local runner: how often the table's stream is read. */
  STREAM_POLL_INTERVAL_MS: int(250, 10, 60_000),
  /** Refused reservations are recorded for reservation.denied and the operator's overview. */
  REFUSAL_EVENTS: flag(true),
  /**
   * How a new tenant's unbudgeted scopes count when its creation names none (docs/decisions.md §
   * Unbudgeted scopes): SPEC's ZERO_ALLOCATION, or SKIP for a deployment moving from the reference.
   */
  UNBUDGETED_SCOPES_DEFAULT: oneOf(['ZERO_ALLOCATION', 'SKIP'], 'ZERO_ALLOCATION'),
  /** At most one refusal record per tenant, scope, unit and code per this interval (0: all). */
  REFUSAL_EVENT_INTERVAL_MS: int(1_000, 0, 3_600_000),
  // Budgets that shard themselves (docs/decisions.md § Escrow shards).
  /** The most escrow shards contention gives a budget by itself (1: never; an operator's PATCH may go to 64). */
  AUTO_SHARDS_MAX: int(16, 1, 64),
  /**
   * A budget grows when, in one process within the window, at least this many of the
   * transactions on its items met a conflict, and at least AUTO_SHARDS_CONFLICT_PERCENT of them.
   */
  AUTO_SHARDS_CONFLICTS: int(20, 1, 100_000),
  AUTO_SHARDS_CONFLICT_PERCENT: int(10, 1, 100),
  AUTO_SHARDS_WINDOW_MS: int(10_000, 1_000, 600_000),
  /** The operator console's built files (default: beside the bundle in AWS, console/dist locally). */
  CONSOLE_DIR: optionalText(),
} satisfies Record<string, Setting<unknown>>;

export type Config = { readonly [K in keyof typeof settings]: ReturnType<(typeof settings)[K]> };

function load(): Config {
  const values: Record<string, unknown> = {};
  for (const [name, parse] of Object.entries(settings)) {
    // An empty variable means "not set", as in a shell `VAR= cmd`.
    const raw = process.env[name];
    values[name] = parse(raw === '' ? undefined : raw, name);
  }
  const config = values as Config;
  if (config.WEBHOOK_URLS.length > 0 && !config.WEBHOOK_SECRET && !config.WEBHOOK_SECRET_ID) {
    throw new Error('invalid configuration: WEBHOOK_URLS needs WEBHOOK_SECRET to sign deliveries');
  }
  return config;
}

export const config: Config = load();
