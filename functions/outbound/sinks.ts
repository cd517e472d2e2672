import { webhookSecret } from '../config/secrets.js';
import { config } from '../config/settings.js';
import type { BudgetEvent } from '../domain/budget-events.js';
import { log } from '../log.js';
import type { EventBus, EventWebhooks } from '../use-cases/publish-budget-events.js';
import { putOnBus } from './bus.js';
import { budgetEventMessage } from './messages.js';
import { type DispatcherStats, WebhookDispatcher } from './webhooks.js';

// The outbound edge's adapters for the budget events use case's ports, as http/handler.ts is the
// inbound edge's: a domain event rendered once into its wire message (messages.ts), then put on
// the EventBridge bus (bus.ts) or POSTed, signed, to each webhook (webhooks.ts).

/** The stack's bus (EVENT_BUS_NAME): source `budget-reservations`, detail-type the event type. */
export const busOf = (busName: string): EventBus => ({
  put: (events) => putOnBus(busName, events.map(budgetEventMessage)),
});

let dispatcher: WebhookDispatcher | undefined;
/** Drops already handed out by `takeDropped` (deliveries outlive batches). */
let droppedTaken = 0;

const delivery = (e: BudgetEvent) => {
  const m = budgetEventMessage(e);
  return { eventId: m.event_id, eventType: m.event_type, body: JSON.stringify(m) };
};

/** The process's webhooks (one dispatcher, its queues outliving batches), when WEBHOOK_URLS names any. */
export function webhooksOf(): EventWebhooks | undefined {
  if (config.WEBHOOK_URLS.length === 0) return undefined;
  dispatcher ??= new WebhookDispatcher({
    urls: config.WEBHOOK_URLS,
    secret: webhookSecret,
    maxRetries: config.WEBHOOK_MAX_RETRIES,
    initialDelayMs: config.WEBHOOK_RETRY_INITIAL_MS,
    maxDelayMs: config.WEBHOOK_RETRY_MAX_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    log,
  });
  const d = dispatcher;
  return {
    enqueue: (events) => d.enqueue(events.map(delivery)),
    idle: (deadline) => d.idle(deadline),
    takeDropped: () => {
      const dropped = d.stats().dropped - droppedTaken;
      droppedTaken += dropped;
      return dropped;
    },
    stats: () => ({ ...d.stats() }),
  };
}

/** The local runner's shutdown: pending deliveries are abandoned. */
export function stopWebhooks(): void {
  dispatcher?.stop();
}

/** Local runner and tests: what the dispatcher has done so far. */
export const webhookStats = (): DispatcherStats | undefined => dispatcher?.stats();
