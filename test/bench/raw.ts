/**
 * The raw engine: the very TransactWriteItems a reserve or a commit sends, built by the
 * store's own builders and sent by the store's own `transact` (same client settings, same
 * conflict retries) from the bench process, without HTTP or the service around it.
 * Imported only once the environment names the table and the endpoint.
 */

import type { Amount } from '../../functions/domain/amounts.js';
import type { Ledger } from '../../functions/domain/budget.js';
import { derivedId, fingerprint } from '../../functions/domain/fingerprint.js';
import {
  applyDelta,
  chargeAll,
  holdChange,
  type LedgerChange,
} from '../../functions/domain/ledger.js';
import { affectedScopes, type Reservation } from '../../functions/domain/reservation.js';
import { reservationIdOf } from '../../functions/domain/reservation-id.js';
import { deriveScopes, type Subject } from '../../functions/domain/scopes.js';
import { dynamoClient } from '../../functions/store/client.js';
import type { TransactItem } from '../../functions/store/expressions.js';
import { reserveTransaction, settleTransaction } from '../../functions/store/reservation-writes.js';
import { readSnapshot } from '../../functions/store/snapshot.js';
import { transact, transactStats } from '../../functions/store/transact.js';
import { ALLOCATED, TTL_MS, UNIT } from './provision.js';
import { installTally, type Tally, type TallyControl } from './tally.js';

export const rawTally: Tally = {};
export const rawControl: TallyControl = { sizing: true };
installTally(dynamoClient, rawTally, rawControl);

export const rawConflictRetries = () => transactStats.conflictRetries;

/** A ledger as a busy budget looks, so stored responses have the service's size. */
const typicalLedger = (scope: string): Ledger => ({
  scope,
  unit: UNIT,
  allocated: ALLOCATED,
  spent: 123_456_800,
  reserved: 4_567_000,
  debt: 0,
  overdraftLimit: 0,
  remaining: ALLOCATED - 123_456_800 - 4_567_000,
});

const balancesAfter = (changes: readonly LedgerChange[]) =>
  changes.map((c) => applyDelta(typicalLedger(c.scope), c.delta));

/** The reservation and the items a reserve of `amount` on `subject` would send. */
export function buildReserve(
  tenant: string,
  subject: Subject,
  amount: number,
  idempotencyKey: string,
  now: number,
): { reservation: Reservation; items: TransactItem[] } {
  const { scopes, scopePath } = deriveScopes(tenant, subject);
  const action = { kind: 'llm.completion', name: 'bench-model' };
  const reservation: Reservation = {
    // As the service names it: the key and the hint of its budgets (domain/reservation-id.ts).
    reservationId: reservationIdOf(
      derivedId('rsv', tenant, idempotencyKey),
      tenant,
      scopePath,
      UNIT,
    ),
    tenant,
    status: 'ACTIVE',
    idempotencyKey,
    subject,
    action,
    reserved: { unit: UNIT, amount },
    createdAtMs: now,
    expiresAtMs: now + TTL_MS,
    gracePeriodMs: 5_000,
    scopePath,
    holds: scopes.map((scope) => ({ scope, shard: 0 })),
    overagePolicy: 'REJECT',
    metadata: undefined,
    ttlMs: TTL_MS,
  };
  const holds = scopes.map((s) => holdChange(s, UNIT, amount));
  // The service's stored result: the same size as what it stores for a reserve.
  const result = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath,
    reserved: reservation.reserved,
    reservationId: reservation.reservationId,
    expiresAtMs: reservation.expiresAtMs,
    balances: balancesAfter(holds),
  };
  const { items } = reserveTransaction({
    reservation,
    holds,
    outcome: { fingerprint: fingerprint({ idempotencyKey, subject, action }), result },
  });
  return { reservation, items };
}

async function mustCommit(items: TransactItem[], what: string): Promise<void> {
  const outcome = await transact(items);
  if (outcome.kind !== 'committed')
    throw new Error(`raw ${what} cancelled: ${JSON.stringify(outcome.reasons.map((r) => r.code))}`);
}

export async function rawReserve(
  tenant: string,
  subject: Subject,
  amount: number,
  idempotencyKey: string,
): Promise<Reservation> {
  const { reservation, items } = buildReserve(tenant, subject, amount, idempotencyKey, Date.now());
  await mustCommit(items, 'reserve');
  return reservation;
}

/** The commit transaction: reservation update, one charge per scope, the idempotency record. */
export async function rawCommit(r: Reservation, actual: number, key: string): Promise<void> {
  const ledgers = affectedScopes(r).map(typicalLedger);
  const charge = chargeAll(ledgers, r.reserved.amount, actual, r.overagePolicy);
  if ('refusal' in charge) throw new Error('raw commit refused');
  const committed: Amount = { unit: r.reserved.unit, amount: actual };
  const result = {
    status: 'COMMITTED',
    charged: committed,
    released: { unit: UNIT, amount: Math.max(0, r.reserved.amount - actual) },
    balances: balancesAfter(charge.changes),
  };
  const now = Date.now();
  await mustCommit(
    settleTransaction({
      reservation: r,
      to: 'COMMITTED',
      now,
      changes: charge.changes,
      committed,
      detail: {},
      idempotency: {
        scope: { tenant: r.tenant, operation: 'commit', key },
        outcome: {
          fingerprint: fingerprint({ reservationId: r.reservationId, key, actual: committed }),
          result,
        },
      },
    }).items,
    'commit',
  );
}

/**
 * The one read a reserve makes before it writes: its ledgers, strongly consistent (its record
 * only before a refusal or on a retry: docs/decisions.md § One read per operation).
 */
export async function rawReserveRead(tenant: string, subject: Subject, _key: string) {
  const { scopes } = deriveScopes(tenant, subject);
  return readSnapshot({ budgets: { scopes, unit: UNIT } });
}
