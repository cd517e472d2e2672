import type { Amount, Unit } from '../domain/amounts.js';
import { isOverLimit, type Ledger } from '../domain/ledger.js';
import type { Reservation } from '../domain/reservation.js';

// Domain results → wire JSON. Exactly SPEC's fields: optional ones are omitted, never null.

export const amountView = (unit: Unit, amount: number) => ({ unit, amount });

/** SPEC § Balance: exactly nine fields; `scope` is the full path, like `scope_path`. */
export function balanceView(l: Ledger) {
  return {
    scope: l.scope,
    scope_path: l.scope,
    remaining: amountView(l.unit, l.remaining),
    allocated: amountView(l.unit, l.allocated),
    spent: amountView(l.unit, l.spent),
    reserved: amountView(l.unit, l.reserved),
    debt: amountView(l.unit, l.debt),
    overdraft_limit: amountView(l.unit, l.overdraftLimit),
    is_over_limit: isOverLimit(l),
  };
}
export type BalanceView = ReturnType<typeof balanceView>;

const amount = (a: Amount) => amountView(a.unit, a.amount);

function subjectView(s: Reservation['subject']) {
  return {
    ...(s.tenant !== undefined && { tenant: s.tenant }),
    ...(s.workspace !== undefined && { workspace: s.workspace }),
    ...(s.app !== undefined && { app: s.app }),
    ...(s.workflow !== undefined && { workflow: s.workflow }),
    ...(s.agent !== undefined && { agent: s.agent }),
    ...(s.toolset !== undefined && { toolset: s.toolset }),
    ...(s.dimensions !== undefined && { dimensions: s.dimensions }),
  };
}

function actionView(a: Reservation['action']) {
  return { kind: a.kind, name: a.name, ...(a.tags !== undefined && { tags: a.tags }) };
}

/** SPEC § Reservation; `committed`, `finalized_at_ms` and `metadata` only when they exist. */
export function reservationView(r: Reservation, { withMetadata }: { withMetadata: boolean }) {
  return {
    reservation_id: r.reservationId,
    status: r.status,
    idempotency_key: r.idempotencyKey,
    subject: subjectView(r.subject),
    action: actionView(r.action),
    reserved: amount(r.reserved),
    ...(r.committed && { committed: amount(r.committed) }),
    created_at_ms: r.createdAtMs,
    expires_at_ms: r.expiresAtMs,
    ...(r.finalizedAtMs !== undefined && { finalized_at_ms: r.finalizedAtMs }),
    scope_path: r.scopePath,
    affected_scopes: r.affectedScopes,
    ...(withMetadata && r.metadata !== undefined && { metadata: r.metadata }),
  };
}
