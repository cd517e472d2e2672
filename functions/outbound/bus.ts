import {
  EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { config } from '../config/settings.js';
import { EVENT_SOURCE, type EventDocument } from '../domain/events.js';
import { log } from '../log.js';

let client: EventBridgeClient | undefined;

/** PutEvents takes at most 10 entries per call. */
const PER_CALL = 10;
/** Rounds of putting again the entries a call reported failed (throttled, internal errors). */
const ENTRY_RETRIES = 3;

/** One bus entry: source `budget-reservations`, detail-type the event type, detail the event. */
export const busEntry = (busName: string, m: EventDocument): PutEventsRequestEntry => ({
  EventBusName: busName,
  Source: EVENT_SOURCE,
  DetailType: m.event_type,
  Detail: JSON.stringify(m),
  Time: new Date(m.timestamp),
});

/**
 * Puts the events on the bus, ten per call, putting again the entries a call failed; answers
 * the indexes of those that still failed (their stream records are retried).
 */
export async function putOnBus(
  busName: string,
  messages: readonly EventDocument[],
): Promise<Set<number>> {
  client ??= new EventBridgeClient({ region: config.AWS_REGION, maxAttempts: 3 });
  let pending = messages.map((_, i) => i);
  for (let round = 0; round <= ENTRY_RETRIES && pending.length > 0; round++) {
    if (round > 0) await new Promise((r) => setTimeout(r, 100 * 2 ** round * Math.random()));
    const failed: number[] = [];
    for (let i = 0; i < pending.length; i += PER_CALL) {
      const batch = pending.slice(i, i + PER_CALL);
      const out = await client
        .send(
          new PutEventsCommand({
            Entries: batch.map((j) => busEntry(busName, messages[j] as EventDocument)),
          }),
        )
        .catch((error: unknown) => {
          log.warn('PutEvents failed', { error, entries: batch.length });
          return undefined;
        });
      // A failed call fails its whole batch; entries answer one result each, in order.
      batch.forEach((j, k) => {
        if (!out || out.Entries?.[k]?.ErrorCode) failed.push(j);
      });
    }
    pending = failed;
  }
  return new Set(pending);
}
