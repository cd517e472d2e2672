import type { Caller } from '../domain/caller.js';
import { policyCounters, type RequestCount } from '../domain/rate-limits.js';
import type { Reservation } from '../domain/reservation.js';
import { hintedBudgets } from '../domain/reservation-id.js';
import { scopePrefixes } from '../domain/scopes.js';
import { tenantState } from '../store/tenants.js';

/**
 * A commit's or charge's read, with its rate count (docs/decisions.md § Rate limits): the
 * policies of its reservation's scopes join the key's and tenant's counters in one counting
 * write, before any budget write and outside the transaction. The scopes come from the id's
 * hint before the read when it has one, else from the reservation the read found; a hint that
 * named other scopes than the reservation's (a forged id) costs a second count of the policies
 * it missed, so a rewritten id never escapes a policy.
 */
export function countedRead<S extends { readonly reservation?: Reservation | undefined }>(
  caller: Caller,
  reservationId: string,
  rate: RequestCount | undefined,
  now: number,
  read: (atomic?: boolean) => Promise<S>,
): (atomic?: boolean) => Promise<S> {
  if (!rate) return read;
  const countScopes = async (scopes: readonly string[]) => {
    const { policies } = await tenantState(caller.tenant, now);
    await rate.add(policyCounters(policies, scopes, 'commit', now));
  };
  let hintCounted = false;
  return async (atomic) => {
    const hinted = !hintCounted && hintedBudgets(reservationId, caller.tenant);
    hintCounted = true;
    if (hinted) await countScopes(hinted.scopes);
    const snapshot = await read(atomic);
    const r = snapshot.reservation;
    await countScopes(r && r.tenant === caller.tenant ? scopePrefixes(r.scopePath) : []);
    return snapshot;
  };
}
