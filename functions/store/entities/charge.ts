import type { Unit } from '../../domain/amounts.js';
import { exactJson, parseExactJson } from '../../domain/json.js';
import type { Charge } from '../../domain/reservation.js';
import type { Item } from '../expressions.js';
import { keys, reservationIdOfCharges } from '../keys.js';

// The charge family: one item per charge of a reservation (POST …/charges), in the partition of
// its reservation's charges, by sequence, so GET …/charges is one Query. Kept for good, like the
// reservation; its idempotency record is apart (7 days: store/entities/idempotency.ts). The
// reservation carries only the running totals (store/entities/reservation.ts).

/** Written on every charge item from this version on. */
export const CHARGE_VERSION = 1;

export const isChargeItem = (item: Item | undefined): item is Item => item?.type === 'charge';

export const chargeItem = (c: Charge): Item => ({
  ...keys.charge(c.reservationId, c.sequence),
  type: 'charge',
  v: CHARGE_VERSION,
  charge_id: c.chargeId,
  unit: c.amount.unit,
  amount: c.amount.amount,
  created_at_ms: c.createdAtMs,
  // As JSON text: exact numbers and any keys survive (DynamoDB maps would refuse them).
  ...(c.metrics !== undefined && { metrics_json: exactJson(c.metrics) }),
  ...(c.metadata !== undefined && { metadata_json: exactJson(c.metadata) }),
});

const jsonOf = (text: unknown) =>
  typeof text === 'string'
    ? (parseExactJson(text)?.value as Record<string, unknown> | undefined)
    : undefined;

export const chargeOf = (item: Item): Charge => ({
  chargeId: String(item.charge_id),
  reservationId: reservationIdOfCharges(String(item.pk)),
  sequence: Number(item.sk),
  amount: { unit: item.unit as Unit, amount: Number(item.amount) },
  createdAtMs: Number(item.created_at_ms),
  metrics: jsonOf(item.metrics_json),
  metadata: jsonOf(item.metadata_json),
});
