import { randomBytes } from 'node:crypto';
import { config } from '../config/settings.js';
import type { Credential } from '../domain/caller.js';
import {
  type AttemptResult,
  abandoned,
  afterAttempt,
  type Delivery,
  type DeliveryOrigin,
  type DeliveryStatus,
  isFinished,
  type WebhookRequest,
} from '../domain/deliveries.js';
import { EVENT_SOURCE, type EventDocument, SYSTEM_TENANT } from '../domain/events.js';
import { derivedId } from '../domain/fingerprint.js';
import { tenantClosed } from '../domain/tenant.js';
import type { WebhookSecurity } from '../domain/webhook-security.js';
import { afterFailure, deliverable, type Subscription } from '../domain/webhooks.js';
import { log } from '../log.js';
import {
  getDelivery,
  insertDeliveries,
  queryDeliveries,
  recordAttempt,
} from '../store/deliveries.js';
import { getLoggedEvent } from '../store/event-log.js';
import { getTenant } from '../store/tenants.js';
import {
  disableSubscription,
  getSubscriptionForDelivery,
  recordDeliveryOutcome,
  subscriptionsOf,
} from '../store/webhooks.js';
import { recordMetric } from '../telemetry/invocation.js';
import { TtlCache } from '../ttl-cache.js';
import { type Page, type PageRequest, paged } from './pages.js';
import { readSubscription, webhookSecurity } from './webhooks.js';

/**
 * Webhook deliveries (docs/decisions.md § Events and webhooks): queued as records beside a
 * durable queue's message (SQS in AWS, the local worker's queue locally), attempted one at a
 * time by the delivery function — the only code that opens a signing secret — and every attempt
 * recorded on the delivery. Ports keep the queue, the HTTP client and the sealing outside.
 */

/** What a queue message names: a delivery record. */
export interface DeliveryRef {
  readonly subscriptionId: string;
  readonly createdAtMs: number;
  readonly deliveryId: string;
}

export interface DeliveryQueue {
  /** Queues an attempt of each after `delayMs`; answers how many were queued. */
  send(refs: readonly DeliveryRef[], delayMs?: number): Promise<number>;
}

export interface AttemptPorts {
  readonly open: (sealed: string, subscriptionId: string) => Promise<string>;
  readonly post: (request: WebhookRequest, security: WebhookSecurity) => Promise<AttemptResult>;
  readonly clock: () => number;
}

const retentionMs = () => config.EVENT_RETENTION_DAYS * 86_400_000;
const refOf = (d: Delivery): DeliveryRef => ({
  subscriptionId: d.subscriptionId,
  createdAtMs: d.createdAtMs,
  deliveryId: d.deliveryId,
});

/** A new delivery of an event to a subscription, PENDING. */
function pendingDelivery(
  s: Subscription,
  e: EventDocument,
  origin: DeliveryOrigin,
  deliveryId: string,
  createdAtMs: number,
  traceFlags?: string,
): Delivery {
  return {
    deliveryId,
    subscriptionId: s.subscriptionId,
    tenant: s.tenant,
    eventId: e.event_id,
    eventType: e.event_type,
    origin,
    status: 'PENDING',
    createdAtMs,
    attemptedAtMs: createdAtMs,
    attempts: 0,
    ...(e.trace_id !== undefined && { traceId: e.trace_id }),
    ...(traceFlags !== undefined && { traceFlags, traceparentInboundValid: true }),
  };
}

/**
 * Records and queues deliveries; answers how many were queued. A delivery found already
 * recorded (a redelivered stream record) is queued again only while nothing came of it yet.
 */
async function enqueue(deliveries: readonly Delivery[], queue: DeliveryQueue): Promise<number> {
  if (deliveries.length === 0) return 0;
  const stored = await insertDeliveries(deliveries, retentionMs());
  const due = deliveries.filter((_d, i) => {
    const found = stored[i];
    return found === 'new' || (found?.status === 'PENDING' && found.attempts === 0);
  });
  return queue.send(due.map(refOf));
}

/** A tenant's subscriptions and the operator's, read at most once per WEBHOOK_CACHE_TTL_MS. */
const cached = new TtlCache<Subscription[]>(() => config.WEBHOOK_CACHE_TTL_MS);

async function subscriptionsFor(tenant: string, now: number): Promise<Subscription[]> {
  const hit = cached.get(tenant, now);
  if (hit) return hit.value;
  const subscriptions = await subscriptionsOf(tenant);
  cached.set(tenant, subscriptions, now);
  return subscriptions;
}

/** A subscription changed: the next events of its owner read the list again. */
export function forgetSubscriptions(tenant: string): void {
  if (tenant === SYSTEM_TENANT) cached.clear();
  else cached.delete(tenant);
}

/**
 * The deliveries of new events: every ACTIVE subscription that selects each (its owner's and
 * the operator's), recorded and queued. Delivery ids derive from (subscription, event), so a
 * batch seen again queues nothing twice.
 */
