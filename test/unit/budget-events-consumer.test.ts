import type { PutEventsCommand, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { BudgetEventMessage } from '../../functions/outbound/schemas.js';

// The consumer with the bus at the client's `send` seam: which records it asks Lambda to retry
// when PutEvents fails entries. Ledger records of unsharded budgets need no table read.
process.env.EVENT_BUS_NAME = 'budget-events-test';
process.env.LOG_LEVEL = 'silent';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

let handler: typeof import('../../functions/jobs/budget-events.js')['handler'];
let entries: PutEventsRequestEntry[][] = [];
let failing: (e: PutEventsRequestEntry) => boolean = () => false;

beforeAll(async () => {
  const { EventBridgeClient } = await import('@aws-sdk/client-eventbridge');
  vi.spyOn(EventBridgeClient.prototype, 'send').mockImplementation(async (command) => {
    const sent = (command as PutEventsCommand).input.Entries ?? [];
    entries.push(sent);
    return {
      Entries: sent.map((e) => (failing(e) ? { ErrorCode: 'InternalFailure' } : { EventId: 'x' })),
      FailedEntryCount: sent.filter(failing).length,
    };
  });
  ({ handler } = await import('../../functions/jobs/budget-events.js'));
});

const ledgerItem = (reserved: number) => ({
  pk: 'LEDGER#tenant:acme#TOKENS',
  sk: '-',
  type: 'ledger',
  tenant: 'acme',
  scope: 'tenant:acme',
  unit: 'TOKENS',
  allocated: 1_000,
  spent: 0,
  reserved,
  debt: 0,
  overdraft_limit: 0,
  remaining: 1_000 - reserved,
});

const hold = (seq: string, from: number, to: number): DynamoDBRecord => ({
  eventID: `event-${seq}`,
  eventName: 'MODIFY',
  dynamodb: {
    SequenceNumber: seq,
    ApproximateCreationDateTime: 1_790_000_000,
    OldImage: marshall(ledgerItem(from)) as never,
    NewImage: marshall(ledgerItem(to)) as never,
  },
});

const typesOf = (sent: PutEventsRequestEntry[]) =>
  sent.map((e) => {
    const m = BudgetEventMessage.parse(JSON.parse(e.Detail ?? ''));
    return m.event_type === 'budget.threshold_crossed' ? m.data.threshold_percent : m.event_type;
  });

describe('the budget events consumer', () => {
  it('puts the events of a batch on the bus, in order, source and detail-type set', async () => {
    entries = [];
    failing = () => false;

    const result = await handler({ Records: [hold('1', 0, 500), hold('2', 500, 1_000)] });

    expect(result.batchItemFailures).toEqual([]);
    expect(entries).toHaveLength(1);
    expect(typesOf(entries[0] ?? [])).toEqual([50, 80, 100, 'budget.exhausted']);
    expect(entries[0]?.[0]).toMatchObject({
      EventBusName: 'budget-events-test',
      Source: 'budget-reservations',
      DetailType: 'budget.threshold_crossed',
    });
  });

  it('asks for a retry from the first record whose events the bus kept refusing', async () => {
    entries = [];
    failing = (e) => e.DetailType === 'budget.exhausted';

    const result = await handler({
      Records: [hold('1', 0, 500), hold('2', 500, 1_000), hold('3', 1_000, 900)],
    });

    expect(result.batchItemFailures).toEqual([{ itemIdentifier: '2' }]);
    // Put again (bounded) before giving up on it; the rest went through the first time.
    expect(entries.flat().filter((e) => e.DetailType === 'budget.exhausted').length).toBe(4);
  });
});

describe('publishBudgetEvents (the use case, its ports stood in for)', () => {
  it('sends webhooks only the events of the records before the first the bus kept refusing', async () => {
    const { publishBudgetEvents } = await import(
      '../../functions/use-cases/publish-budget-events.js'
    );
    const enqueued: string[] = [];
    const ports = {
      clock: () => 0,
      bus: {
        put: async (events: readonly { type: string }[]) =>
          new Set(events.flatMap((e, i) => (e.type === 'budget.exhausted' ? [i] : []))),
      },
      webhooks: {
        enqueue: (events: readonly { type: string }[]) =>
          enqueued.push(...events.map((e) => e.type)),
        idle: async () => true,
        takeDropped: () => 0,
        stats: () => ({}),
      },
    };

    const { retryFrom } = await publishBudgetEvents(
      [hold('1', 0, 500), hold('2', 500, 1_000), hold('3', 1_000, 900)],
      ports,
    );

    expect(retryFrom).toBe(1);
    expect(enqueued).toEqual(['budget.threshold_crossed']);
  });
});
