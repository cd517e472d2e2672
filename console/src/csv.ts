import type { AuditEntry } from '../../client/index.js';

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. A text that a
 * spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a leading apostrophe:
 * tenant names and reasons are typed by people, and an export must not execute them.
 */
export function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  let text =
    typeof value === 'string'
      ? value
      : typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : JSON.stringify(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows under a header, CRLF-separated as RFC 4180 has it. */
export const toCsv = (header: readonly string[], rows: readonly (readonly unknown[])[]): string =>
  [header, ...rows]
    .map((row) => row.map(csvField).join(','))
    .join('\r\n')
    .concat('\r\n');

export const AUDIT_CSV_HEADER = [
  'timestamp',
  'tenant_id',
  'actor',
  'operation',
  'resource_type',
  'resource_id',
  'status',
  'request_id',
  'log_id',
  'before',
  'after',
  'detail',
] as const;

/** The audit trail as the console exports it: one row per entry, changes as JSON. */
export const auditCsv = (entries: readonly AuditEntry[]): string =>
  toCsv(
    AUDIT_CSV_HEADER,
    entries.map((e) => [
      e.timestamp,
      e.tenant_id,
      e.metadata.actor,
      e.operation,
      e.resource_type,
      e.resource_id,
      e.status,
      e.request_id,
      e.log_id,
      e.metadata.before,
      e.metadata.after,
      e.metadata.detail,
    ]),
  );
