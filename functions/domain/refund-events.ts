import type { AuditRecord } from './audit.js';
import type { BudgetEvent } from './budget-events.js';
import { derivedId } from './fingerprint.js';

/**
 * Refund events: THE place they come from, for the events plane to pick up. A refund
 * (domain/refunds.ts) writes its audit record in its own transaction; the table's stream carries
 * that record, and this turns it into the protocol's Event with event_type `custom.refund` (the
 * reference's EventType: "custom event types MUST use a custom. prefix"), category `budget`. So
 * the event exists exactly when the refund does, and its id, a hash of the audit record's, is the
 * same on every delivery. Rendered by functions/outbound/messages.ts, described by
 * functions/outbound/schemas.ts (docs/events/custom.refund.schema.json).
 */
export const REFUND_EVENT_TYPE = 'custom.refund';

const REFUND_OPERATIONS: readonly string[] = ['refundReservation', 'refundEvent'];

export const isRefundRecord = (r: AuditRecord): boolean => REFUND_OPERATIONS.includes(r.operation);

/** The refund event of an audit record, or none when the record is not a refund's. */
export function refundEvent(r: AuditRecord): BudgetEvent | undefined {
  if (!isRefundRecord(r)) return undefined;
  return {
    type: REFUND_EVENT_TYPE,
    id: derivedId('evt', REFUND_EVENT_TYPE, r.logId),
    tenant: r.tenant,
    at: r.atMs,
    audit: r,
  };
}
