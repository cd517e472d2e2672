import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import * as z from 'zod';
import {
  ApiError,
  collect,
  FUND_OPERATIONS,
  items,
  PERIOD_KINDS,
  PERMISSIONS,
  UNITS,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import type { Context } from '../context.js';
import { CliError, EXIT, type ExitCode, exitCodeOf } from '../exit-codes.js';
import { type Output, table } from '../output.js';
import { defineCommand } from '../spec.js';
import { fund } from './budgets.js';

/**
 * Bulk input: a CSV file with a header row, or JSON lines (one object per line; chosen by a
 * .jsonl/.ndjson name or a first character `{`), or `-` for standard input. Every row is checked
 * before any is sent: a file with a bad row changes nothing. Then each row is one request, a
 * few at a time, with its own result; the exit code is not 0 when any row failed.
 *
 * Retrying the same file is safe. Funding: each row's idempotency key is its `idempotency_key`
 * column, or one derived from the file's content and the row's number, so the same file sends
 * the same keys (an edited file sends new ones: fix failed rows in a file of their own, or give
 * the column). Tenants and budgets: one that exists is reported as `exists`. Keys, which the API
 * does not deduplicate: a row whose tenant already has an ACTIVE key of that name is `exists`.
 */
const CONCURRENCY = 4;

interface Row {
  /** 1 for the first row after the header (or the first line of JSON lines). */
  readonly number: number;
  readonly fields: Record<string, unknown>;
}

export async function readRows(
  ctx: Context,
  file: string,
): Promise<{ content: string; rows: Row[] }> {
  let content: string;
  try {
    content = file === '-' ? await ctx.io.stdin() : await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const jsonLines = /\.(jsonl|ndjson)$/i.test(file) || content.trimStart().startsWith('{');
  const records: Record<string, unknown>[] = jsonLines
    ? content
        .split('\n')
        .map((line, i) => [line.trim(), i + 1] as const)
        .filter(([line]) => line !== '')
        .map(([line, lineNumber]) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new CliError(`${file}, line ${lineNumber}: not JSON`);
          }
        })
    : csvRecords(content, file);
  // An empty CSV cell is a field not given.
  const rows = records.map((fields, i) => ({
    number: i + 1,
    fields: Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== '' && v !== null)),
  }));
  if (rows.length === 0) throw new CliError(`${file} has no rows`);
  return { content, rows };
}

function csvRecords(content: string, file: string): Record<string, unknown>[] {
  try {
    return parse(content, { columns: true, skip_empty_lines: true, trim: true, bom: true });
  } catch (error) {
    throw new CliError(`${file} is not CSV: ${(error as Error).message}`);
  }
}

/** The same file, the same row: the same key. */
export const derivedKey = (content: string, row: number): string =>
  `bulk-${createHash('sha256').update(content).digest('hex').slice(0, 24)}-${row}`;

type RowStatus = 'ok' | 'exists' | 'failed';
interface RowResult {
  readonly row: number;
  readonly status: RowStatus;
  /** What the row names, for people. */
  readonly target: string;
  /** The API's body of a success. */
  readonly result?: unknown;
  /** SPEC's error body of a failure (or the CLI's message). */
  readonly error?: { error: string; message: string; request_id?: string; status?: number };
  /** For people: what changed, or why not. */
  readonly detail: string;
}

