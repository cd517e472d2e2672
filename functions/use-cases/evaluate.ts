import type { Amount } from '../domain/amounts.js';
import { firstRefusal, type Ledger, type ScopeRefusal, scopeRefusal } from '../domain/ledger.js';
import { balanceView } from '../http/views.js';

export interface Evaluation {
  readonly refusal: ScopeRefusal | undefined;
  readonly balances: ReturnType<typeof balanceView>[];
}

/** Admission exactly as a live reservation decides it, on ledgers already read. */
export function evaluate(
  scopes: readonly string[],
  estimate: Amount,
  ledgers: Map<string, Ledger>,
): Evaluation {
  const refusal = firstRefusal(
    scopes.map((s) => scopeRefusal(s, estimate.unit, ledgers.get(s), estimate.amount)),
  );
  return { refusal, balances: currentBalances(scopes, ledgers) };
}

/** The decision fields of dry runs and decide: DENY carries reason_code, nothing is null. */
export const decisionFields = (e: Evaluation) =>
  e.refusal
    ? { decision: 'DENY' as const, reason_code: e.refusal.code }
    : { decision: 'ALLOW' as const };

/** The balances of those scopes that have a ledger, in scope order. */
export const currentBalances = (scopes: readonly string[], ledgers: Map<string, Ledger>) =>
  scopes.flatMap((s) => {
    const l = ledgers.get(s);
    return l ? [balanceView(l)] : [];
  });