export async function dispatchEvents(
  events: readonly EventDocument[],
  queue: DeliveryQueue,
  now: number,
  /** The inbound traceparent flags of the requests they came from, by event id. */
  flags: ReadonlyMap<string, string> = new Map(),
): Promise<number> {
  const deliveries: Delivery[] = [];
  for (const e of events) {
    if (e.event_type === 'system.webhook_delivery_failed') continue; // never about itself
    const owners = e.tenant_id === SYSTEM_TENANT ? [SYSTEM_TENANT] : [e.tenant_id, SYSTEM_TENANT];
    for (const owner of owners) {
      for (const s of await subscriptionsFor(owner, now)) {
        if (!deliverable(s, e)) continue;
        const id = derivedId('dlv', s.subscriptionId, e.event_id);
        const at = Date.parse(e.timestamp);
        deliveries.push(pendingDelivery(s, e, 'event', id, at, flags.get(e.event_id)));
      }
    }
  }
  return enqueue(deliveries, queue);
}

/** Deliveries of a replay: each selected event again, as a new delivery. */
export function enqueueReplay(
  s: Subscription,
  events: readonly EventDocument[],
  replayId: string,
  queue: DeliveryQueue,
  now: number,
): Promise<number> {
  const deliveries = events.map((e, i) =>
    pendingDelivery(
      s,
      e,
      'replay',
      derivedId('dlv', s.subscriptionId, e.event_id, replayId),
      now + i,
    ),
  );
  return enqueue(deliveries, queue);
}

/** What became of a queued attempt: done, or retry after `retryInMs`. */
export interface AttemptOutcome {
  readonly retryInMs?: number | undefined;
}

/**
 * One queued attempt of one delivery: read it, its subscription (with the sealed secret) and
 * its event; attempt; record the attempt (only over the state it was made from: a duplicate
 * message records nothing); then the subscription's run of failures, and its auto-disable.
 */
export async function attemptDelivery(
  ref: DeliveryRef,
  ports: AttemptPorts,
): Promise<AttemptOutcome> {
  const delivery = await getDelivery(ref);
  if (!delivery || isFinished(delivery)) return {};
  const now = ports.clock();
  const found = await getSubscriptionForDelivery(ref.subscriptionId);
  if (found?.subscription.status !== 'ACTIVE') {
    const why = found ? `subscription is ${found.subscription.status}` : 'subscription was deleted';
    await recordAttempt(delivery, abandoned(delivery, why, now));
    return {};
  }
  const event = await getLoggedEvent(delivery.eventId);
  if (!event) {
    await recordAttempt(delivery, abandoned(delivery, 'event is no longer kept', now));
    return {};
  }
  const after = await attempt(found.subscription, found.sealed, delivery, event, ports);
  if (!(await recordAttempt(delivery, after))) return {}; // another worker recorded this attempt
  report(found.subscription, after);
  if (after.status === 'RETRYING')
    return { retryInMs: Math.max(0, (after.nextRetryAtMs ?? now) - ports.clock()) };
  await settleSubscription(found.subscription, after, ports.clock());
  return {};
}

async function attempt(
  s: Subscription,
  sealed: { readonly secret: string; readonly headers?: string | undefined },
  d: Delivery,
  event: { readonly event: EventDocument; readonly body: string },
  ports: AttemptPorts,
): Promise<Delivery> {
  const at = ports.clock();
  const headers = sealed.headers
    ? (JSON.parse(await ports.open(sealed.headers, s.subscriptionId)) as Record<string, string>)
    : undefined;
  const result = await ports.post(
    {
      url: s.url,
      body: event.body,
      secret: await ports.open(sealed.secret, s.subscriptionId),
      eventId: event.event.event_id,
      eventType: event.event.event_type,
      deliveryId: d.deliveryId,
      attempt: d.attempts + 1,
      traceId: d.traceId ?? event.event.trace_id ?? traceOfDelivery(d),
      traceFlags: d.traceparentInboundValid ? (d.traceFlags ?? '01') : '01',
      requestId: event.event.request_id,
      headers,
    },
    await webhookSecurity(),
  );
  return afterAttempt(d, s.retryPolicy, result, at);
}

const traceOfDelivery = (d: Delivery) => derivedId('t', d.deliveryId).slice(2, 34);

function report(s: Subscription, d: Delivery): void {
  recordMetric(
    'WebhookDeliveries',
    1,
    { Outcome: d.status },
    s.tenant === SYSTEM_TENANT ? undefined : s.tenant,
  );
  log.info('webhook delivery attempt', {
    delivery_id: d.deliveryId,
    subscription_id: d.subscriptionId,
    event_id: d.eventId,
    attempt: d.attempts,
    status: d.status,
    response_status: d.responseStatus,
    response_time_ms: d.responseTimeMs,
    ...(d.errorMessage && d.status !== 'SUCCESS' && { error: d.errorMessage }),
  });
}

/**
 * A finished delivery on its subscription (a probe counts for nothing): success clears the run
 * of failures; a delivery given up on adds one, and the run reaching `disable_after_failures`
 * disables it, audited as the service's doing, whence `webhook.disabled`.
 */
