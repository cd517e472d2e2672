import { DomainError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import {
  applyDelta,
  chargeAll,
  emptyLedger,
  firstRefusal,
  refusalError,
  scopeRefusal,
} from '../domain/ledger.js';
import type { TenantCaller } from '../http/auth.js';
import type { Reply } from '../http/handler.js';
import type { CreateEventBody } from '../http/schemas/runtime.js';
import { balanceView } from '../http/views.js';
import { insertEvent } from '../store/events.js';
import { ledgerOf, unitsOfScope } from '../store/ledgers.js';
import { readSnapshot } from '../store/snapshot.js';
import { MAX_STALE_RETRIES, replayOrMismatch } from './replay.js';
import { scopesFor } from './subjects.js';

/**
 * POST /v1/events: a direct debit of `actual` on every derived scope, one transaction of
 * scopes + 1 items. For an event nothing is held, so REJECT and ALLOW_IF_AVAILABLE both mean
 * "only if remaining covers it"; ALLOW_WITH_OVERDRAFT may run into debt up to the limit.
 */
export async function createEvent(
  caller: TenantCaller,
  body: CreateEventBody,
  now: number,
): Promise<Reply> {
  const { scopes } = scopesFor(caller, body.subject);
  const { unit, amount } = body.actual;
  const eventId = derivedId('evt', caller.tenant, body.idempotency_key);
  const print = fingerprint(body);
  const policy = body.overage_policy === 'REJECT' ? 'ALLOW_IF_AVAILABLE' : body.overage_policy;
  for (let attempt = 0; ; attempt++) {
    const snapshot = await readSnapshot({ eventId, ledgers: { scopes, unit } });
    if (snapshot.stored) return replayOrMismatch(snapshot.stored, print);
    const missing = scopes.filter((s) => !snapshot.ledgers.has(s));
    if (missing[0] !== undefined) await checkUnit(caller.tenant, missing[0], unit);
    const ledgers = scopes.flatMap((s) => snapshot.ledgers.get(s) ?? []);
    const charge = chargeAll(ledgers, 0, amount, policy);
    // A missing ledger is zero allocation (BUDGET_EXCEEDED), ranked with the other refusals.
    const refusal = firstRefusal([
      ...missing.map((s) => scopeRefusal(s, unit, undefined, amount)),
      'refusal' in charge ? charge.refusal : undefined,
    ]);
    if (refusal) throw refusalError(refusal);
    if ('refusal' in charge) throw refusalError(charge.refusal);
    const response = {
      status: 'APPLIED',
      event_id: eventId,
      balances: charge.changes.map((c, i) =>
        balanceView(applyDelta(ledgers[i] ?? emptyLedger(c.scope, unit), c.delta)),
      ),
    };
    const record = {
      created_at_ms: now,
      subject: body.subject,
      action: body.action,
      unit,
      actual: amount,
      scopes,
      overage_policy: body.overage_policy,
      metrics: body.metrics,
      metadata: body.metadata,
      client_time_ms: body.client_time_ms,
    };
    const outcome = await insertEvent({
      eventId,
      tenant: caller.tenant,
      record,
      charges: charge.changes,
      response: { fingerprint: print, statusCode: 201, body: response },
    });
    if (outcome.kind === 'applied') return { statusCode: 201, body: response };
    if (outcome.kind === 'duplicate') return replayOrMismatch(outcome.stored, print);
    if (attempt >= MAX_STALE_RETRIES) {
      const first = outcome.refused[0];
      const scope = scopes[first?.index ?? 0] ?? scopes[0] ?? '';
      const refusal = scopeRefusal(
        scope,
        unit,
        first?.item ? ledgerOf(first.item) : undefined,
        amount,
      );
      throw refusal ? refusalError(refusal) : new Error('event kept conflicting');
    }
  }
}

/**
 * A scope without a ledger in this unit is zero allocation (SPEC core behaviour 6), unless it has
 * ledgers in other units: then the request is in the wrong unit → 400 UNIT_MISMATCH.
 */
async function checkUnit(
  tenant: string,
  scope: string,
  unit: CreateEventBody['actual']['unit'],
): Promise<void> {
  const units = await unitsOfScope(tenant, scope, scope.slice(scope.lastIndexOf('/') + 1));
  if (units.length > 0) {
    throw new DomainError('UNIT_MISMATCH', `scope ${scope} has no budget in ${unit}`, {
      scope,
      requested_unit: unit,
      expected_units: units,
    });
  }
}
