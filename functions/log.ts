import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import { config } from './config/settings.js';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The Powertools logger, the same in Lambda and locally: one JSON object per line (level,
 * message, timestamp, service, X-Ray trace id, then the fields), errors serialized with name,
 * message and stack; warn and error on stderr. LOG_LEVEL `silent` prints nothing. The Lambda
 * context is never attached to it: the local server runs many requests at once, so request
 * fields are passed with each line instead (http/handler.ts).
 */
export const logger = new PowertoolsLogger({
  serviceName: config.POWERTOOLS_SERVICE_NAME,
  logLevel: config.LOG_LEVEL,
});

/** Structured JSON, one object per line. Callers never pass secrets: keys are logged by key_id. */
export const log: Logger = {
  debug: (m, f) => logger.debug(m, f ?? {}),
  info: (m, f) => logger.info(m, f ?? {}),
  warn: (m, f) => logger.warn(m, f ?? {}),
  error: (m, f) => logger.error(m, f ?? {}),
};