async function settleSubscription(s: Subscription, d: Delivery, now: number): Promise<void> {
  if (d.origin === 'test') return;
  const at = new Date(now).toISOString();
  const failures = await recordDeliveryOutcome(s.subscriptionId, d.status === 'SUCCESS', at);
  if (d.status === 'SUCCESS' || failures === undefined) return;
  const { disables } = afterFailure({ ...s, consecutiveFailures: failures - 1 });
  if (!disables) return;
  const outcome = await disableSubscription(s, {
    tenant: s.tenant,
    actor: { kind: 'system' },
    requestId: `dlv-${d.deliveryId}`,
    atMs: now,
    ...(d.traceId !== undefined && { traceId: d.traceId }),
    action: 'webhook.disable',
    before: { ...s, consecutiveFailures: failures },
    after: { ...s, status: 'DISABLED', consecutiveFailures: failures },
    detail: { delivery_id: d.deliveryId, consecutive_failures: failures },
  });
  if (outcome === 'disabled') {
    log.warn('webhook subscription disabled after consecutive failures', {
      subscription_id: s.subscriptionId,
      consecutive_failures: failures,
    });
  }
}

/** The reference's WebhookTestResponse, before the edge renders it. */
export interface ProbeResult {
  readonly success: boolean;
  readonly responseStatus?: number | undefined;
  readonly responseTimeMs: number;
  readonly errorMessage?: string | undefined;
  readonly eventId: string;
}

/** The synthetic `system.webhook_test` event a probe sends (never logged, never dispatched). */
export function testEvent(
  s: Subscription,
  now: number,
  requestId: string,
  traceId?: string,
): EventDocument {
  const eventId = `evt_${randomBytes(16).toString('hex')}`;
  return {
    event_id: eventId,
    event_type: 'system.webhook_test',
    category: 'system',
    timestamp: new Date(now).toISOString(),
    tenant_id: s.tenant,
    actor: { type: 'system' },
    source: EVENT_SOURCE,
    data: {
      component: 'webhook_dispatcher',
      message: `Test delivery to subscription ${s.subscriptionId}`,
      severity: 'info',
      details: { subscription_id: s.subscriptionId },
    },
    request_id: requestId,
    ...(traceId !== undefined && { trace_id: traceId }),
  };
}

/**
 * The /test probe, run where secrets are opened (the delivery function): one attempt, no retry,
 * recorded as a delivery, not counted against the subscription (the reference: it changes
 * neither its status nor its run of failures).
 */
export async function probeSubscription(
  subscriptionId: string,
  request: { readonly requestId: string; readonly traceId?: string | undefined },
  ports: AttemptPorts,
): Promise<ProbeResult | undefined> {
  const found = await getSubscriptionForDelivery(subscriptionId);
  if (!found) return undefined;
  const now = ports.clock();
  const event = testEvent(found.subscription, now, request.requestId, request.traceId);
  const delivery = pendingDelivery(
    found.subscription,
    event,
    'test',
    `dlv_${randomBytes(16).toString('hex')}`,
    now,
  );
  await insertDeliveries([delivery], retentionMs());
  const after = await attempt(
    found.subscription,
    found.sealed,
    delivery,
    { event, body: JSON.stringify(event) },
    ports,
  );
  await recordAttempt(delivery, after);
  report(found.subscription, after);
  return {
    success: after.status === 'SUCCESS',
    responseStatus: after.responseStatus,
    responseTimeMs: after.responseTimeMs ?? 0,
    ...(after.status !== 'SUCCESS' && { errorMessage: after.errorMessage }),
    eventId: event.event_id,
  };
}

/** Where a probe runs: this process (locally), or the delivery function (AWS). */
export type Prober = (
  subscriptionId: string,
  request: { readonly requestId: string; readonly traceId?: string | undefined },
) => Promise<ProbeResult | undefined>;

/** testWebhookSubscription and testTenantWebhook: the owner's probe (404 for another tenant's). */
export async function testSubscription(
  caller: Credential,
  id: string,
  request: { readonly requestId: string; readonly traceId?: string | undefined },
  probe: Prober,
): Promise<ProbeResult> {
  const { subscription } = await readSubscription(caller, id);
  if (subscription.tenant !== SYSTEM_TENANT) {
    if ((await getTenant(subscription.tenant))?.status === 'CLOSED') {
      throw tenantClosed(subscription.tenant);
    }
  }
  const result = await probe(id, request);
  if (!result) await readSubscription(caller, id); // deleted meanwhile: 404
  return result as ProbeResult;
}

export interface DeliveryFilters extends PageRequest {
  readonly status?: DeliveryStatus | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
}

/** listWebhookDeliveries and listTenantWebhookDeliveries: newest first. */
export async function listDeliveries(
  caller: Credential,
  id: string,
  q: DeliveryFilters,
): Promise<Page<Delivery>> {
  await readSubscription(caller, id);
  const { cursor: _c, limit, ...binding } = q;
  return paged({ route: 'deliveries', id, ...binding }, q, async (after) => {
    const page = await queryDeliveries({
      subscriptionId: id,
      status: q.status,
      fromMs: q.from,
      toMs: q.to,
      after,
      limit,
    });
    return { items: page.deliveries, nextPosition: page.nextPosition };
  });
}
