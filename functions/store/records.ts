import { eventOf, isEventItem } from './entities/event.js';
import {
  type RecordFacts,
  type StoredOutcome,
  settledOutcomeOf,
  storedOutcomeOf,
} from './entities/outcome.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import type { Item } from './expressions.js';

// The records that answer replays (a reservation, an event, an idempotency record), read
// whatever their family: the stored outcome, with the record it is kept on decoded, from which
// the operation's codec rebuilds a compact result (use-cases/outcomes.ts).

const factsOf = (item: Item): RecordFacts =>
  isReservationItem(item)
    ? { reservation: reservationOf(item) }
    : isEventItem(item)
      ? { event: eventOf(item) }
      : {};

/** The outcome a record stores, if any. */
export const recordedOutcomeOf = (item: Item | undefined): StoredOutcome | undefined =>
  storedOutcomeOf(item, factsOf);

/** The outcome a reservation records for this commit or release request, if it does. */
export const settledOutcome = (
  item: Item | undefined,
  operation: string,
  key: string,
): StoredOutcome | undefined => settledOutcomeOf(item, operation, key, factsOf);
