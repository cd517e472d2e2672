import { expect } from 'vitest';
import type { LocalStack } from '../../infra/local/stack.js';
import { type GivenTenant, scopeOf } from './fixtures.js';
import { type Json, request } from './http.js';

/** Wire shapes, as SPEC writes them. */
export interface WireAmount {
  unit: string;
  amount: number;
}
export interface WireBalance {
  scope: string;
  scope_path: string;
  remaining: WireAmount;
  allocated: WireAmount;
  spent: WireAmount;
  reserved: WireAmount;
  debt: WireAmount;
  overdraft_limit: WireAmount;
  is_over_limit: boolean;
}

/**
 * The balances of a tenant's ledgers by `scope#UNIT` (include_children from the root), every
 * page, read with the tenant's key unless `headers` says otherwise.
 */
export async function balancesOf(
  stack: LocalStack,
  t: GivenTenant,
  headers = t.headers,
): Promise<Map<string, Json>> {
  const out = new Map<string, Json>();
  let cursor: string | undefined;
  do {
    const res = await request<{ balances: Json[]; next_cursor?: string }>(
      'GET',
      `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}&include_children=true&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { headers },
    );
    if (res.status !== 200) throw new Error(`balances: ${res.status} ${JSON.stringify(res.body)}`);
    for (const b of res.body.balances)
      out.set(`${String(b.scope)}#${String((b.allocated as Json).unit)}`, b);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

/** The key of a ledger in `balancesOf`: its scope relative to the tenant root, and its unit. */
export const ledgerKey = (t: GivenTenant, rel: string, unit = 'USD_MICROCENTS') =>
  `${scopeOf(t, rel)}#${unit}`;

/** One ledger's balance; throws when the tenant has no ledger at that scope and unit. */
export async function balanceAt(
  stack: LocalStack,
  t: GivenTenant,
  rel: string,
  unit = 'USD_MICROCENTS',
): Promise<WireBalance> {
  const b = (await balancesOf(stack, t)).get(ledgerKey(t, rel, unit));
  if (!b) throw new Error(`no ledger ${rel}#${unit}`);
  return b as unknown as WireBalance;
}

/** A ledger's counters, for exact comparisons: `L(allocated, spent, reserved, debt, remaining)`. */
export interface Counters {
  allocated: number;
  spent: number;
  reserved: number;
  debt: number;
  remaining: number;
}

export const L = (
  allocated: number,
  spent: number,
  reserved: number,
  debt: number,
  remaining: number,
): Counters => ({ allocated, spent, reserved, debt, remaining });

export const amountOf = (value: unknown): number => (value as { amount: number }).amount;

export const countersOf = (b: Json | WireBalance): Counters => ({
  allocated: amountOf(b.allocated),
  spent: amountOf(b.spent),
  reserved: amountOf(b.reserved),
  debt: amountOf(b.debt),
  remaining: amountOf(b.remaining),
});

const BALANCE_FIELDS = [
  'allocated',
  'debt',
  'is_over_limit',
  'overdraft_limit',
  'remaining',
  'reserved',
  'scope',
  'scope_path',
  'spent',
];
const AMOUNT_FIELDS = ['remaining', 'allocated', 'spent', 'reserved', 'debt', 'overdraft_limit'];

/**
 * SPEC § Balance: the nine fields, one unit throughout, integer amounts, and the ledger
 * invariants: remaining = allocated − spent − reserved − debt; reserved, spent and debt are not
 * negative; is_over_limit is debt > overdraft_limit.
 */
export function expectBalance(b: Json, where = `ledger ${String(b.scope_path)}`): void {
  expect(Object.keys(b).sort(), where).toEqual(BALANCE_FIELDS);
  expect(b.scope_path, where).toEqual(expect.stringMatching(/^tenant:/));
  const unit = (b.allocated as { unit: string }).unit;
  for (const f of AMOUNT_FIELDS) {
    expect(b[f], `${where}: ${f}`).toEqual({ unit, amount: expect.any(Number) });
    expect(Number.isInteger(amountOf(b[f])), `${where}: ${f} is an integer`).toBe(true);
  }
  const c = countersOf(b);
  expect(c.remaining, `${where}: remaining`).toBe(c.allocated - c.spent - c.reserved - c.debt);
  expect(c.reserved, `${where}: reserved`).toBeGreaterThanOrEqual(0);
  expect(c.spent, `${where}: spent`).toBeGreaterThanOrEqual(0);
  expect(c.debt, `${where}: debt`).toBeGreaterThanOrEqual(0);
  expect(b.is_over_limit, `${where}: is_over_limit`).toBe(c.debt > amountOf(b.overdraft_limit));
}

/** A scope relative to the tenant root ('' for the root itself). */
export const relativeScope = (t: GivenTenant, scope: string) =>
  scope === `tenant:${t.tenant}` ? '' : scope.slice(`tenant:${t.tenant}/`.length);

/**
 * Every ledger of the tenant, each checked with `expectBalance`, as counters by relative scope
 * ('' for the root; `#UNIT` appended unless the unit is USD_MICROCENTS).
 */
export async function ledgers(
  stack: LocalStack,
  t: GivenTenant,
): Promise<Record<string, Counters>> {
  const out: Record<string, Counters> = {};
  for (const b of (await balancesOf(stack, t)).values()) {
    expectBalance(b);
    const unit = (b.allocated as { unit: string }).unit;
    const suffix = unit === 'USD_MICROCENTS' ? '' : `#${unit}`;
    out[`${relativeScope(t, String(b.scope_path))}${suffix}`] = countersOf(b);
  }
  return out;
}
