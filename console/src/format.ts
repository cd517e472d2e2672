import type { Amount, Unit } from '../../client/index.js';
import { InputError } from './errors.js';

/** USD_MICROCENTS per dollar: 100 cents of 10^6 microcents each. */
const MICROCENTS_PER_USD = 100_000_000;
const USD_DECIMALS = 8;

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** What a unit is called next to a plain number. */
export const UNIT_LABELS: Readonly<Record<Unit, string>> = {
  USD_MICROCENTS: 'USD',
  TOKENS: 'tokens',
  CREDITS: 'credits',
  RISK_POINTS: 'risk points',
};

/**
 * An amount as an operator reads it: dollars for USD_MICROCENTS (at least cents, at most the
 * 8 decimals a microcent has, exact: integer arithmetic only), a grouped integer otherwise.
 */
export function formatAmount(amount: number, unit: Unit): string {
  const sign = amount < 0 ? '−' : '';
  const abs = Math.abs(amount);
  if (unit !== 'USD_MICROCENTS') return `${sign}${grouped.format(abs)} ${UNIT_LABELS[unit]}`;
  const dollars = Math.floor(abs / MICROCENTS_PER_USD);
  const fraction = String(abs % MICROCENTS_PER_USD)
    .padStart(USD_DECIMALS, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${sign}$${grouped.format(dollars)}.${fraction}`;
}

export const formatWire = (a: Amount): string => formatAmount(a.amount, a.unit);

/** The input an amount field takes for a unit: dollars for USD_MICROCENTS, else an integer. */
export const amountInputLabel = (unit: Unit): string =>
  unit === 'USD_MICROCENTS' ? 'Amount (USD)' : `Amount (${UNIT_LABELS[unit]})`;

/**
 * Parses what an operator typed into an amount field: dollars with up to 8 decimals for
 * USD_MICROCENTS (exact, no floating point), a whole number otherwise. Thousands separators
 * and a leading `$` are accepted. Returns the integer amount, or a message saying what is wrong.
 */
export function parseAmount(
  text: string,
  unit: Unit,
): { readonly amount: number } | { readonly error: string } {
  const cleaned = text
    .trim()
    .replace(/[,\s_]/g, '')
    .replace(/^\$/, '');
  if (unit !== 'USD_MICROCENTS') {
    if (!/^\d+$/.test(cleaned)) return { error: 'Enter a whole number, 0 or more.' };
    return checked(Number(cleaned));
  }
  const match = /^(\d*)(?:\.(\d*))?$/.exec(cleaned);
  if (!match || cleaned === '' || cleaned === '.') {
    return { error: 'Enter an amount in dollars, for example 12.50.' };
  }
  const [, whole = '', fraction = ''] = match;
  if (fraction.length > USD_DECIMALS) {
    return { error: 'At most 8 decimals (a microcent is $0.00000001).' };
  }
  const micro = BigInt(whole || '0') * BigInt(MICROCENTS_PER_USD) + BigInt(fraction.padEnd(8, '0'));
  if (micro > BigInt(Number.MAX_SAFE_INTEGER)) return { error: 'That amount is too large.' };
  return checked(Number(micro));
}

const checked = (n: number) =>
  Number.isSafeInteger(n) ? { amount: n } : { error: 'That amount is too large.' };

/** A duration in the two largest units that matter: "45 s", "3 min 20 s", "2 h 5 min". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 ? `${min} min ${s % 60} s` : `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** An instant in UTC, the service's own time zone (periods are UTC): "2026-01-15 12:00:00 UTC". */
export function formatTime(at: string | number): string {
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** `datetime-local` input text, read as UTC (as the console shows time), to ISO 8601. */
export function utcInputToIso(text: string): string | undefined {
  if (!text) return undefined;
  const date = new Date(`${text}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/**
 * The scope of a budget made for `tenant` from what the operator typed after `tenant:<id>`:
 * empty is the tenant's own budget, anything else a scope under it. The prefix is not theirs to
 * type, so a budget made for the tenant on screen is always that tenant's.
 */
export function scopeUnder(tenant: string, typed: string): string {
  const below = typed.trim();
  const root = `tenant:${tenant}`;
  if (below === '' || below === '/') return root;
  if (/^\/?tenant:/i.test(below)) {
    throw new InputError(
      `the scope is pinned to ${root}: type only what follows it, e.g. /workspace:prod`,
      'Scope',
    );
  }
  return `${root}${below.startsWith('/') ? '' : '/'}${below}`;
}
