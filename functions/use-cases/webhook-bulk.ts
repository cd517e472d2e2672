import { randomBytes } from 'node:crypto';
import type { Credential } from '../domain/caller.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { type EventDocument, type EventType, SYSTEM_TENANT } from '../domain/events.js';
import { fingerprint } from '../domain/fingerprint.js';
import { type Subscription, selects, statusChange } from '../domain/webhooks.js';
import { queryEvents } from '../store/event-log.js';
import { putIdempotencyRecord, readIdempotencyRecord } from '../store/idempotency.js';
import { holdForReplay, querySubscriptions, releaseReplayHold } from '../store/webhooks.js';
import type { WriteContext } from './context.js';
import { type DeliveryQueue, enqueueReplay } from './deliveries.js';
import { retentionStart } from './event-log.js';
import {
  changeSubscription,
  readSubscription,
  removeSubscription,
  type SubscriptionFilters,
  type WebhookPorts,
} from './webhooks.js';

/** The operator's many-at-once webhook operations: replay and bulk action. */

export interface ReplayRequest {
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly eventTypes?: readonly EventType[] | undefined;
  readonly maxEvents: number;
}

export interface ReplayAccepted {
  readonly replayId: string;
  readonly eventsQueued: number;
  readonly estimatedCompletionSeconds: number;
}

/** Events a replay looks at, at most: a wider window is refused (narrow it). */
export const REPLAY_SCAN_LIMIT = 10_000;
/** How long a replay holds its subscription against another (it finishes well before). */
const REPLAY_HOLD_MS = 60_000;

/**
 * replayEvents (the reference's COMPLETENESS rule: all-or-narrow): every event in [from, to]
 * the subscription selects (and `event_types` narrows) is queued again as a new delivery, or
 * the request is refused with 400 before anything is queued — more than `max_events` of them,
 * or more than REPLAY_SCAN_LIMIT events in the window. One replay per subscription at a time
 * (409 REPLAY_IN_PROGRESS). Oldest first. A tenant replays its own subscriptions (another's is
 * not found), and they select only its own events.
 */
export async function replayEvents(
  caller: Credential,
  subscriptionId: string,
  request: ReplayRequest,
  context: WriteContext,
  queue: DeliveryQueue,
): Promise<ReplayAccepted> {
  const { subscription } = await readSubscription(caller, subscriptionId);
  if (!(await holdForReplay(subscriptionId, context.now, context.now + REPLAY_HOLD_MS))) {
    throw new DomainError('REPLAY_IN_PROGRESS', `a replay to ${subscriptionId} is in progress`, {
      subscription_id: subscriptionId,
    });
  }
  try {
    const selected = await selectForReplay(subscription, request, context.now);
    const replayId = `rpl_${randomBytes(12).toString('hex')}`;
    // A paused or disabled subscription takes no deliveries: nothing is queued (best effort).
    const eventsQueued =
      subscription.status === 'ACTIVE'
        ? await enqueueReplay(subscription, selected, replayId, queue, context.now)
        : 0;
    return { replayId, eventsQueued, estimatedCompletionSeconds: Math.ceil(eventsQueued / 10) };
  } finally {
    await releaseReplayHold(subscriptionId);
  }
}

async function selectForReplay(
  s: Subscription,
  request: ReplayRequest,
  now: number,
): Promise<EventDocument[]> {
  const selected: EventDocument[] = [];
  let examined = 0;
  let after: string | undefined;
  do {
    const page = await queryEvents({
      tenant: s.tenant === SYSTEM_TENANT ? undefined : s.tenant,
      fromMs: Math.max(request.from ?? 0, retentionStart(now)),
      toMs: request.to ?? now,
      newestFirst: false,
      after,
      limit: 100,
    });
    examined += page.events.length;
    if (examined > REPLAY_SCAN_LIMIT) {
      throw invalidRequest(
        `the window holds more than ${REPLAY_SCAN_LIMIT} events: narrow from/to`,
        { scan_limit: REPLAY_SCAN_LIMIT },
      );
    }
    for (const { event } of page.events) {
      if (!selects(s, event)) continue;
      if (request.eventTypes && !request.eventTypes.includes(event.event_type)) continue;
      selected.push(event);
      if (selected.length > request.maxEvents) {
        throw invalidRequest(
          `the window holds more than max_events (${request.maxEvents}) deliverable events: narrow from/to or raise max_events (at most 1000)`,
          { max_events: request.maxEvents },
        );
      }
    }
    after = page.nextPosition;
  } while (after !== undefined);
  return selected;
}

export type BulkAction = 'PAUSE' | 'RESUME' | 'DELETE';

export interface BulkRequest {
  readonly filter: Omit<SubscriptionFilters, 'limit' | 'cursor'>;
  readonly action: BulkAction;
  readonly expectedCount?: number | undefined;
  readonly idempotencyKey: string;
}

