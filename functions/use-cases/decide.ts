import { fingerprint } from '../domain/fingerprint.js';
import type { TenantCaller } from '../http/auth.js';
import type { Reply } from '../http/handler.js';
import type { DecideBody } from '../http/schemas/runtime.js';
import { putIdempotencyRecord } from '../store/idempotency.js';
import { readSnapshot } from '../store/snapshot.js';
import { decisionFields, evaluate } from './evaluate.js';
import { replayOrMismatch } from './replay.js';
import { scopesFor } from './subjects.js';

/**
 * POST /v1/decide: the reservation's evaluation, answered 200 with DENY for budget and debt
 * conditions. Idempotent: the first answer is recorded and replayed for the same key.
 */
export async function decide(caller: TenantCaller, body: DecideBody, now: number): Promise<Reply> {
  const { scopes } = scopesFor(caller, body.subject);
  const idempotency = { tenant: caller.tenant, operation: 'decide', key: body.idempotency_key };
  const print = fingerprint(body);
  const snapshot = await readSnapshot({
    idempotency,
    ledgers: { scopes, unit: body.estimate.unit },
  });
  if (snapshot.stored) return replayOrMismatch(snapshot.stored, print);
  const response = {
    ...decisionFields(evaluate(scopes, body.estimate, snapshot.ledgers)),
    affected_scopes: scopes,
  };
  const outcome = await putIdempotencyRecord(
    idempotency,
    { fingerprint: print, statusCode: 200, body: response },
    now,
  );
  if (outcome.kind === 'duplicate') return replayOrMismatch(outcome.stored, print);
  return { statusCode: 200, body: response };
}