/** Checks every row against `schema` first; then runs `apply` on each, a few at a time. */
async function runBulk<T>(
  ctx: Context,
  file: string,
  schema: z.ZodType<T>,
  target: (row: T) => string,
  apply: (
    row: T,
    meta: { number: number; content: string },
  ) => Promise<Omit<RowResult, 'row' | 'target' | 'status'> & { status?: RowStatus }>,
): Promise<Output> {
  const { content, rows } = await readRows(ctx, file);
  const parsed = rows.map((row) => ({ row, parsed: schema.safeParse(row.fields) }));
  const invalid = parsed.filter((p) => !p.parsed.success);
  if (invalid.length > 0) {
    throw new CliError(
      [
        `${file}: ${invalid.length} of ${rows.length} rows are not valid; nothing was sent:`,
        ...invalid.map(
          (p) =>
            `  row ${p.row.number}: ${p.parsed.error ? z.prettifyError(p.parsed.error).replaceAll('\n', '; ') : ''}`,
        ),
      ].join('\n'),
    );
  }
  const results: RowResult[] = new Array(rows.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < parsed.length; i = next++) {
      const { row, parsed: p } = parsed[i] as (typeof parsed)[number];
      const data = p.data as T;
      try {
        const done = await apply(data, { number: row.number, content });
        results[i] = { row: row.number, target: target(data), status: 'ok', ...done };
      } catch (error) {
        results[i] = failed(row.number, target(data), error);
      }
      const r = results[i] as RowResult;
      if (!ctx.options.json) ctx.error(`row ${r.row}: ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rows.length) }, worker));
  const failures = results.filter((r) => r.status === 'failed');
  const codes = new Set(failures.map((r) => r.error && exitCodeOfBody(r.error)));
  const exitCode: ExitCode =
    failures.length === 0 ? EXIT.OK : codes.size === 1 ? ([...codes][0] ?? EXIT.OTHER) : EXIT.OTHER;
  const counts = (s: RowStatus) => results.filter((r) => r.status === s).length;
  return {
    json: {
      results: results.map(({ detail: _, ...r }) => r),
      ok: counts('ok'),
      exists: counts('exists'),
      failed: failures.length,
    },
    human: [
      ...table(results, [
        ['ROW', (r) => r.row],
        ['STATUS', (r) => r.status],
        ['TARGET', (r) => r.target],
        ['DETAIL', (r) => r.detail],
      ]),
      '',
      `${counts('ok')} done, ${counts('exists')} already there, ${failures.length} failed.${failures.length > 0 ? ' Run the same file again to retry the failed rows safely.' : ''}`,
    ],
    exitCode,
  };
}

function failed(row: number, target: string, error: unknown): RowResult {
  if (error instanceof ApiError) {
    return {
      row,
      target,
      status: 'failed',
      error: {
        error: error.code,
        message: error.message,
        status: error.status,
        ...(error.requestId && { request_id: error.requestId }),
      },
      detail: `${error.code}: ${error.message}`,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    row,
    target,
    status: 'failed',
    error: { error: `EXIT_${exitCodeOf(error)}`, message },
    detail: message,
  };
}

function exitCodeOfBody(error: NonNullable<RowResult['error']>): ExitCode {
  if (error.status !== undefined)
    return exitCodeOf(new ApiError({ status: error.status, code: 'INTERNAL_ERROR', message: '' }));
  return Number(error.error.replace('EXIT_', '')) as ExitCode;
}

/** A 409 DUPLICATE_RESOURCE is a row done by an earlier run. */
async function orExists<T>(call: Promise<T>, what: string) {
  try {
    const result = await call;
    return { result, detail: `${what} created` };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'DUPLICATE_RESOURCE') {
      return { status: 'exists' as const, detail: `${what} exists already` };
    }
    throw error;
  }
}

const Amount = z.coerce.number().pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER));
const Unit = z.enum(UNITS).default('USD_MICROCENTS');
const FILE = {
  name: 'file',
  description: 'a CSV file with a header row, JSON lines, or - for standard input',
};

const FundRow = z.strictObject({
  scope: z.string().min(1),
  unit: Unit,
  operation: z.enum(FUND_OPERATIONS).default('CREDIT'),
  amount: Amount,
  reason: z.string().optional(),
  idempotency_key: z.string().min(1).max(256).optional(),
});

export const fundMany = defineCommand({
  name: 'budgets fund-many',
  summary: 'Fund many budgets from a file, each row once however often the file is run',
  details: `Columns: scope, amount, and optionally unit (USD_MICROCENTS), operation (CREDIT), reason, idempotency_key. Without an idempotency_key column each row's key comes from the file's content and the row's number: running the same file again applies nothing twice.`,
  arguments: [FILE],
  examples: [
    `printf 'scope,amount\\ntenant:acme,1000000\\ntenant:acme/workspace:prod,500000\\n' > funds.csv && ${CLI_NAME} budgets fund-many funds.csv`,
    `${CLI_NAME} budgets fund-many funds.jsonl --json`,
  ],
  operations: ['admin:fundBudget'],
  run: (ctx, [file]) =>
    runBulk(
      ctx,
      file as string,
      FundRow,
      (r) => `${r.scope} (${r.unit})`,
      async (r, { number, content }) => {
        const funded = await fund(ctx, {
          scope: r.scope,
          unit: r.unit,
          operation: r.operation,
          amount: r.amount,
          idempotencyKey: r.idempotency_key ?? derivedKey(content, number),
          reason: r.reason,
        });
        return {
          result: funded,
          detail: `${r.operation} ${r.amount}: allocated ${funded.new_allocated.amount}, remaining ${funded.new_remaining.amount}`,
        };
      },
    ),
});

const Permissions = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(/[\s;|]+/).filter(Boolean) : v),
  z.array(z.enum(PERMISSIONS)).min(1),
);
const KeyRow = z.strictObject({
  tenant_id: z.string().min(1),
  name: z.string().min(1),
  description: z.string().optional(),
  permissions: Permissions.optional(),
  expires_at: z.string().optional(),
});

