import type { Unit } from '../domain/amounts.js';
import { budgetKey } from '../domain/budget.js';
import type { Ledger } from '../domain/ledger.js';
import { isDue, type LedgerPeriod, rolledOver } from '../domain/period.js';
import { heldPeriods, type Reservation } from '../domain/reservation.js';
import { getClosedPeriodLedgers, getLedgers, rollOverLedger } from '../store/ledgers.js';

// Rolling budgets (docs/decisions.md § Rolling budgets): no cron, no sweep. Whatever reads a
// budget whose period has ended moves it into the current period first, then reads again.

interface Read {
  readonly ledgers: ReadonlyMap<string, Ledger>;
  readonly periods: ReadonlyMap<string, LedgerPeriod>;
}

const tenantOfScope = (scope: string): string => {
  const root = scope.split('/')[0] ?? '';
  return root.slice('tenant:'.length);
};

/**
 * Moves every rolling budget among those read whose period has ended into the period of `now`
 * (exactly once, whoever gets there first); true when any had ended, so the caller reads again.
 */
export async function rollOverDue(read: Read, now: number): Promise<boolean> {
  let due = false;
  for (const [scope, period] of read.periods) {
    const ledger = read.ledgers.get(scope);
    if (!ledger || ledger.status === 'CLOSED' || !isDue(period, now)) continue;
    due = true;
    await rollOverLedger(tenantOfScope(scope), { ledger, period }, rolledOver(ledger, period, now));
  }
  return due;
}

/**
 * The ledgers a reservation's settlement lands on: for a hold taken in a period its budget has
 * since left, that closed period's own ledger (the hold is charged or returned there), and the
 * period of each hold.
 */
export async function settlementLedgers(r: Reservation, read: Read) {
  const held = heldPeriods(r, read.periods);
  const closed = [...held]
    .filter(([, p]) => p.closed)
    .map(([scope, p]) => ({ scope, unit: r.reserved.unit, start: p.start }));
  if (closed.length === 0) return { ledgers: read.ledgers, held };
  const past = await getClosedPeriodLedgers(closed);
  return { ledgers: new Map([...read.ledgers, ...past.ledgers]), held };
}

/**
 * For the sweeper, which reads no ledgers otherwise: the current periods of the rolling budgets
 * these reservations hold (rolled over first when due), by `scope#unit`.
 */
export async function currentPeriodsOf(
  reservations: readonly Reservation[],
  now: number,
): Promise<Map<string, LedgerPeriod>> {
  const periods = new Map<string, LedgerPeriod>();
  const byUnit = new Map<Unit, Set<string>>();
  for (const r of reservations) {
    r.affectedScopes.forEach((scope, i) => {
      if ((r.heldIn?.[i] ?? 0) === 0) return;
      const scopes = byUnit.get(r.reserved.unit) ?? new Set<string>();
      byUnit.set(r.reserved.unit, scopes.add(scope));
    });
  }
  for (const [unit, scopes] of byUnit) {
    for (let attempt = 0; attempt < 3; attempt++) {
      const read = await getLedgers([...scopes], unit);
      if (attempt < 2 && (await rollOverDue(read, now))) continue;
      for (const [scope, p] of read.periods) periods.set(budgetKey({ scope, unit }), p);
      break;
    }
  }
  return periods;
}
