import { type Caller, requireOwnTenant } from './caller.js';
import { invalidRequest } from './errors.js';

/** SPEC § Scope identifiers: canonical order of the standard levels. */
export const LEVELS = ['tenant', 'workspace', 'app', 'workflow', 'agent', 'toolset'] as const;
export type Level = (typeof LEVELS)[number];
export type SegmentKind = Level | 'dimensions';

/** Standard field values and dimension keys/values: no path delimiters, no whitespace. */
export const SEGMENT_VALUE = /^[A-Za-z0-9_.-]+$/;
export const MAX_SEGMENT_VALUE = 128;
export const DIMENSION_KEY = /^[A-Za-z0-9_.-]+$/;
export const MAX_DIMENSION_KEY = 64;
export const MAX_DIMENSIONS = 16;
/** A dimension no budget of the tenant names is a tag: any string of 1 to 256 characters. */
export const MAX_TAG_VALUE = 256;
/**
 * A scope path is part of DynamoDB keys (a ledger's partition key, its index entries' sort key
 * `<scope>#<unit>`, at most 1,024 bytes): longer ones are refused with 400, never sent.
 */
export const MAX_SCOPE_LENGTH = 1000;

/**
 * The dimension keys that are budget levels for a tenant: those some budget of it names. Every
 * other key is a tag, stored and echoed but never a scope (docs/decisions.md, "Dimensions").
 * `ALL_DIMENSIONS`: every key a level (a budget's own scope, parsed).
 */
export type BudgetedDimensions = ReadonlySet<string> | 'all';
export const ALL_DIMENSIONS: BudgetedDimensions = 'all';
export const NO_DIMENSIONS: BudgetedDimensions = new Set();
const isBudgeted = (keys: BudgetedDimensions, key: string) => keys === 'all' || keys.has(key);

export interface Subject {
  readonly tenant?: string | undefined;
  readonly workspace?: string | undefined;
  readonly app?: string | undefined;
  readonly workflow?: string | undefined;
  readonly agent?: string | undefined;
  readonly toolset?: string | undefined;
  readonly dimensions?: Readonly<Record<string, string>> | undefined;
}

export interface DerivedScopes {
  /** Cumulative prefixes, root first: every scope the subject affects. */
  readonly scopes: readonly string[];
  /** The longest of them. */
  readonly scopePath: string;
}

export interface Segment {
  readonly kind: SegmentKind;
  readonly value: string;
}

export const segmentText = (s: Segment): string => `${s.kind}:${s.value}`;

/**
 * Standard subject values are compared case-insensitively: scope identifiers carry them in
 * lowercase, as the reference does (`workspace: "Prod"` and a budget on `workspace:prod` are one
 * scope). Tenant ids and dimension values keep their case. The subject is echoed as sent.
 */
export const canonicalValue = (kind: SegmentKind, value: string): string =>
  kind === 'tenant' || kind === 'dimensions' ? value : value.toLowerCase();

function checkValue(field: string, value: string, pattern: RegExp, max: number): void {
  if (value.length === 0 || value.length > max || !pattern.test(value)) {
    throw invalidRequest(
      `${field} must be 1 to ${max} characters of letters, digits, '_', '.' or '-'`,
      { field },
    );
  }
}

/**
 * Root `tenant:<effective tenant>`, then workspace, app, workflow, agent, toolset (absent levels
 * skipped), then one `dimensions:<key>=<value>` per dimension sorted by key.
 */
export function subjectSegments(
  tenant: string,
  subject: Subject,
  budgeted: BudgetedDimensions = ALL_DIMENSIONS,
): Segment[] {
  checkValue('subject.tenant', tenant, SEGMENT_VALUE, MAX_SEGMENT_VALUE);
  const segments: Segment[] = [{ kind: 'tenant', value: tenant }];
  for (const level of LEVELS.slice(1)) {
    const value = subject[level];
    if (value === undefined) continue;
    checkValue(`subject.${level}`, value, SEGMENT_VALUE, MAX_SEGMENT_VALUE);
    segments.push({ kind: level, value: canonicalValue(level, value) });
  }
  const dimensions = Object.entries(subject.dimensions ?? {});
  if (dimensions.length > MAX_DIMENSIONS) {
    throw invalidRequest(`subject.dimensions may hold at most ${MAX_DIMENSIONS} entries`, {
      field: 'subject.dimensions',
    });
  }
  dimensions.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, value] of dimensions) {
    checkValue(`subject.dimensions key '${key}'`, key, DIMENSION_KEY, MAX_DIMENSION_KEY);
    if (!isBudgeted(budgeted, key)) {
      if (value.length === 0 || value.length > MAX_TAG_VALUE) {
        throw invalidRequest(`subject.dimensions.${key} must be 1 to ${MAX_TAG_VALUE} characters`, {
          field: `subject.dimensions.${key}`,
        });
      }
      continue;
    }
    checkValue(`subject.dimensions.${key}`, value, SEGMENT_VALUE, MAX_SEGMENT_VALUE);
    segments.push({ kind: 'dimensions', value: `${key}=${value}` });
  }
  return segments;
}

