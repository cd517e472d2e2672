import type { Amount, Unit } from '../domain/amounts.js';
import type { Caller } from '../domain/caller.js';
import { DomainError, RetryLaterError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import {
  inPeriods,
  type Ledger,
  ledgersAfter,
  type OveragePolicy,
  refusalError,
  scopeRefusal,
} from '../domain/ledger.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { eventChanges } from '../domain/settlement.js';
import { insertEvent } from '../store/events.js';
import { unitsOfScope } from '../store/ledgers.js';
import { readSnapshot } from '../store/snapshot.js';
import { expiredHoldsFreer } from './expiry.js';
import { guardedWrite, readAgain } from './guarded-write.js';
import { rollOverDue } from './periods.js';
import { affectedScopes } from './scopes.js';

export interface EventRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly actual: Amount;
  readonly overagePolicy: OveragePolicy;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly clientTimeMs?: number | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface EventApplied {
  readonly eventId: string;
  readonly balances: readonly Ledger[];
}

/** POST /v1/events: a direct debit of `actual` on every derived scope, one transaction of scopes + 1 items. */
export async function createEvent(
  caller: Caller,
  request: EventRequest,
  now: number,
): Promise<EventApplied> {
  const { scopes, requireTenantOpen } = await affectedScopes(caller, request.subject, now);
  const { unit, amount } = request.actual;
  const eventId = derivedId('evt', caller.tenant, request.idempotencyKey);
  const print = fingerprint(request);
  const freer = expiredHoldsFreer(caller.tenant, now);
  return guardedWrite({
    name: 'event',
    fingerprint: print,
    read: (atomic) => readSnapshot({ eventId, ledgers: { scopes, unit }, atomic }),
    decide: async ({ ledgers, layouts, periods }) => {
      requireTenantOpen();
      if (await rollOverDue({ ledgers, periods }, now)) return readAgain;
      const missing = scopes.find((s) => !ledgers.has(s));
      if (missing !== undefined) await requireUnitOfScope(caller.tenant, missing, unit);
      const charge = eventChanges(scopes, request.actual, request.overagePolicy, ledgers);
      if ('refusal' in charge) {
        if (await freer.free(charge.refusal, ledgers)) return readAgain;
        throw refusalError(charge.refusal);
      }
      const result: EventApplied = { eventId, balances: ledgersAfter(ledgers, charge.changes) };
      return { result, changes: inPeriods(charge.changes, periods), layouts };
    },
    write: ({ result, changes, layouts }) =>
      insertEvent({
        eventId,
        layouts,
        tenant: caller.tenant,
        createdAtMs: now,
        subject: request.subject,
        action: request.action,
        actual: request.actual,
        scopes,
        overagePolicy: request.overagePolicy,
        metrics: request.metrics,
        metadata: request.metadata,
        clientTimeMs: request.clientTimeMs,
        charges: changes,
        outcome: { fingerprint: print, result },
      }),
    // Under overdraft a moved ledger does not prove a refusal: only the last attempt reports one.
    refusalOf: (refused, _plan, lastAttempt) => {
      if (!lastAttempt) return undefined;
      const first = refused[0];
      // Only an unsharded ledger's failed condition is evidence (a shard's proves nothing).
      if (!first) return new RetryLaterError('CONTENTION', 100);
      const refusal = scopeRefusal(scopes[first?.index ?? 0] ?? '', unit, first?.ledger, amount);
      return refusal ? refusalError(refusal) : new RetryLaterError('CONTENTION', 100);
    },
  });
}

/**
 * A scope without a ledger in this unit is zero allocation (SPEC core behaviour 6), unless it has
 * ledgers in other units: then the request is in the wrong unit → 400 UNIT_MISMATCH.
 */
async function requireUnitOfScope(tenant: string, scope: string, unit: Unit): Promise<void> {
  const units = await unitsOfScope(tenant, scope);
  if (units.length > 0) {
    throw new DomainError('UNIT_MISMATCH', `scope ${scope} has no budget in ${unit}`, {
      scope,
      requested_unit: unit,
      expected_units: units,
    });
  }
}
