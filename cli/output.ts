import type { ExitCode } from './exit-codes.js';

/**
 * What a command answers: the API's body (printed as is by --json, so scripts get the API's own
 * shapes) and the lines a person reads (tables by default).
 */
export interface Output {
  readonly json: unknown;
  readonly human: readonly string[];
  /** Not 0 when the command did its work but some of it failed (a bulk file's rows). */
  readonly exitCode?: ExitCode;
}

export type Column<T> = readonly [header: string, value: (row: T) => string | number | undefined];

/** Rows as an aligned text table; numbers right-aligned. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string[] {
  if (rows.length === 0) return ['(none)'];
  const cells = rows.map((row) => columns.map(([, value]) => value(row)));
  const widths = columns.map(([header], i) =>
    Math.max(header.length, ...cells.map((r) => String(r[i] ?? '').length)),
  );
  const line = (values: readonly (string | number | undefined)[]) =>
    values
      .map((v, i) => {
        const text = String(v ?? '');
        return typeof v === 'number' ? text.padStart(widths[i] ?? 0) : text.padEnd(widths[i] ?? 0);
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map(([header]) => header)), ...cells.map(line)];
}

/** One object as `label  value` lines; undefined values are left out. */
export function record(fields: readonly (readonly [string, unknown])[]): string[] {
  const shown = fields.filter(([, v]) => v !== undefined);
  const width = Math.max(...shown.map(([label]) => label.length));
  return shown.map(([label, value]) => `${`${label}:`.padEnd(width + 1)}  ${text(value)}`);
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(text).join(', ') || '(none)';
  if (isAmount(value)) return amountText(value);
  return JSON.stringify(value);
}

const isAmount = (v: unknown): v is { unit: string; amount: number } =>
  typeof v === 'object' && v !== null && 'unit' in v && 'amount' in v;

/** An amount exactly, in its unit: `50000000 USD_MICROCENTS`. */
export const amountText = (a: { readonly unit: string; readonly amount: number }): string =>
  `${a.amount} ${a.unit}`;

/** The footer of one page of a listing: how to get the next one. */
export function morePages(page: { has_more: boolean; next_cursor?: string }): string[] {
  return page.has_more && page.next_cursor
    ? ['', `More results: add --cursor ${page.next_cursor} (or --all for every page).`]
    : [];
}

/** The value at a dotted path of a JSON body (`--field key_secret`, `--field balance.remaining.amount`). */
export function fieldOf(json: unknown, path: string): unknown {
  let value: unknown = json;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || !(part in value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
