import type { Amount } from '../domain/amounts.js';
import type { Ledger } from '../domain/budget.js';
import type { Caller } from '../domain/caller.js';
import { RetryLaterError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import { inPeriodsOf, ledgersAfter, type OveragePolicy } from '../domain/ledger.js';
import { DEFAULT_OVERAGE_POLICY } from '../domain/policies.js';
import type { RequestCount } from '../domain/rate-limits.js';
import { budgetRefusal, refusalError } from '../domain/refusals.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { debtIncurredBy, type UsageEvent } from '../domain/settlement.js';
import { tenantClosed } from '../domain/tenant.js';
import { insertEvent } from '../store/events.js';
import { admit } from './admission.js';
import { guardedWrite } from './guarded-write.js';
import { outcomeToStore, type ResultCodec } from './outcomes.js';

export interface EventRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly actual: Amount;
  /** Absent: a policy's default, the tenant's, else REJECT. */
  readonly overagePolicy?: OveragePolicy | undefined;
  readonly metrics?: Record<string, unknown> | undefined;
  readonly clientTimeMs?: number | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface EventApplied {
  readonly eventId: string;
  readonly balances: readonly Ledger[];
}

/** An event's result, stored beside it: its balances; the event holds its id. */
export const appliedCodec: ResultCodec<EventApplied> = {
  compact: ({ balances }) => ({ balances }),
  expand: ({ balances }, { event }) => {
    if (!event) throw new Error('an event outcome off its event');
    return { eventId: event.eventId, balances };
  },
};

/** POST /v1/events: a direct debit of `actual` on every derived scope, one transaction of scopes + 1 items. */
export async function createEvent(
  caller: Caller,
  request: EventRequest,
  now: number,
  rate?: RequestCount,
): Promise<EventApplied> {
  const work = { ...request, amount: request.actual, event: request };
  const admission = await admit(caller, work, now, undefined, rate);
  const eventId = derivedId('evt', caller.tenant, request.idempotencyKey);
  // Of what was sent, SPEC's default filled in (as reservations.ts does).
  const print = fingerprint({
    ...request,
    overagePolicy: request.overagePolicy ?? DEFAULT_OVERAGE_POLICY,
  });
  return guardedWrite({
    name: 'event',
    fingerprint: print,
    codec: appliedCodec,
    read: (atomic) => admission.read({ eventId }, atomic),
    repair: admission.repair,
    decide: (snapshot) => {
      const { budgets } = snapshot;
      const changes = admission.charge(snapshot);
      const result: EventApplied = { eventId, balances: ledgersAfter(budgets, changes) };
      const scopes = admission.landing(snapshot);
      return { result, changes: inPeriodsOf(changes, budgets), budgets, scopes };
    },
    write: ({ result, changes, budgets, scopes }) => {
      const event: UsageEvent = {
        eventId,
        tenant: caller.tenant,
        createdAtMs: now,
        subject: request.subject,
        action: request.action,
        actual: request.actual,
        scopes,
        overagePolicy: admission.eventPolicy ?? DEFAULT_OVERAGE_POLICY,
        metrics: request.metrics,
        metadata: request.metadata,
        clientTimeMs: request.clientTimeMs,
        debtIncurred: debtIncurredBy(changes),
      };
      const outcome = outcomeToStore(print, result, appliedCodec, { event });
      return insertEvent({ event, charges: changes, budgets, outcome });
    },
    // Under overdraft a moved ledger does not prove a refusal: only the last attempt reports one.
    refusalOf: (refused, { scopes }, lastAttempt) => {
      if (refused.some(({ budget }) => budget?.status === 'CLOSED'))
        return tenantClosed(caller.tenant);
      if (!lastAttempt) return undefined;
      const first = refused[0];
      // Only an unsharded budget's failed condition is evidence (a shard's proves nothing).
      if (!first) return new RetryLaterError('CONTENTION', 100);
      const { unit, amount } = request.actual;
      const refusal = budgetRefusal(
        { scope: scopes[first.index] ?? '', unit },
        first.budget,
        amount,
      );
      return refusal ? refusalError(refusal) : new RetryLaterError('CONTENTION', 100);
    },
  });
}
