import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type ShardIteratorType,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from '../../functions/log.js';

/**
 * Plays, for DynamoDB Local's stream, the part Lambda's event source mapping plays in AWS: reads
 * every shard in order, hands batches to the consumer (functions/jobs/stream-events.ts) in the
 * shape Lambda gives it, and honours its partial-failure answer by reading again from the record
 * it names. A record that keeps failing is skipped after MAX_ATTEMPTS with a log line (AWS: the
 * DLQ). With `checkpointFile`, the last record handled per shard survives a restart, so events of
 * records written before it are delivered after it (at least once).
 */
export interface StreamPollerOptions {
  readonly endpoint: string;
  readonly region: string;
  readonly streamArn: string;
  readonly intervalMs: number;
  /** Where the shards open at start are read from, without a checkpoint. */
  readonly from: 'TRIM_HORIZON' | 'LATEST';
  readonly checkpointFile?: string | undefined;
  readonly handle: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;
  readonly log: Logger;
}

export interface StreamPoller {
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 5;
const DESCRIBE_EVERY_MS = 5_000;

interface ShardState {
  readonly shardId: string;
  iterator?: string | undefined;
  /** Where to (re)start when there is no iterator. */
  start: { type: ShardIteratorType; sequenceNumber?: string | undefined };
  /** The shard is closed and read to its end. */
  done: boolean;
}

/**
 * An SDK stream record as the Lambda event carries it (ApproximateCreationDateTime in seconds).
 * DynamoDB Local rounds a record's creation time down to the minute (AWS keeps the second), so
 * a threshold crossed at 10:00:41 would say 10:00:00. The poller reads a record within its poll
 * interval of the write, so its clock at `readAt` is the better time: kept inside the minute the
 * record names, so a record read late (catching up after a restart) is never moved past it.
 */
export function lambdaRecord(r: StreamRecord, streamArn: string, readAt: number): DynamoDBRecord {
  const d = r.dynamodb;
  const stamped = d?.ApproximateCreationDateTime?.getTime();
  const created =
    stamped !== undefined && stamped % 60_000 === 0
      ? Math.min(Math.max(readAt, stamped), stamped + 59_999)
      : stamped;
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion,
    eventSource: r.eventSource,
    awsRegion: r.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(created !== undefined && { ApproximateCreationDateTime: created / 1000 }),
      Keys: d?.Keys,
      NewImage: d?.NewImage,
      OldImage: d?.OldImage,
      SequenceNumber: d?.SequenceNumber,
      SizeBytes: d?.SizeBytes,
      StreamViewType: d?.StreamViewType,
    } as DynamoDBRecord['dynamodb'],
  };
}

export function startStreamPoller(o: StreamPollerOptions): StreamPoller {
  const client = new DynamoDBStreamsClient({
    endpoint: o.endpoint,
    region: o.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  // The SDK's logger middleware redacts every record read for a logger that prints nothing:
  // about 4 % of the local server's CPU under the bench's load (BENCHMARKS.md § Server CPU).
  client.middlewareStack.remove('loggerMiddleware');
  const saved = loadCheckpoint(o.checkpointFile, o.streamArn);
  const shards = new Map<string, ShardState>();
  const attempts = new Map<string, number>();
  let describedAt = 0;
  let firstDescribe = true;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();

  const describe = async () => {
    let start: string | undefined;
    do {
      const out = await client.send(
        new DescribeStreamCommand({ StreamArn: o.streamArn, ExclusiveStartShardId: start }),
      );
      const description = out.StreamDescription;
      for (const s of description?.Shards ?? []) {
        if (!s.ShardId || shards.has(s.ShardId)) continue;
        const last = saved?.[s.ShardId];
        shards.set(s.ShardId, {
          shardId: s.ShardId,
          // Shards that appear later are read from their start: nothing of them was handled.
          start: last
            ? { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: last }
            : { type: firstDescribe && !saved ? o.from : 'TRIM_HORIZON' },
          done: false,
        });
      }
      start = description?.LastEvaluatedShardId;
    } while (start);
    firstDescribe = false;
    describedAt = Date.now();
  };

  const poll = async (shard: ShardState) => {
    if (!shard.iterator) {
      const out = await client.send(
        new GetShardIteratorCommand({
          StreamArn: o.streamArn,
          ShardId: shard.shardId,
          ShardIteratorType: shard.start.type,
          SequenceNumber: shard.start.sequenceNumber,
        }),
      );
      shard.iterator = out.ShardIterator;
    }
    let out: GetRecordsCommandOutput;
    try {
      out = await client.send(
        new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }),
      );
    } catch (error) {
      // DynamoDB Local numbers the records of all its streams in one sequence, so an iterator
      // taken on a shard that had no record yet goes stale ("trimmed") once another table's
      // stream takes that number: a new one from where this shard was left loses nothing.
      const name = (error as Error).name;
      if (name !== 'ExpiredIteratorException' && name !== 'TrimmedDataAccessException') throw error;
      shard.iterator = undefined;
      return;
    }
    const records = out.Records ?? [];
    if (records.length === 0) {
      shard.iterator = out.NextShardIterator;
      if (!shard.iterator) shard.done = true;
      return;
    }
    const readAt = Date.now();
    const response = await o.handle({
      Records: records.map((r) => lambdaRecord(r, o.streamArn, readAt)),
    });
    const failed = response.batchItemFailures[0]?.itemIdentifier;
    if (failed === undefined) {
      advance(shard, records.at(-1)?.dynamodb?.SequenceNumber, out.NextShardIterator);
      return;
    }
    const tries = (attempts.get(failed) ?? 0) + 1;
    attempts.set(failed, tries);
    shard.iterator = undefined;
    if (tries < MAX_ATTEMPTS) {
      shard.start = { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: failed };
    } else {
      o.log.error('stream record skipped after repeated failures', {
        shard: shard.shardId,
        sequence_number: failed,
        attempts: tries,
      });
      attempts.delete(failed);
      shard.start = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: failed };
    }
  };

  const advance = (shard: ShardState, last: string | undefined, next: string | undefined) => {
    shard.iterator = next;
    if (!next) shard.done = true;
    if (!last) return;
    shard.start = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: last };
    saveCheckpoint(o.checkpointFile, o.streamArn, shards);
  };

  const tick = async () => {
    if (Date.now() - describedAt >= DESCRIBE_EVERY_MS) await describe();
    for (const shard of shards.values()) {
      if (stopped) return;
      if (!shard.done) await poll(shard);
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = tick()
        .catch((error: unknown) => o.log.error('stream poll failed', { error }))
        .finally(schedule);
    }, o.intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
      client.destroy();
    },
  };
}

type Checkpoint = Record<string, string>;

function loadCheckpoint(file: string | undefined, streamArn: string): Checkpoint | undefined {
  if (!file || !existsSync(file)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      streamArn?: string;
      shards?: Checkpoint;
    };
    return saved.streamArn === streamArn ? saved.shards : undefined;
  } catch {
    return undefined;
  }
}

function saveCheckpoint(
  file: string | undefined,
  streamArn: string,
  shards: ReadonlyMap<string, ShardState>,
): void {
  if (!file) return;
  const handled: Checkpoint = {};
  for (const s of shards.values()) {
    if (s.start.type === 'AFTER_SEQUENCE_NUMBER' && s.start.sequenceNumber) {
      handled[s.shardId] = s.start.sequenceNumber;
    }
  }
  writeFileSync(file, `${JSON.stringify({ streamArn, shards: handled })}\n`);
}
