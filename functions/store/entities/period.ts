import type { Budget } from '../../domain/budget.js';
import { closedPeriodCounters } from '../../domain/period.js';
import type { Item } from '../expressions.js';
import { keys } from '../keys.js';
import { budgetOfItem, LEDGER_VERSION, ledgerPeriodAttributes, ledgerPeriodOf } from './ledger.js';

// A rolling budget's closed period: the ledger it had when the period ended, where holds taken
// in that period still settle (docs/decisions.md § Rolling budgets). Decoded as a Budget whose
// `period.closed` is set (store/entities/ledger.ts budgetOfItem); versioned with the ledger family.

export const isClosedPeriodItem = (item: Item | undefined): item is Item =>
  item?.type === 'ledger-period' && ledgerPeriodOf(item) !== undefined;

/** The closed period's item, from the budget as it was at the boundary: its debt moves on. */
export function closedPeriodItem(tenant: string, before: Budget): Item {
  const { scope, unit } = before.ref;
  const { period } = before;
  if (!period) throw new Error(`${scope} does not roll over`);
  const closed = closedPeriodCounters(before.counters);
  return {
    ...keys.ledgerPeriod(scope, unit, period.start),
    type: 'ledger-period',
    v: LEDGER_VERSION,
    tenant,
    scope,
    unit,
    allocated: closed.allocated,
    spent: closed.spent,
    reserved: closed.reserved,
    debt: closed.debt,
    overdraft_limit: before.overdraftLimit,
    remaining: closed.remaining,
    carried_debt: before.counters.debt,
    ...ledgerPeriodAttributes(period),
  };
}

/** A closed period's budget (`period.closed`). */
export const closedPeriodOf = (item: Item): Budget => budgetOfItem(item);
