import { DomainError } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import {
  applyDelta,
  chargeAll,
  emptyLedger,
  firstRefusal,
  holdChange,
  type Ledger,
  type LedgerChange,
  refusalError,
  releaseChange,
  scopeRefusal,
} from '../domain/ledger.js';
import { expiredError, type Reservation, transition } from '../domain/reservation.js';
import type { TenantCaller } from '../http/auth.js';
import type { Reply } from '../http/handler.js';
import type {
  CommitBody,
  CreateReservationBody,
  ExtendBody,
  ReleaseBody,
} from '../http/schemas/runtime.js';
import { amountView, balanceView } from '../http/views.js';
import type { IdempotencyScope } from '../store/idempotency.js';
import { getLedgers, ledgerOf } from '../store/ledgers.js';
import {
  insertReservation,
  settleReservation,
  extendReservation as storeExtension,
} from '../store/reservations.js';
import { readSnapshot } from '../store/snapshot.js';
import { currentBalances, decisionFields, evaluate } from './evaluate.js';
import { MAX_STALE_RETRIES, replayOrMismatch } from './replay.js';
import { scopesFor } from './subjects.js';

/** POST /v1/reservations: one read of the ledgers, then one transaction of scopes + 1 items. */
export async function createReservation(
  caller: TenantCaller,
  body: CreateReservationBody,
  now: number,
): Promise<Reply> {
  const { scopes, scopePath } = scopesFor(caller, body.subject);
  const { unit, amount } = body.estimate;
  if (body.dry_run) {
    // SPEC rule 3: evaluated like a live reservation, nothing persisted, no id or expiry.
    const snapshot = await readSnapshot({ ledgers: { scopes, unit } });
    const evaluation = evaluate(scopes, body.estimate, snapshot.ledgers);
    return {
      statusCode: 200,
      body: {
        ...decisionFields(evaluation),
        affected_scopes: scopes,
        scope_path: scopePath,
        reserved: amountView(unit, amount),
        balances: evaluation.balances,
      },
    };
  }
  const reservationId = derivedId('rsv', caller.tenant, body.idempotency_key);
  const payload = fingerprint(body);
  for (let attempt = 0; ; attempt++) {
    const snapshot = await readSnapshot({ reservationId, ledgers: { scopes, unit } });
    if (snapshot.reservation) return replayOrMismatch(snapshot.stored, payload);
    const refusal = evaluate(scopes, body.estimate, snapshot.ledgers).refusal;
    if (refusal) throw refusalError(refusal);

    const reservation: Reservation = {
      reservationId,
      tenant: caller.tenant,
      status: 'ACTIVE',
      idempotencyKey: body.idempotency_key,
      subject: body.subject,
      action: body.action,
      reserved: body.estimate,
      createdAtMs: now,
      expiresAtMs: now + body.ttl_ms,
      gracePeriodMs: body.grace_period_ms,
      scopePath,
      affectedScopes: scopes,
      overagePolicy: body.overage_policy,
      metadata: body.metadata,
    };
    const holds = scopes.map((s) => holdChange(s, unit, amount));
    const response = {
      reservation_id: reservationId,
      decision: 'ALLOW',
      expires_at_ms: reservation.expiresAtMs,
      affected_scopes: scopes,
      scope_path: scopePath,
      reserved: amountView(unit, amount),
      balances: balancesAfter(snapshot.ledgers, holds),
    };
    const outcome = await insertReservation({
      reservation,
      holds,
      response: { fingerprint: payload, statusCode: 200, body: response },
    });
    switch (outcome.kind) {
      case 'inserted':
        return { statusCode: 200, body: response };
      case 'duplicate':
        return replayOrMismatch(outcome.stored, payload);
      case 'refused': {
        // The ledgers changed since the read: the condition that failed names the scope.
        const refusals = outcome.refused.map(({ index, item }) => {
          const scope = scopes[index] ?? '';
          return scopeRefusal(scope, unit, item ? ledgerOf(item) : undefined, amount);
        });
        const refused = firstRefusal(refusals);
        if (refused) throw refusalError(refused);
        if (attempt >= MAX_STALE_RETRIES) throw new Error('reservation kept conflicting');
      }
    }
  }
}

