import type { _Record as StreamRecord } from '@aws-sdk/client-dynamodb-streams';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { decodeStreamRecord } from '../../functions/store/stream.js';
import { lambdaRecord } from '../../infra/local/stream-poller.js';

/** A record as DynamoDB Local's GetRecords returns it (the SDK's shape). */
const sdkRecord = (
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
): StreamRecord => ({
  eventID: 'e-1',
  eventName,
  dynamodb: {
    ApproximateCreationDateTime: new Date('2026-11-23T10:00:00.000Z'),
    SequenceNumber: '000000000000000000042',
    ...(before && { OldImage: marshall(before) as never }),
    ...(after && { NewImage: marshall(after) as never }),
  },
});

const ledger = (reserved: number, extra: Record<string, unknown> = {}) => ({
  pk: 'LEDGER#tenant:acme#TOKENS',
  sk: '-',
  type: 'ledger',
  tenant: 'acme',
  scope: 'tenant:acme',
  unit: 'TOKENS',
  allocated: 100,
  spent: 0,
  reserved,
  debt: 0,
  overdraft_limit: 0,
  remaining: 100 - reserved,
  ...extra,
});

/** Read by the poller 250 ms after the write (DynamoDB Local's record says 10:00:00). */
const READ_AT = Date.parse('2026-11-23T10:00:00.250Z');
const decoded = (r: StreamRecord, readAt = READ_AT) =>
  decodeStreamRecord(lambdaRecord(r, 'arn:stream', readAt));

describe('decodeStreamRecord (through the local poller’s Lambda shape)', () => {
  it('times a record by the poller’s clock within the minute DynamoDB Local rounds it to', () => {
    const at = (record: StreamRecord, readAt: number) => decoded(record, readAt).at;
    const minute = sdkRecord('MODIFY', ledger(10), ledger(30));
    const exact: StreamRecord = {
      ...minute,
      dynamodb: { ...minute.dynamodb, ApproximateCreationDateTime: new Date(READ_AT - 40) },
    };

    expect(at(minute, Date.parse('2026-11-23T10:00:41.500Z'))).toBe(
      Date.parse('2026-11-23T10:00:41.500Z'),
    );
    // Read late (catching up): never past the minute the record names.
    expect(at(minute, Date.parse('2026-11-23T10:05:00.000Z'))).toBe(
      Date.parse('2026-11-23T10:00:59.999Z'),
    );
    // A store that keeps the time (not on a minute): its own.
    expect(at(exact, Date.parse('2026-11-23T10:05:00.000Z'))).toBe(READ_AT - 40);
  });

  it('decodes a ledger write with its thresholds, period and the record time', () => {
    const period = {
      period_kind: 'DAILY',
      period_amount: 100,
      period_start: 1_000,
      period_end: 2_000,
      thresholds: '[25,75]',
    };

    const change = decoded(sdkRecord('MODIFY', ledger(10, period), ledger(30, period)));

    expect(change).toMatchObject({
      kind: 'ledger',
      recordId: 'e-1',
      at: READ_AT,
      tenant: 'acme',
      shards: 1,
      before: { counters: { reserved: 10 } },
      after: {
        ref: { scope: 'tenant:acme' },
        counters: { reserved: 30, remaining: 70 },
        thresholds: [25, 75],
        period: { start: 1_000, end: 2_000 },
      },
    });
  });

  it('tells whether a shard write took budget, and ignores deletions and other items', () => {
    const shard = (remaining: number) => ({
      pk: 'LEDGER#tenant:acme#TOKENS#1',
      sk: '-',
      type: 'ledger-shard',
      scope: 'tenant:acme',
      unit: 'TOKENS',
      allocated: 50,
      spent: 0,
      reserved: 50 - remaining,
      debt: 0,
      remaining,
    });

    expect(decoded(sdkRecord('MODIFY', shard(50), shard(40)))).toMatchObject({
      kind: 'shard',
      pressure: true,
    });
    expect(decoded(sdkRecord('MODIFY', shard(40), shard(50)))).toMatchObject({ pressure: false });
    expect(decoded(sdkRecord('REMOVE', ledger(0), undefined)).kind).toBe('other');
    expect(decoded(sdkRecord('INSERT', undefined, { pk: 'AUDIT#acme', sk: 'x' })).kind).toBe(
      'other',
    );
  });
});
