import type { Amount } from '../domain/amounts.js';
import type { Caller } from '../domain/caller.js';
import type { Caps } from '../domain/caps.js';
import { fingerprint } from '../domain/fingerprint.js';
import { type ReasonCode, refusalError, type ScopeRefusal } from '../domain/refusals.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { putIdempotencyRecord } from '../store/idempotency.js';
import { admit, denyReason } from './admission.js';
import { guardedWrite } from './guarded-write.js';
import { outcomeToStore } from './outcomes.js';

export interface DecideRequest {
  readonly idempotencyKey: string;
  readonly subject: Subject;
  readonly action: Action;
  readonly estimate: Amount;
  readonly metadata?: Record<string, unknown> | undefined;
}
export interface Decision {
  /** Undefined: ALLOW. */
  readonly refusal?: ReasonCode | undefined;
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
  const admission = await admit(caller, { ...request, amount: request.estimate }, now, requestId);
  const idempotency = { tenant: caller.tenant, operation: 'decide', key: request.idempotencyKey };
  const print = fingerprint(request);
  // A DENY decided now (not a replay's) is reported as reservation.denied, as the reference does.
  let denied: ScopeRefusal | undefined;
  const decision = await guardedWrite({
    name: 'decide',
    fingerprint: print,
    read: (atomic) => admission.read({ idempotency }, atomic),
    repair: admission.repair,
    // A DENY read shard by shard is decided again on one instant's budgets (docs/scaling.md).
    decide: (snapshot) => {
      const judgement = admission.judge(snapshot);
      const { refusal, caps } = judgement;
      const result: Decision = {
        refusal: denyReason(judgement),
        affectedScopes: judgement.scopes,
        ...(caps && { caps }),
      };
      return { refusal, result };
    },
    write: ({ result }) => putIdempotencyRecord(idempotency, outcomeToStore(print, result), now),
    onWritten: ({ refusal }) => {
      denied = refusal;
    },
  });
  if (denied) await admission.report(refusalError(denied));
  return decision;
}
