import { InvalidArgumentError } from 'commander';
import type { operations as AdminOperations } from '../client/generated/admin.js';
import type { operations as RuntimeOperations } from '../client/generated/runtime.js';
import { type Page, pages } from '../client/index.js';
import type { Context } from './context.js';
import type { Output } from './output.js';

/**
 * A command, declared: its words, help, arguments, options, examples, the API operations it
 * calls and what it does. cli/program.ts turns the list in cli/commands/index.ts into the
 * command-line tool; test/integration/cli.test.ts checks every operation of the admin document
 * has a command. Adding an operation's command is adding one of these (docs/cli.md).
 */
export interface CommandSpec<O = Record<string, never>> {
  /** Its words: `budgets fund`, or a single word for a top-level command. */
  readonly name: string;
  readonly summary: string;
  /** More help, after the summary. */
  readonly details?: string;
  /** Other names of the last word (`force-release` for `reservations release`). */
  readonly aliases?: readonly string[];
  readonly arguments?: readonly ArgumentSpec[];
  readonly options?: readonly OptionSpec[];
  /** Shown under --help, each a command line that works against `npm start`. */
  readonly examples: readonly string[];
  /** The operations it calls, as `<server>:<operationId>` of the OpenAPI documents. */
  readonly operations: readonly OperationRef[];
  readonly run: (ctx: Context, args: readonly string[], options: O) => Promise<Output | undefined>;
}

export type OperationRef =
  | `admin:${keyof AdminOperations & string}`
  | `runtime:${keyof RuntimeOperations & string}`;

export interface ArgumentSpec {
  readonly name: string;
  readonly description: string;
  readonly optional?: boolean;
}

export interface OptionSpec {
  /** Commander's flags: `--unit <unit>`, `--all`, `--permission <permission...>`. */
  readonly flags: string;
  readonly description: string;
  readonly choices?: readonly string[];
  readonly default?: string | boolean | number;
  readonly required?: boolean;
  readonly parse?: (value: string, previous: unknown) => unknown;
}

// The command list holds commands of different option types; each is checked where declared.
// biome-ignore lint/suspicious/noExplicitAny: the options' type is erased in the registry only
export type AnyCommand = CommandSpec<any>;

export const defineCommand = <O>(spec: CommandSpec<O>): CommandSpec<O> => spec;

/** A whole number option, at least `min`. */
export const integer =
  (min = 0) =>
  (value: string): number => {
    if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
      throw new InvalidArgumentError(`a whole number of at least ${min} is needed, not "${value}"`);
    }
    return Number(value);
  };

/** A comma-separated list option (`--thresholds 50,80,100`); `none` or empty is []. */
export const list = (value: string): string[] =>
  value === 'none' || value === '' ? [] : value.split(',').map((v) => v.trim());

/** --limit, --cursor and --all, for every listing. */
export const PAGE_OPTIONS: readonly OptionSpec[] = [
  { flags: '--limit <n>', description: 'items per page (1-100)', parse: integer(1) },
  { flags: '--cursor <cursor>', description: 'the page after a previous answer’s next_cursor' },
  { flags: '--all', description: 'every page (with --json: one body holding every item)' },
];
export interface PageOptions {
  readonly limit?: number;
  readonly cursor?: string;
  readonly all?: boolean;
}

/**
 * One page of a listing (the API's body), or with --all every page merged into one body of the
 * same shape: `{ <items>: [...every item], has_more: false }`.
 */
export async function listing<K extends string, P extends Page & Record<K, readonly unknown[]>>(
  options: PageOptions,
  key: K,
  fetchPage: (query: { cursor?: string; limit?: number }) => Promise<P>,
): Promise<P> {
  if (!options.all) {
    return fetchPage({
      ...(options.cursor !== undefined && { cursor: options.cursor }),
      ...(options.limit !== undefined && { limit: options.limit }),
    });
  }
  const all: unknown[] = [];
  const limit = options.limit ?? 100;
  for await (const page of pages(
    (cursor) => fetchPage({ ...(cursor && { cursor }), limit }),
    options.cursor,
  )) {
    all.push(...page[key]);
  }
  return { [key]: all, has_more: false } as unknown as P;
}
