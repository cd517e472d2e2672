import { homedir } from 'node:os';
import { CommanderError } from 'commander';
import { ApiError } from '../client/index.js';
import pkg from '../package.json' with { type: 'json' };
import { commands } from './commands/index.js';
import { type Config, resolveConfig } from './config.js';
import { Context, type GlobalOptions, type Io } from './context.js';
import { CliError, EXIT, type ExitCode, exitCodeOf, isUnreachable } from './exit-codes.js';
import { buildProgram } from './program.js';

/** Exit code of an interrupted command (128 + SIGINT), but `watch`, whose Ctrl-C is its end. */
export const INTERRUPTED = 130;

/**
 * Runs one command line to its exit code. The process entry (bin.mjs → main()) and the tests
 * both come through here.
 */
export async function run(argv: readonly string[], io: Io): Promise<ExitCode | typeof INTERRUPTED> {
  let exitCode: ExitCode = EXIT.OK;
  let context: Context | undefined;
  let globals: GlobalOptions | undefined;
  const program = buildProgram(
    commands,
    async (spec, args, options, commandOptions) => {
      globals = options;
      const config: Config = await resolveConfig({ flags: options, env: io.env, home: io.home });
      context = new Context(config, options, io);
      for (const warning of config.warnings) context.error(`warning: ${warning}`);
      const output = await spec.run(context, args, commandOptions);
      if (output) {
        context.emit(output);
        exitCode = output.exitCode ?? EXIT.OK;
      }
    },
    pkg.version,
    io,
  );
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return exitCodeOf(error); // commander printed it
    if (io.signal.aborted && !(error instanceof ApiError)) return INTERRUPTED;
    const say = (line: string) => (context ? context.error(line) : io.stderr(`${line}\n`));
    if (globals?.json && error instanceof ApiError) {
      say(JSON.stringify(errorBody(error)));
    } else {
      for (const line of describe(error)) say(line);
    }
    return exitCodeOf(error);
  }
}

/** SPEC's error body, with the HTTP status: what --json prints on stderr for a refusal. */
function errorBody(error: ApiError) {
  return {
    error: error.code,
    message: error.message,
    ...(error.requestId && { request_id: error.requestId }),
    ...(error.details && { details: error.details }),
    status: error.status,
    ...(error.retryAfter !== undefined && { retry_after: error.retryAfter }),
  };
}

function describe(error: unknown): string[] {
  if (error instanceof ApiError) {
    return [
      `error: ${error.code} (HTTP ${error.status}): ${error.message}`,
      ...(error.details ? [`  details: ${JSON.stringify(error.details)}`] : []),
      ...(error.retryAfter !== undefined ? [`  retry after ${error.retryAfter} s`] : []),
      ...(error.requestId ? [`  request id: ${error.requestId}`] : []),
    ];
  }
  if (error instanceof CliError) return [`error: ${error.message}`];
  if (isUnreachable(error)) {
    const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
    return [
      `error: the server did not answer (${cause?.code ?? cause?.message ?? (error as Error).message}); is it running, and is the URL right? (see: config show)`,
    ];
  }
  return [`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`];
}

/** The process: real stdio, environment and Ctrl-C. */
export async function main(): Promise<void> {
  const interrupt = new AbortController();
  process.once('SIGINT', () => interrupt.abort());
  process.once('SIGTERM', () => interrupt.abort());
  const io: Io = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    home: homedir(),
    stdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    signal: interrupt.signal,
  };
  process.exitCode = await run(process.argv.slice(2), io);
}