/** Balances as the changes leave them, from the ledgers read just before. */
function balancesAfter(ledgers: Map<string, Ledger>, changes: readonly LedgerChange[]) {
  return changes.map((c) =>
    balanceView(applyDelta(ledgers.get(c.scope) ?? emptyLedger(c.scope, c.unit), c.delta)),
  );
}

type SettleTrigger = 'commit' | 'release';

interface Settled {
  readonly changes: LedgerChange[];
  readonly body: (balances: ReturnType<typeof balanceView>[]) => Record<string, unknown>;
  readonly committed?: Reservation['reserved'] | undefined;
  readonly detail?: Record<string, unknown> | undefined;
}

/**
 * Commit and release share one path: replay check, ownership, the SPEC transition, the ledger
 * changes, and one transaction conditioned on the reservation still being ACTIVE.
 */
async function settle(
  caller: TenantCaller,
  reservationId: string,
  trigger: SettleTrigger,
  idempotencyKey: string,
  payload: unknown,
  now: number,
  plan: (r: Reservation, ledgers: Map<string, Ledger>) => Settled,
): Promise<Reply> {
  const idempotency = { tenant: caller.tenant, operation: trigger, key: idempotencyKey };
  const print = fingerprint({ reservation_id: reservationId, ...(payload as object) });
  for (let attempt = 0; ; attempt++) {
    const snapshot = await readSnapshot({ reservationId, idempotency });
    if (snapshot.stored) return replayOrMismatch(snapshot.stored, print);
    const reservation = ownedReservation(caller, reservationId, snapshot.reservation);
    const verdict = await checkTransition(reservation, trigger, now).catch((refusal: unknown) =>
      replayIfRecorded(idempotency, print, refusal),
    );
    if (verdict !== 'ok' && verdict !== 'stale') return verdict;
    if (verdict === 'stale') {
      if (attempt >= MAX_STALE_RETRIES) throw new Error(`${trigger} kept conflicting`);
      continue;
    }
    const ledgers = await getLedgers(reservation.affectedScopes, reservation.reserved.unit);
    const settled = plan(reservation, ledgers);
    const body = settled.body(balancesAfter(ledgers, settled.changes));
    const outcome = await settleReservation({
      reservation,
      to: trigger === 'commit' ? 'COMMITTED' : 'RELEASED',
      now,
      changes: settled.changes,
      committed: settled.committed,
      detail: settled.detail,
      idempotency: { scope: idempotency, response: { fingerprint: print, statusCode: 200, body } },
    });
    if (outcome.kind === 'settled') return { statusCode: 200, body };
    if (outcome.kind === 'replayed') return replayOrMismatch(outcome.stored, print);
    // Stale reservation (another settle, extend or the sweeper won) or a moved ledger: read again.
    if (attempt >= MAX_STALE_RETRIES) throw new Error(`${trigger} kept conflicting`);
  }
}

function ownedReservation(
  caller: TenantCaller,
  reservationId: string,
  r: Reservation | undefined,
): Reservation {
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  if (r.tenant !== caller.tenant) {
    throw new DomainError('FORBIDDEN', `reservation ${reservationId} belongs to another tenant`);
  }
  return r;
}

/**
 * BatchGetItem is not isolated from transactions as a whole: it may see a settle's new status
 * yet miss the idempotency record written with it. Before refusing, look for the record again,
 * so a concurrent duplicate of the request that won replays instead of being refused.
 */
async function replayIfRecorded(
  idempotency: IdempotencyScope,
  print: string,
  refusal: unknown,
): Promise<Reply> {
  const again = await readSnapshot({ idempotency });
  if (again.stored) return replayOrMismatch(again.stored, print);
  throw refusal;
}

/** Throws SPEC's refusal; `stale` when the reservation changed under us (read it again). */
async function checkTransition(
  r: Reservation,
  trigger: SettleTrigger | 'extend',
  now: number,
): Promise<'ok' | 'stale'> {
  const t = transition(r, trigger, now);
  if (t.kind === 'refuse') throw t.error;
  if (t.kind === 'expireThenRefuse') {
    // Only our own expiry proves it expired; if something settled or extended it first, re-read.
    if (!(await expireReservation(r, now))) return 'stale';
    throw expiredError(r);
  }
  return 'ok';
}

/** Returns the hold of a reservation past its deadline; a no-op if anything settled it first. */
export async function expireReservation(r: Reservation, now: number): Promise<boolean> {
  const outcome = await settleReservation({
    reservation: r,
    to: 'EXPIRED',
    now,
    changes: r.affectedScopes.map((s) => releaseChange(s, r.reserved.unit, r.reserved.amount)),
  });
  return outcome.kind === 'settled';
}

