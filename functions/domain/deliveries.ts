import type { EventType } from './events.js';
import { type RetryPolicy, retryDelayMs } from './webhooks.js';

/**
 * One delivery of one event to one subscription (the reference's `WebhookDelivery`): queued
 * (PENDING), then after each attempt SUCCESS, RETRYING (a retry scheduled) or FAILED (retries
 * exhausted, or the subscription no longer takes it). Its fields after an attempt describe that
 * attempt; `attempts` counts them all.
 */
export const DELIVERY_STATUSES = ['PENDING', 'SUCCESS', 'FAILED', 'RETRYING'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Why a delivery exists: the event's dispatch, an operator's replay, or a /test probe. */
export type DeliveryOrigin = 'event' | 'replay' | 'test';

export interface Delivery {
  readonly deliveryId: string;
  readonly subscriptionId: string;
  /** The subscription's owner: deliveries are listed and counted per tenant. */
  readonly tenant: string;
  readonly eventId: string;
  readonly eventType: EventType;
  readonly origin: DeliveryOrigin;
  readonly status: DeliveryStatus;
  /** When it was queued: its place in the subscription's listing. */
  readonly createdAtMs: number;
  /** The last attempt's start (the queueing time until there is one). */
  readonly attemptedAtMs: number;
  readonly completedAtMs?: number | undefined;
  readonly attempts: number;
  readonly responseStatus?: number | undefined;
  readonly responseTimeMs?: number | undefined;
  readonly errorMessage?: string | undefined;
  readonly nextRetryAtMs?: number | undefined;
  /** The originating event's trace, carried onto the outbound `traceparent`. */
  readonly traceId?: string | undefined;
  readonly traceFlags?: string | undefined;
  readonly traceparentInboundValid?: boolean | undefined;
}

/** What one POST came to: the receiver's status (0: no answer) and how long it took. */
export interface AttemptResult {
  readonly status: number;
  readonly latencyMs: number;
  /** Why it failed, for the record: never the URL's path or a secret. */
  readonly error?: string | undefined;
}

/** One attempt as the outbound edge makes it (outbound/webhooks.ts). */
export interface WebhookRequest {
  readonly url: string;
  /** The event document's JSON text, signed and sent byte for byte. */
  readonly body: string;
  readonly secret: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly deliveryId: string;
  readonly attempt: number;
  readonly traceId: string;
  readonly traceFlags: string;
  readonly requestId?: string | undefined;
  /** The subscription's own headers; never in place of the protocol's. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

export const succeeded = (r: AttemptResult): boolean => r.status >= 200 && r.status < 300;

/**
 * The delivery after an attempt made at `at`: SUCCESS on a 2xx; otherwise RETRYING with the
 * policy's next delay while retries remain, else FAILED. Every non-2xx answer and every
 * network error or timeout counts as a failure (the reference's FAILURE HANDLING); a test probe
 * is never retried.
 */
export function afterAttempt(
  d: Delivery,
  policy: RetryPolicy,
  result: AttemptResult,
  at: number,
): Delivery {
  const attempts = d.attempts + 1;
  const base = {
    ...d,
    attempts,
    attemptedAtMs: at,
    responseStatus: result.status > 0 ? result.status : undefined,
    responseTimeMs: Math.round(result.latencyMs),
    nextRetryAtMs: undefined,
  };
  if (succeeded(result)) {
    return {
      ...base,
      status: 'SUCCESS',
      errorMessage: undefined,
      completedAtMs: at + base.responseTimeMs,
    };
  }
  const errorMessage = result.error ?? `HTTP ${result.status}`;
  const retriesLeft = d.origin !== 'test' && attempts <= policy.maxRetries;
  if (!retriesLeft) {
    return { ...base, status: 'FAILED', errorMessage, completedAtMs: at + base.responseTimeMs };
  }
  return {
    ...base,
    status: 'RETRYING',
    errorMessage,
    nextRetryAtMs: at + base.responseTimeMs + retryDelayMs(policy, attempts),
  };
}

/** A delivery that will not be attempted (the subscription went, paused, or was disabled). */
export const abandoned = (d: Delivery, why: string, at: number): Delivery => ({
  ...d,
  status: 'FAILED',
  errorMessage: why,
  completedAtMs: at,
  nextRetryAtMs: undefined,
});

export const isFinished = (d: Delivery): boolean => d.status === 'SUCCESS' || d.status === 'FAILED';
