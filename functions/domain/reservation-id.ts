import { UNITS, type Unit } from './amounts.js';

// A reservation id names its record and, when it fits, the budgets its holds are on, so a commit,
// release or extend reads the reservation and those budgets in one call (docs/decisions.md §
// One read per operation). `rsv_<32 hex>` is the record's key (a hash of tenant and idempotency
// key, so a reserve's retry finds it whatever the budgets became); `~<hint>` after it is the
// unit and the scope path below the tenant. The hint is only a read hint: the record is found by
// the key alone, and the budgets decided on are those its holds name, read again when the hint
// named others.

/** SPEC: a reservation_id path parameter is at most 128 characters. */
export const MAX_RESERVATION_ID = 128;

const HINT = '~';
/** A segment's kind in a hint: the letter at its place in CODES. */
const KINDS = ['workspace', 'app', 'workflow', 'agent', 'toolset', 'dimensions'];
const CODES = 'wafgtd';

/** The record's key of a reservation id: the id without its hint. */
export const reservationKeyId = (reservationId: string): string => {
  const at = reservationId.indexOf(HINT);
  return at < 0 ? reservationId : reservationId.slice(0, at);
};

/**
 * The id of a reservation whose record is `keyId`, holding `unit` on the scope path `path` (of
 * tenant `tenant`) and its prefixes: the key with its hint when the whole fits SPEC's length.
 */
export function reservationIdOf(keyId: string, tenant: string, path: string, unit: Unit): string {
  const root = `tenant:${tenant}`;
  if (path !== root && !path.startsWith(`${root}/`)) return keyId;
  const segments = path === root ? [] : path.slice(root.length + 1).split('/');
  const codes: string[] = [String(UNITS.indexOf(unit))];
  for (const segment of segments) {
    const at = segment.indexOf(':');
    const code = CODES[KINDS.indexOf(segment.slice(0, at))];
    if (at < 0 || code === undefined) return keyId;
    codes.push(`${code}${segment.slice(at + 1)}`);
  }
  const id = `${keyId}${HINT}${codes.join(HINT)}`;
  return id.length <= MAX_RESERVATION_ID ? id : keyId;
}

/** The budgets a reservation id names for a caller of `tenant`: its scopes (root first), unit. */
export function hintedBudgets(
  reservationId: string,
  tenant: string,
): { readonly scopes: string[]; readonly unit: Unit } | undefined {
  const [, unitCode, ...segments] = reservationId.split(HINT);
  const unit = UNITS[Number(unitCode)];
  if (unitCode === undefined || unitCode.length !== 1 || unit === undefined) return undefined;
  const scopes = [`tenant:${tenant}`];
  for (const segment of segments) {
    const kind = KINDS[CODES.indexOf(segment.slice(0, 1))];
    if (kind === undefined || segment.length < 2) return undefined;
    scopes.push(`${scopes[scopes.length - 1]}/${kind}:${segment.slice(1)}`);
  }
  return { scopes, unit };
}
