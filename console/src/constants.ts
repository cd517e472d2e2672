import type { FundOperation } from '../../client/index.js';

/**
 * What each funding operation does, as the fund dialog explains it. The API's vocabularies
 * themselves (units, statuses, permissions…) come from the typed client (client/vocabulary.ts),
 * checked against the server's OpenAPI document.
 */
export const FUND_OPERATION_HELP: Readonly<Record<FundOperation, string>> = {
  CREDIT: 'Adds the amount to the allocation.',
  DEBIT: 'Takes the amount off the allocation (never below what is spent, held and owed).',
  RESET: 'Sets the allocation to the amount.',
  RESET_SPENT: 'Starts a new period by hand: sets spent to the amount (usually 0).',
  REPAY_DEBT: 'Pays the amount off the debt.',
};
