import type { LambdaClient } from '@aws-sdk/client-lambda';
import { config } from '../config/settings.js';
import type { AttemptPorts, ProbeResult, Prober } from '../use-cases/deliveries.js';
import { probeSubscription } from '../use-cases/deliveries.js';
import type { EventBus } from '../use-cases/publish-events.js';
import type { WebhookPorts } from '../use-cases/webhooks.js';
import { putOnBus } from './bus.js';
import { webhookSealer } from './sealing.js';
import { postWebhook, resolveAll } from './webhooks.js';

// The outbound edge's adapters for the use cases' ports, as http/handler.ts is the inbound
// edge's: the EventBridge bus (bus.ts), the delivery queue (queue.ts), webhook POSTs
// (webhooks.ts), sealing (sealing.ts), and where a /test probe runs.

export { deliveryQueue } from './queue.js';

/** The stack's bus (EVENT_BUS_NAME): source `budget-reservations`, detail-type the event type. */
export const busOf = (busName: string): EventBus => ({
  put: (events) => putOnBus(busName, events),
});

/** What a delivery attempt needs: the sealed secrets opened, the POST, the clock. */
export const attemptPorts = (clock: () => number = Date.now): AttemptPorts => ({
  open: (sealed, id) => webhookSealer().open(sealed, id),
  post: (request, security) => postWebhook(request, security, config.WEBHOOK_TIMEOUT_MS),
  clock,
});

/** What the subscription routes need: name resolution and sealing (no opening). */
export const webhookPorts = (): WebhookPorts => ({
  resolve: resolveAll,
  seal: (plain, id) => webhookSealer().seal(plain, id),
});

let lambda: Promise<LambdaClient> | undefined;

/**
 * Where a /test probe runs. In AWS the delivery function (WEBHOOK_DELIVERY_FUNCTION), invoked
 * synchronously: it alone may open a signing secret. Locally, this process.
 */
export function prober(clock: () => number = Date.now): Prober {
  const fn = config.WEBHOOK_DELIVERY_FUNCTION;
  if (!fn) return (id, request) => probeSubscription(id, request, attemptPorts(clock));
  return async (id, request) => {
    const { InvokeCommand, LambdaClient } = await import('@aws-sdk/client-lambda');
    lambda ??= Promise.resolve(new LambdaClient({ region: config.AWS_REGION, maxAttempts: 2 }));
    const out = await (await lambda).send(
      new InvokeCommand({
        FunctionName: fn,
        Payload: Buffer.from(JSON.stringify({ probe: { subscriptionId: id, ...request } })),
      }),
    );
    if (out.FunctionError) throw new Error(`the delivery function failed: ${out.FunctionError}`);
    const answer = JSON.parse(Buffer.from(out.Payload ?? new Uint8Array()).toString('utf8')) as {
      result?: ProbeResult;
    };
    return answer.result;
  };
}
