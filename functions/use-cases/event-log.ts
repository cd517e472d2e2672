import { config } from '../config/settings.js';
import type { Credential } from '../domain/caller.js';
import { DomainError } from '../domain/errors.js';
import {
  type EventCategory,
  type EventDocument,
  type EventType,
  isTenantCategory,
  TENANT_CATEGORIES,
} from '../domain/events.js';
import { type EventFilter, getLoggedEvent, queryEvents } from '../store/event-log.js';
import { type Page, type PageRequest, paged } from './pages.js';

/**
 * The event log (docs/decisions.md § Events and webhooks): every event the service emitted in
 * the retention window, newest first by default, with the reference's filters. The operator
 * reads any tenant's or all of them; a tenant key its own tenant's events of the
 * tenant-accessible categories only.
 */
export interface EventFilters extends PageRequest {
  readonly tenantId?: string | undefined;
  readonly eventType?: EventType | undefined;
  readonly category?: EventCategory | undefined;
  readonly scope?: string | undefined;
  readonly correlationId?: string | undefined;
  readonly traceId?: string | undefined;
  readonly requestId?: string | undefined;
  readonly search?: string | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly sortDir?: 'asc' | 'desc' | undefined;
}

/** The start of what is kept: older events may linger until the TTL deletes them, unlisted. */
export const retentionStart = (now: number): number =>
  now - config.EVENT_RETENTION_DAYS * 86_400_000;

/** listEvents (the operator) and listTenantEvents (a tenant key: its own, tenant categories). */
export function listEvents(
  reader: Credential,
  q: EventFilters,
  now: number,
): Promise<Page<EventDocument>> {
  const tenant = reader.kind === 'tenant' ? reader.tenant : q.tenantId;
  const filter: EventFilter = {
    eventType: q.eventType,
    category: q.category,
    scope: q.scope,
    correlationId: q.correlationId,
    traceId: q.traceId,
    requestId: q.requestId,
    search: q.search,
    ...(reader.kind === 'tenant' && { categories: TENANT_CATEGORIES }),
  };
  const { cursor: _c, limit, ...binding } = q;
  return paged({ route: 'events', ...binding, tenantId: tenant }, q, async (after) => {
    const page = await queryEvents({
      ...filter,
      tenant,
      fromMs: Math.max(q.from ?? 0, retentionStart(now)),
      toMs: q.to,
      newestFirst: q.sortDir !== 'asc',
      after,
      limit,
    });
    return { items: page.events.map((e) => e.event), nextPosition: page.nextPosition };
  });
}

/** getEvent: one event of the log (the operator's). */
export async function readEvent(eventId: string, now: number): Promise<EventDocument> {
  const found = await getLoggedEvent(eventId);
  if (!found || Date.parse(found.event.timestamp) < retentionStart(now)) {
    throw new DomainError('NOT_FOUND', `event ${eventId} does not exist`, { event_id: eventId });
  }
  return found.event;
}

/** Whether a tenant may see an event: its own, of a tenant-accessible category. */
export const visibleToTenant = (tenant: string, e: EventDocument): boolean =>
  e.tenant_id === tenant && isTenantCategory(e.category);
