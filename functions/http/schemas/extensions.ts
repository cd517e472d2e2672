import * as z from 'zod/mini';
import type { ChargeRequest } from '../../use-cases/charges.js';
import type { DelegationRequest } from '../../use-cases/delegations.js';
import type { RefundRequest } from '../../use-cases/refunds.js';
import {
  Chars,
  Cursor,
  camel,
  IdempotencyKey,
  Int,
  Metadata,
  PageLimit,
  SegmentValue,
  StandardMetrics,
  Unit,
} from './common.js';

// The request schemas of our extensions to the protocol (x-extension budget-reservations,
// docs/decisions.md § Charges, § Refunds, § Estimate accuracy): new operations only, so no
// existing request changes and unmodified clients keep working.

/** A charge or a refund of nothing is refused: it would write every ledger for no change. */
const PositiveAmount = z.object({ unit: Unit, amount: Int(1) });

export const ChargeBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    amount: PositiveAmount.check(
      z.describe(
        'What this part of the work spent: charged against what is left of the hold; beyond it, the reservation’s overage policy applies as at commit.',
      ),
    ),
    metrics: z.optional(StandardMetrics),
    metadata: z.optional(Metadata),
  }),
  z.transform((b): ChargeRequest => camel(b)),
);
export type ChargeBody = z.infer<typeof ChargeBody>;

export const RefundBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    amount: PositiveAmount.check(z.describe('At most what was charged and not yet refunded')),
    reason: Chars(1, 1024).check(z.describe('Why: kept in the audit trail and the event')),
  }),
  z.transform((b): RefundRequest => camel(b)),
);
export type RefundBody = z.infer<typeof RefundBody>;

export const ListChargesQuery = z.object({ limit: PageLimit, cursor: z.optional(Cursor) });

export const EventIdParams = z.object({ event_id: Chars(1, 128) });

/** Deeper subject levels for a child: scopes of the child alone, each needing a budget. */
const ChildSubject = z.strictObject({
  workspace: z.optional(SegmentValue),
  app: z.optional(SegmentValue),
  workflow: z.optional(SegmentValue),
  agent: z.optional(SegmentValue),
  toolset: z.optional(SegmentValue),
});

export const DelegationBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    amount: PositiveAmount.check(
      z.describe(
        'What the child holds, carved out of what the parent still holds (never more): the budget is moved, not taken again.',
      ),
    ),
    ttl_ms: z.optional(
      Int(1_000, 86_400_000).check(
        z.describe(
          'The child’s TTL; absent or longer than the parent has left: the parent’s expiry',
        ),
      ),
    ),
    subject: z.optional(
      ChildSubject.check(
        z.describe(
          'Levels below the parent’s deepest (e.g. agent): scopes of the child only, held like a reserve’s',
        ),
      ),
    ),
    metadata: z.optional(Metadata),
  }),
  z.transform((b): DelegationRequest => camel(b)),
);
export type DelegationBody = z.infer<typeof DelegationBody>;
