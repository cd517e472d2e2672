import type { Unit } from '../../domain/amounts.js';
import type { Refusal } from '../../domain/budget-events.js';
import type { RefusalCode } from '../../domain/refusals.js';
import { currentTrace } from '../../telemetry/invocation.js';
import type { Item } from '../expressions.js';
import { directory, keys } from '../keys.js';

// Refused reservations, recorded for the stream to report (reservation.denied): small items that
// only feed the stream, deleted by DynamoDB's TTL a day later.

/** Written on every refusal record from this version on (absent: written before). */
export const REFUSAL_VERSION = 1;

const RETENTION_S = 86_400;

export const isRefusalItem = (item: Item | undefined): item is Item => item?.type === 'refusal';

export const refusalItem = (r: Refusal): Item => ({
  ...keys.refusal(r.refusalId),
  type: 'refusal',
  v: REFUSAL_VERSION,
  refusal_id: r.refusalId,
  tenant: r.tenant,
  at_ms: r.atMs,
  reason_code: r.code,
  scope: r.scope,
  unit: r.unit,
  requested: r.requested,
  remaining: r.remaining,
  subject: r.subject,
  action: r.action,
  key_id: r.keyId,
  request_id: r.requestId,
  trace_id: r.traceId ?? currentTrace()?.traceId,
  ...(r.suppressed > 0 && { suppressed: r.suppressed }),
  ttl: Math.floor(r.atMs / 1000) + RETENTION_S,
  // The overview's recent denials (keys.ts directory.denials): gone with the record a day on.
  dir_pk: directory.denials.pk(r.refusalId),
  dir_sk: directory.denials.sk(r.atMs, r.tenant, r.refusalId),
});

/** No older format: refusal records have had this form since they existed (and live a day). */
export function refusalOf(item: Item): Refusal {
  return {
    refusalId: String(item.refusal_id),
    tenant: String(item.tenant),
    atMs: Number(item.at_ms),
    code: item.reason_code as RefusalCode,
    scope: String(item.scope),
    unit: item.unit as Unit,
    requested: Number(item.requested),
    remaining: Number(item.remaining),
    subject: item.subject as Refusal['subject'],
    action: item.action as Refusal['action'],
    keyId: item.key_id === undefined ? undefined : String(item.key_id),
    requestId: item.request_id === undefined ? undefined : String(item.request_id),
    traceId: typeof item.trace_id === 'string' ? item.trace_id : undefined,
    suppressed: Number(item.suppressed ?? 0),
  };
}
