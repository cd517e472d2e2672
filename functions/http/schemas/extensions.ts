import * as z from 'zod';
import type { ChargeRequest } from '../../use-cases/charges.js';
import type { RefundRequest } from '../../use-cases/refunds.js';
import {
  Cursor,
  camel,
  IdempotencyKey,
  Int,
  Metadata,
  PageLimit,
  StandardMetrics,
  Unit,
} from './common.js';

// The request schemas of our extensions to the protocol (x-extension budget-reservations,
// docs/decisions.md § Charges, § Refunds, § Estimate accuracy): new operations only, so no
// existing request changes and unmodified clients keep working.

/** A charge or a refund of nothing is refused: it would write every ledger for no change. */
const PositiveAmount = z.object({ unit: Unit, amount: Int(1) });

export const ChargeBody = z
  .object({
    idempotency_key: IdempotencyKey,
    amount: PositiveAmount.describe(
      'What this part of the work spent: charged against what is left of the hold; beyond it, the reservation’s overage policy applies as at commit.',
    ),
    metrics: StandardMetrics.optional(),
    metadata: Metadata.optional(),
  })
  .transform((b): ChargeRequest => camel(b));
export type ChargeBody = z.infer<typeof ChargeBody>;

export const RefundBody = z
  .object({
    idempotency_key: IdempotencyKey,
    amount: PositiveAmount.describe('At most what was charged and not yet refunded'),
    reason: z.string().min(1).max(1024).describe('Why: kept in the audit trail and the event'),
  })
  .transform((b): RefundRequest => camel(b));
export type RefundBody = z.infer<typeof RefundBody>;

export const ListChargesQuery = z.object({ limit: PageLimit, cursor: Cursor.optional() });

export const EventIdParams = z.object({ event_id: z.string().min(1).max(128) });