/** POST /v1/reservations/{id}/commit: SPEC § commit math, docs/ledger-math.md. */
export function commitReservation(
  caller: TenantCaller,
  reservationId: string,
  body: CommitBody,
  now: number,
): Promise<Reply> {
  return settle(caller, reservationId, 'commit', body.idempotency_key, body, now, (r, ledgers) => {
    if (body.actual.unit !== r.reserved.unit) {
      throw new DomainError(
        'UNIT_MISMATCH',
        `actual is in ${body.actual.unit}, the reservation in ${r.reserved.unit}`,
        {
          requested_unit: body.actual.unit,
          expected_unit: r.reserved.unit,
        },
      );
    }
    const held = r.reserved.amount;
    const actual = body.actual.amount;
    const scoped = r.affectedScopes.map((s) => ledgers.get(s) ?? emptyLedger(s, r.reserved.unit));
    const charge = chargeAll(scoped, held, actual, r.overagePolicy);
    if ('refusal' in charge) throw refusalError(charge.refusal);
    return {
      changes: charge.changes,
      committed: body.actual,
      detail: {
        ...(body.metrics && { metrics: body.metrics }),
        ...(body.metadata && { metadata: body.metadata }),
      },
      body: (balances) => ({
        status: 'COMMITTED',
        charged: amountView(r.reserved.unit, actual),
        released: amountView(r.reserved.unit, Math.max(0, held - actual)),
        balances,
      }),
    };
  });
}

/** POST /v1/reservations/{id}/release: the whole hold returns to every scope. */
export function releaseReservation(
  caller: TenantCaller,
  reservationId: string,
  body: ReleaseBody,
  now: number,
): Promise<Reply> {
  return settle(caller, reservationId, 'release', body.idempotency_key, body, now, (r) => ({
    changes: r.affectedScopes.map((s) => releaseChange(s, r.reserved.unit, r.reserved.amount)),
    detail: body.reason === undefined ? undefined : { reason: body.reason },
    body: (balances) => ({
      status: 'RELEASED',
      released: amountView(r.reserved.unit, r.reserved.amount),
      balances,
    }),
  }));
}

/**
 * POST /v1/reservations/{id}/extend. Time base: the current expires_at_ms (not the request time),
 * as the reference description says; refused from expires_at_ms on, grace does not count.
 */
export async function extendReservation(
  caller: TenantCaller,
  reservationId: string,
  body: ExtendBody,
  now: number,
): Promise<Reply> {
  const idempotency = { tenant: caller.tenant, operation: 'extend', key: body.idempotency_key };
  const print = fingerprint({ reservation_id: reservationId, ...body });
  for (let attempt = 0; ; attempt++) {
    const snapshot = await readSnapshot({ reservationId, idempotency });
    if (snapshot.stored) return replayOrMismatch(snapshot.stored, print);
    const reservation = ownedReservation(caller, reservationId, snapshot.reservation);
    const verdict = await checkTransition(reservation, 'extend', now).catch((refusal: unknown) =>
      replayIfRecorded(idempotency, print, refusal),
    );
    if (verdict !== 'ok' && verdict !== 'stale') return verdict;
    if (verdict === 'stale') {
      if (attempt >= MAX_STALE_RETRIES) throw new Error('extend kept conflicting');
      continue;
    }
    const newExpiresAtMs = reservation.expiresAtMs + body.extend_by_ms;
    const ledgers = await getLedgers(reservation.affectedScopes, reservation.reserved.unit);
    const response = {
      status: 'ACTIVE',
      expires_at_ms: newExpiresAtMs,
      balances: currentBalances(reservation.affectedScopes, ledgers),
    };
    const outcome = await storeExtension({
      reservation,
      newExpiresAtMs,
      now,
      metadata: body.metadata,
      idempotency: {
        scope: idempotency,
        response: { fingerprint: print, statusCode: 200, body: response },
      },
    });
    if (outcome.kind === 'settled') return { statusCode: 200, body: response };
    if (outcome.kind === 'replayed') return replayOrMismatch(outcome.stored, print);
    if (attempt >= MAX_STALE_RETRIES) throw new Error('extend kept conflicting');
  }
}
