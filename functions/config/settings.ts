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
  DYNAMODB_CONNECT_TIMEOUT_MS: int(IN_LAMBDA ? 500 : 5_000, 50, 10_000),
  DYNAMODB_MAX_ATTEMPTS: int(3, 1, 5),
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
  EXPIRY_SWEEP_INTERVAL_MS: int(5_000, 100, 3_600_000),
  DATA_DIR: text('.data'),
  DYNAMODB_IN_MEMORY: flag(false),
  /** HMAC key of pagination cursors (functions/config/secrets.ts: where it comes from). */
  CURSOR_SECRET: text(''),
  CURSOR_SECRET_ID: text(''),
  MAX_BODY_BYTES: int(65_536, 1_024, 1_048_576),
  API_KEY_CACHE_TTL_MS: int(5_000, 0, 5_000),
  // Budget events (docs/decisions.md § Budget events).
  /** The EventBridge bus the stream consumer puts events on (set by the CDK stack). */
  EVENT_BUS_NAME: text(''),
  /** Comma-separated webhook URLs every event is POSTed to, signed with WEBHOOK_SECRET. */
  WEBHOOK_URLS: urlList(),
  WEBHOOK_SECRET: text(''),
  WEBHOOK_SECRET_ID: text(''),
  WEBHOOK_MAX_RETRIES: int(5, 0, 10),
  WEBHOOK_RETRY_INITIAL_MS: int(1_000, 1, 60_000),
  WEBHOOK_RETRY_MAX_MS: int(60_000, 1, 3_600_000),
  WEBHOOK_TIMEOUT_MS: int(5_000, 100, 60_000),
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