export function deriveScopes(
  tenant: string,
  subject: Subject,
  budgeted: BudgetedDimensions = ALL_DIMENSIONS,
): DerivedScopes {
  const texts = subjectSegments(tenant, subject, budgeted).map(segmentText);
  const scopes = texts.map((_, i) => texts.slice(0, i + 1).join('/'));
  if ((scopes[scopes.length - 1]?.length ?? 0) > MAX_SCOPE_LENGTH) {
    throw invalidRequest(
      `the subject's scope path (its budget levels) must be at most ${MAX_SCOPE_LENGTH} characters`,
      { field: 'subject' },
    );
  }
  return { scopes, scopePath: scopes[scopes.length - 1] ?? `tenant:${tenant}` };
}

/** The scopes a scope path lies under, itself last (its cumulative prefixes): what it affects. */
export function scopePrefixes(path: string): string[] {
  const segments = path.split('/');
  return segments.map((_, i) => segments.slice(0, i + 1).join('/'));
}

/**
 * SPEC § Subject: the scopes a caller's subject affects; subject.tenant must be the key's (403).
 * Only the dimension keys the tenant budgets are levels; the others are tags.
 */
export function callerScopes(
  caller: Caller,
  subject: Subject,
  budgeted: BudgetedDimensions,
): DerivedScopes {
  if (subject.tenant !== undefined) {
    requireOwnTenant(caller, subject.tenant, `subject.tenant '${subject.tenant}'`, {
      tenant: subject.tenant,
    });
  }
  return deriveScopes(caller.tenant, subject, budgeted);
}

/**
 * Parses a scope identifier into the canonical segments that subjects derive: standard values
 * in lowercase (so `workspace:Prod` names the scope `workspace:prod`), and every other
 * non-canonical form refused.
 */
export function parseScope(scope: string): Segment[] {
  if (scope.length === 0 || scope.length > MAX_SCOPE_LENGTH) {
    throw invalidRequest(`scope must be 1 to ${MAX_SCOPE_LENGTH} characters`, { field: 'scope' });
  }
  const segments = scope.split('/').map((text): Segment => {
    const colon = text.indexOf(':');
    const kind = text.slice(0, colon);
    if (colon < 0 || !(LEVELS.includes(kind as Level) || kind === 'dimensions')) {
      throw invalidRequest(`scope segment '${text}' must be <level>:<value>`, { field: 'scope' });
    }
    return {
      kind: kind as SegmentKind,
      value: canonicalValue(kind as SegmentKind, text.slice(colon + 1)),
    };
  });
  if (segments[0]?.kind !== 'tenant') {
    throw invalidRequest('scope must start with tenant:<tenant>', { field: 'scope' });
  }
  // Re-deriving from the parsed segments and comparing rejects every non-canonical form at once:
  // wrong order, repeated levels, unsorted or duplicated dimensions, bad characters.
  const subject: Record<string, unknown> = { dimensions: {} };
  const dimensions: Record<string, string> = {};
  for (const s of segments.slice(1)) {
    if (s.kind === 'dimensions') {
      const eq = s.value.indexOf('=');
      if (eq < 0) throw invalidRequest(`dimension segment '${s.value}' must be key=value`);
      dimensions[s.value.slice(0, eq)] = s.value.slice(eq + 1);
    } else {
      subject[s.kind] = s.value;
    }
  }
  subject.dimensions = dimensions;
  const canonical = deriveScopes(segments[0].value, subject as Subject).scopePath;
  if (canonical !== segments.map(segmentText).join('/')) {
    throw invalidRequest(`scope is not in canonical form; expected '${canonical}'`, {
      field: 'scope',
      expected: canonical,
    });
  }
  return segments;
}

export const tenantOfScope = (segments: readonly Segment[]): string => segments[0]?.value ?? '';

/** The tenant of a canonical scope path: its root segment is `tenant:<id>`. */
export const tenantOfPath = (scope: string): string =>
  (scope.split('/')[0] ?? '').slice('tenant:'.length);