export interface RowOutcome {
  readonly id: string;
  readonly errorCode?: string | undefined;
  readonly message?: string | undefined;
  readonly reason?: string | undefined;
}

export interface BulkResult {
  readonly action: BulkAction;
  readonly totalMatched: number;
  readonly succeeded: readonly RowOutcome[];
  readonly failed: readonly RowOutcome[];
  readonly skipped: readonly RowOutcome[];
  readonly idempotencyKey: string;
}

/** The reference's hard limit: a wider filter is refused (narrow it). */
export const BULK_LIMIT = 500;

/**
 * bulkActionWebhooks: PAUSE, RESUME or DELETE every subscription the filter matches (at most
 * 500; `expected_count` must match when given, else 409 COUNT_MISMATCH and nothing written).
 * Each row is its own audited change (so each emits its own event); a row that fails does not
 * stop the others. The same idempotency key answers the first result again.
 */
export async function bulkActionWebhooks(
  request: BulkRequest,
  context: WriteContext,
  ports: WebhookPorts,
): Promise<BulkResult> {
  const scope = {
    tenant: SYSTEM_TENANT,
    operation: 'bulkActionWebhooks',
    key: request.idempotencyKey,
  };
  const print = fingerprint({
    filter: request.filter,
    action: request.action,
    expected: request.expectedCount,
  });
  const earlier = await readIdempotencyRecord(scope);
  if (earlier) {
    if (earlier.fingerprint !== print) {
      throw new DomainError(
        'IDEMPOTENCY_MISMATCH',
        'idempotency_key was used with another request',
        {
          idempotency_key: request.idempotencyKey,
        },
      );
    }
    if (earlier.result.form === 'whole') return earlier.result.value as BulkResult;
  }
  const matched = await matching(request.filter);
  if (request.expectedCount !== undefined && request.expectedCount !== matched.length) {
    throw new DomainError(
      'COUNT_MISMATCH',
      `the filter matches ${matched.length} subscriptions, not the expected ${request.expectedCount}`,
      { expected_count: request.expectedCount, total_matched: matched.length },
    );
  }
  const succeeded: RowOutcome[] = [];
  const failed: RowOutcome[] = [];
  const skipped: RowOutcome[] = [];
  const detail = { bulk_action: request.action.toLowerCase() };
  for (const s of matched) {
    const id = s.subscriptionId;
    try {
      if (request.action === 'DELETE') {
        await removeSubscription({ kind: 'admin' }, id, context, { detail });
        succeeded.push({ id });
        continue;
      }
      const target = request.action === 'PAUSE' ? 'PAUSED' : 'ACTIVE';
      const verdict = statusChange(s, target);
      if (verdict === 'already') skipped.push({ id, reason: 'ALREADY_IN_TARGET_STATE' });
      else if (verdict === 'refused') {
        failed.push({
          id,
          errorCode: 'INVALID_TRANSITION',
          message: `a ${s.status} subscription is re-enabled by PATCH, not RESUME`,
        });
      } else {
        await changeSubscription({ kind: 'admin' }, id, { status: target }, context, ports, {
          detail,
        });
        succeeded.push({ id });
      }
    } catch (error) {
      if (error instanceof DomainError && error.code === 'NOT_FOUND') {
        skipped.push({ id, reason: 'ALREADY_DELETED' });
      } else {
        const code = error instanceof DomainError ? error.code : 'INTERNAL_ERROR';
        failed.push({
          id,
          errorCode: code,
          message: error instanceof DomainError ? error.message : 'internal error',
        });
      }
    }
  }
  const result: BulkResult = {
    action: request.action,
    totalMatched: matched.length,
    succeeded,
    failed,
    skipped,
    idempotencyKey: request.idempotencyKey,
  };
  await putIdempotencyRecord(scope, { fingerprint: print, result }, context.now);
  return result;
}

/** Every subscription the filter matches, refused past BULK_LIMIT. */
async function matching(filter: BulkRequest['filter']): Promise<Subscription[]> {
  const search = filter.search?.toLowerCase();
  const found: Subscription[] = [];
  let after: string | undefined;
  do {
    const page = await querySubscriptions({
      tenant: filter.tenantId,
      after,
      limit: 100,
      matches: (s) =>
        (filter.status === undefined || s.status === filter.status) &&
        (filter.eventType === undefined || s.eventTypes.includes(filter.eventType)) &&
        (search === undefined ||
          s.subscriptionId.toLowerCase().includes(search) ||
          s.url.toLowerCase().includes(search)),
    });
    found.push(...page.subscriptions);
    if (found.length > BULK_LIMIT) {
      throw invalidRequest(`the filter matches more than ${BULK_LIMIT} subscriptions: narrow it`, {
        reason: 'LIMIT_EXCEEDED',
        limit: BULK_LIMIT,
      });
    }
    after = page.nextPosition;
  } while (after !== undefined);
  return found;
}
