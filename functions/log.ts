import { config } from './config/settings.js';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

type Level = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<Level | 'silent', number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

/**
 * Lambda's own log level (the function's ApplicationLogLevel, under the JSON log format) wins
 * when it is stricter, so an operator can quiet a function without a deploy of ours.
 */
function threshold(): number {
  const lambda = process.env.AWS_LAMBDA_LOG_LEVEL?.toLowerCase();
  const own = RANK[config.LOG_LEVEL];
  return lambda && lambda in RANK ? Math.max(own, RANK[lambda as Level]) : own;
}

/** An Error as data (JSON.stringify writes `{}` for one): name, message, stack, and its cause. */
function plain(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) return value;
  const cause = depth < 3 && value.cause !== undefined ? plain(value.cause, depth + 1) : undefined;
  return {
    name: value.name,
    message: value.message,
    stack: value.stack,
    ...(cause !== undefined && { cause }),
  };
}

/**
 * One JSON object per line: level, message, timestamp, service, sampling_rate and, in Lambda,
 * xray_trace_id (the keys Powertools Logger wrote, so Logs Insights queries and alarms on them
 * keep working), then the fields; Errors in the fields serialized with name, message and stack;
 * warn and error on stderr. LOG_LEVEL `silent` prints nothing. Hand-written rather than
 * Powertools Logger: that was 13 kB of every bundle (about 9 % of a write function) for a
 * JSON line (docs/decisions.md § Cloud room). Nothing about a request lives here: the local
 * server runs many requests at once, so request fields are passed with each line
 * (http/serve.ts).
 */
function write(level: Level, message: string, fields: Record<string, unknown> | undefined): void {
  if (RANK[level] < threshold()) return;
  const trace = /Root=([^;]+)/.exec(process.env._X_AMZN_TRACE_ID ?? '')?.[1];
  const line: Record<string, unknown> = {
    level: level.toUpperCase(),
    message,
    timestamp: new Date().toISOString(),
    service: config.POWERTOOLS_SERVICE_NAME,
    sampling_rate: 0,
    ...(trace && { xray_trace_id: trace }),
  };
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (value !== undefined) line[key] = plain(value);
  }
  const text = `${JSON.stringify(line, (_key, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`;
  (RANK[level] >= RANK.warn ? process.stderr : process.stdout).write(text);
}

/** Structured JSON, one object per line. Callers never pass secrets: keys are logged by key_id. */
export const log: Logger = {
  debug: (m, f) => write('debug', m, f),
  info: (m, f) => write('info', m, f),
  warn: (m, f) => write('warn', m, f),
  error: (m, f) => write('error', m, f),
};
