import { config } from './config/settings.js';

type Level = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<Level | 'silent', number> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
  silent: 99,
};

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return { name: error.name, message: error.message, stack: error.stack };
}

function write(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  if (RANK[level] < RANK[config.LOG_LEVEL]) return;
  const line: Record<string, unknown> = {
    level,
    time: new Date().toISOString(),
    message,
    ...fields,
  };
  if ('error' in line) line.error = serializeError(line.error);
  const text = JSON.stringify(line);
  if (level === 'error' || level === 'warn') process.stderr.write(`${text}\n`);
  else process.stdout.write(`${text}\n`);
}

/** Structured JSON, one object per line. Callers never pass secrets: keys are logged by key_id. */
export const log: Logger = {
  debug: (m, f) => write('debug', m, f),
  info: (m, f) => write('info', m, f),
  warn: (m, f) => write('warn', m, f),
  error: (m, f) => write('error', m, f),
};
