import * as z from 'zod';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../telemetry/catalog.js';

const Port = z.coerce.number().int().min(0).max(65_535);
const Flag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('')
  .transform((v) => v === 'true' || v === '1');

/** Every setting the service reads, parsed once at cold start (README § Configuration). */
const Config = z.object({
  ADMIN_API_KEY: z.string().default(''),
  ADMIN_API_KEY_SECRET_ID: z.string().default(''),
  /** How long a container reuses the admin key read from Secrets Manager (rotation delay). */
  ADMIN_API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
  TABLE_NAME: z.string().min(3).max(255).default('budget-reservations'),
  DYNAMODB_ENDPOINT: z.url().optional(),
  AWS_REGION: z.string().default('us-east-1'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** Powertools' own variables (it reads them too): `service` of logs, metrics and traces. */
  POWERTOOLS_SERVICE_NAME: z.string().min(1).default(SERVICE_NAME),
  POWERTOOLS_METRICS_NAMESPACE: z.string().min(1).default(METRICS_NAMESPACE),
  /** No EMF documents on stdout: the test stacks set it, a deployment never does. */
  POWERTOOLS_METRICS_DISABLED: Flag,
  /** X-Ray tracing: set by the CDK app with active tracing; nothing is traced outside Lambda. */
  POWERTOOLS_TRACE_ENABLED: Flag,
  /** Business metrics also per tenant: one more metric per tenant, each billed (docs/deploy.md). */
  METRICS_TENANT_DIMENSION: Flag,
  /** Local servers: the address they bind (loopback unless asked; README § Configuration). */
  HOST: z.string().min(1).default('127.0.0.1'),
  RUNTIME_PORT: Port.default(7878),
  ADMIN_PORT: Port.default(7979),
  EXPIRY_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  DATA_DIR: z.string().default('.data'),
  DYNAMODB_IN_MEMORY: Flag,
  /** HMAC key of pagination cursors (functions/config/secrets.ts: where it comes from). */
  CURSOR_SECRET: z.string().default(''),
  CURSOR_SECRET_ID: z.string().default(''),
  MAX_BODY_BYTES: z.coerce.number().int().min(1_024).max(1_048_576).default(65_536),
  API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(5_000).default(5_000),
  // Budget events (docs/decisions.md § Budget events).
  /** The EventBridge bus the stream consumer puts events on (set by the CDK stack). */
  EVENT_BUS_NAME: z.string().default(''),
  /** Comma-separated webhook URLs every event is POSTed to, signed with WEBHOOK_SECRET. */
  WEBHOOK_URLS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((u) => u.trim())
        .filter((u) => u !== ''),
    )
    .pipe(z.array(z.url({ protocol: /^https?$/ }))),
  WEBHOOK_SECRET: z.string().default(''),
  WEBHOOK_SECRET_ID: z.string().default(''),
  WEBHOOK_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(5),
  WEBHOOK_RETRY_INITIAL_MS: z.coerce.number().int().min(1).max(60_000).default(1_000),
  WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().min(1).max(3_600_000).default(60_000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** Local runner: how often the table's stream is read. */
  STREAM_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  /** Refused reservations are recorded for reservation.denied (the local runner: with webhooks). */
  REFUSAL_EVENTS: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /** At most one refusal record per tenant, scope, unit and code per this interval (0: all). */
  REFUSAL_EVENT_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(1_000),
  /** The operator console's built files (default: beside the bundle in AWS, console/dist locally). */
  CONSOLE_DIR: z.string().optional(),
});
export type Config = z.infer<typeof Config>;

function load(): Config {
  // An empty variable means "not set", as in a shell `VAR= cmd`.
  const set = Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== ''));
  const parsed = Config.safeParse(set);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid configuration: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  if (
    parsed.data.WEBHOOK_URLS.length > 0 &&
    !parsed.data.WEBHOOK_SECRET &&
    !parsed.data.WEBHOOK_SECRET_ID
  ) {
    throw new Error('invalid configuration: WEBHOOK_URLS needs WEBHOOK_SECRET to sign deliveries');
  }
  return parsed.data;
}

export const config: Config = load();
