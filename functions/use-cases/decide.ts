import type { Amount } from '../domain/amounts.js';
import type { Caller } from '../domain/caller.js';
import { type Caps, capsFor } from '../domain/caps.js';
import { fingerprint } from '../domain/fingerprint.js';
import {
  admissionRefusal,
  type RefusalCode,
  refusalError,
  type ScopeRefusal,
} from '../domain/ledger.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { putIdempotencyRecord } from '../store/idempotency.js';
import { readSnapshot } from '../store/snapshot.js';
import { recordRefusal } from './budget-events.js';
import { expiredHoldsFreer } from './expiry.js';
import { atomicIfRefused, guardedWrite, readAgain } from './guarded-write.js';
import { rollOverDue } from './periods.js';
import { affectedScopes } from './scopes.js';

export interface DecideRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly estimate: Amount;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface Decision {
  /** Undefined: ALLOW. */
  readonly refusal?: RefusalCode | undefined;
  readonly affectedScopes: readonly string[];
  /** Present: ALLOW_WITH_CAPS (never with a refusal). */
  readonly caps?: Caps;
}

/**
 * POST /v1/decide: the reservation's evaluation, answered 200 with DENY for budget and debt
 * conditions. Idempotent: the first answer is recorded and replayed for the same key.
 */
export async function decide(
  caller: Caller,
  request: DecideRequest,
  now: number,
  requestId?: string,
): Promise<Decision> {
  const { scopes, requireTenantOpen } = await affectedScopes(caller, request.subject, now);
  const idempotency = { tenant: caller.tenant, operation: 'decide', key: request.idempotencyKey };
  const print = fingerprint(request);
  const freer = expiredHoldsFreer(caller.tenant, now);
  // A DENY decided now (not a replay's) is reported as reservation.denied, as the reference does.
  let denied: ScopeRefusal | undefined;
  const decision = await guardedWrite({
    name: 'decide',
    fingerprint: print,
    read: (atomic) =>
      readSnapshot({ idempotency, ledgers: { scopes, unit: request.estimate.unit }, atomic }),
    decide: async (snapshot) => {
      requireTenantOpen();
      if (await rollOverDue(snapshot, now)) return readAgain;
      // A DENY read shard by shard is decided again on one instant's budgets (docs/scaling.md).
      const { ledgers, caps } = await atomicIfRefused(
        snapshot,
        (s) => admissionRefusal(scopes, request.estimate, s.ledgers),
        () =>
          readSnapshot({
            idempotency,
            ledgers: { scopes, unit: request.estimate.unit },
            atomic: true,
          }),
      );
      const refusal = admissionRefusal(scopes, request.estimate, ledgers);
      if (await freer.free(refusal, ledgers)) return readAgain;
      const applied = refusal ? undefined : capsFor(scopes, request.estimate.amount, ledgers, caps);
      return {
        refusal,
        result: {
          refusal: refusal?.code,
          affectedScopes: scopes,
          ...(applied && { caps: applied }),
        },
      };
    },
    write: ({ result }) => putIdempotencyRecord(idempotency, { fingerprint: print, result }, now),
    onWritten: ({ refusal }) => {
      denied = refusal;
    },
  });
  if (denied) await recordRefusal(refusalError(denied), caller, request, now, requestId);
  return decision;
}
