import { CommanderError } from 'commander';
import { ApiError } from '../client/index.js';

/**
 * The exit codes scripts can rely on (README § Operate it from a terminal). One per class of
 * outcome, so a script can tell "fix the command" from "retry later" without parsing text.
 */
export const EXIT = {
  OK: 0,
  /** Anything else: a bug, an answer that is not the API's. */
  OTHER: 1,
  /** A wrong command line or input file, or a request the server refused as invalid (400). */
  USAGE: 2,
  /** What the command names does not exist (404). */
  NOT_FOUND: 3,
  /** The server refused the change: a conflict, a limit, a frozen budget, a finalized or expired reservation (409, 410). */
  REFUSED: 4,
  /** No key configured, or the key was refused or lacks the permission (401, 403). */
  AUTH: 5,
  /** Worth retrying later: the server is unreachable, busy (503 with Retry-After), throttling (429) or failed (5xx). */
  UNAVAILABLE: 6,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error of the command line itself, with the exit code it stands for. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.USAGE,
  ) {
    super(message);
  }
}

export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 400) return EXIT.USAGE;
  if (status === 401 || status === 403) return EXIT.AUTH;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 409 || status === 410) return EXIT.REFUSED;
  if (status === 429 || status >= 500) return EXIT.UNAVAILABLE;
  return EXIT.OTHER;
}

export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof ApiError) return exitCodeOfStatus(error.status);
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  if (isUnreachable(error)) return EXIT.UNAVAILABLE;
  return EXIT.OTHER;
}

/** fetch's own failures: refused or reset connections, DNS, and our per-request timeout. */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return true;
  return error instanceof TypeError && error.message === 'fetch failed';
}