export const createKeysMany = defineCommand({
  name: 'keys create-many',
  summary: 'Create many API keys from a file; each secret is printed this once',
  details: `Columns: tenant_id, name, and optionally description, permissions (separated by spaces or ;), expires_at. A row whose tenant already has an ACTIVE key of that name is reported as exists and not made again (its secret cannot be shown again).`,
  arguments: [FILE],
  examples: [
    `printf 'tenant_id,name,permissions\\nacme,reader,balances:read reservations:list\\n' > keys.csv && ${CLI_NAME} keys create-many keys.csv --json`,
  ],
  operations: ['admin:createApiKey', 'admin:listApiKeys'],
  run(ctx, [file]) {
    const api = ctx.admin();
    const existing = new Map<string, Promise<Set<string>>>();
    const namesOf = (tenant: string) => {
      let names = existing.get(tenant);
      if (!names) {
        names = collect(
          items(
            (cursor) =>
              unwrap(
                api.GET('/v1/admin/api-keys', {
                  params: { query: { tenant_id: tenant, status: 'ACTIVE', cursor, limit: 100 } },
                }),
              ),
            (page) => page.keys,
          ),
        ).then(({ items: keys }) => new Set(keys.map((k) => k.name)));
        existing.set(tenant, names);
      }
      return names;
    };
    return runBulk(
      ctx,
      file as string,
      KeyRow,
      (r) => `${r.tenant_id} ${r.name}`,
      async (r) => {
        if ((await namesOf(r.tenant_id)).has(r.name)) {
          return { status: 'exists', detail: 'an ACTIVE key of this name exists already' };
        }
        const k = await unwrap(
          api.POST('/v1/admin/api-keys', {
            body: {
              tenant_id: r.tenant_id,
              name: r.name,
              ...(r.description && { description: r.description }),
              ...(r.permissions && { permissions: r.permissions }),
              ...(r.expires_at && { expires_at: r.expires_at }),
            },
          }),
        );
        return { result: k, detail: `${k.key_id}, secret (shown this once): ${k.key_secret}` };
      },
    );
  },
});

const TenantRow = z.strictObject({ tenant_id: z.string().min(1), name: z.string().min(1) });

export const createTenantsMany = defineCommand({
  name: 'tenants create-many',
  summary:
    'Create many tenants from a file (columns tenant_id, name); existing ones are reported, not changed',
  arguments: [FILE],
  examples: [
    `printf 'tenant_id,name\\nacme,Acme Corp\\nglobex,Globex\\n' > tenants.csv && ${CLI_NAME} tenants create-many tenants.csv`,
  ],
  operations: ['admin:createTenant'],
  run: (ctx, [file]) =>
    runBulk(
      ctx,
      file as string,
      TenantRow,
      (r) => r.tenant_id,
      (r) =>
        orExists(
          unwrap(ctx.admin().POST('/v1/admin/tenants', { body: r })),
          `tenant ${r.tenant_id}`,
        ),
    ),
});

const int = (min: number) => z.coerce.number().pipe(z.number().int().min(min));
const BudgetRow = z.strictObject({
  scope: z.string().min(1),
  unit: Unit,
  allocated: Amount,
  overdraft_limit: Amount.optional(),
  shards: int(1).optional(),
  period: z.enum(PERIOD_KINDS).optional(),
  period_anchor_day: int(1).optional(),
  thresholds: z
    .preprocess(
      (v) => (typeof v === 'string' ? v.split(/[\s;|]+/).filter(Boolean) : v),
      z.array(int(1)),
    )
    .optional(),
});

export const createBudgetsMany = defineCommand({
  name: 'budgets create-many',
  summary: 'Create many budgets from a file; existing ones are reported, not changed',
  details:
    'Columns: scope, allocated, and optionally unit (USD_MICROCENTS), overdraft_limit, shards, period, period_anchor_day, thresholds (separated by spaces or ;).',
  arguments: [FILE],
  examples: [
    `printf 'scope,allocated,period\\ntenant:acme/workspace:a,1000000,MONTHLY\\n' > budgets.csv && ${CLI_NAME} budgets create-many budgets.csv`,
  ],
  operations: ['admin:createBudget'],
  run: (ctx, [file]) =>
    runBulk(
      ctx,
      file as string,
      BudgetRow,
      (r) => `${r.scope} (${r.unit})`,
      (r) =>
        orExists(
          unwrap(
            ctx.admin('either').POST('/v1/admin/budgets', {
              body: {
                scope: r.scope,
                unit: r.unit,
                allocated: { unit: r.unit, amount: r.allocated },
                ...(r.overdraft_limit !== undefined && {
                  overdraft_limit: { unit: r.unit, amount: r.overdraft_limit },
                }),
                ...(r.shards !== undefined && { shards: r.shards }),
                ...(r.period && { period: r.period }),
                ...(r.period_anchor_day !== undefined && {
                  period_anchor_day: r.period_anchor_day,
                }),
                ...(r.thresholds && { thresholds: r.thresholds }),
              },
            }),
          ),
          `budget ${r.scope}`,
        ),
    ),
});
