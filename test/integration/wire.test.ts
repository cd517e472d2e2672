import { randomUUID } from 'node:crypto';
import {
  DynamoDBClient,
  DynamoDBServiceException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { BuildMiddleware } from '@smithy/types';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestStack } from '../helpers/scaffold.js';

// The lean path of the two hot calls (functions/store/wire.ts) against DynamoDB Local, beside
// the SDK's document client on the same table: the same items back, byte for byte and number for
// number, the SDK's own exception classes, and the client's middlewares on every call.
const stack = useTestStack();
let sdk: DynamoDBDocumentClient | undefined;
afterAll(() => sdk?.destroy());
const table = () => String(process.env.TABLE_NAME);
const documentClient = () => {
  sdk ??= DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.dynamoEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  return sdk;
};

/** An item with every kind of attribute the protocol has. */
const everyKind = (pk: string) => ({
  pk,
  sk: '-',
  text: 'héllo ✓',
  n: 12,
  big: 2 ** 53 - 1,
  fraction: -0.125,
  flag: true,
  nothing: null,
  bytes: new Uint8Array([0, 1, 254, 255]),
  strings: new Set(['a', 'b']),
  numbers: new Set([1, 2]),
  list: [1, 'two', { three: [3] }, new Uint8Array([9])],
  map: { nested: { deeper: 'x' }, empty: {} },
});

describe('the lean DynamoDB path (store/wire.ts)', () => {
  it('reads back what the SDK wrote, as the SDK reads it, and the SDK reads what it wrote', async () => {
    const { batchGetItems, transactWriteItems } = await import('../../functions/store/wire.js');
    const viaSdk = everyKind(`WIRE#${randomUUID()}`);
    const viaWire = everyKind(`WIRE#${randomUUID()}`);
    await documentClient().send(new PutCommand({ TableName: table(), Item: viaSdk }));
    await transactWriteItems([{ Put: { TableName: table(), Item: viaWire } }]);

    const { items, unprocessed } = await batchGetItems(table(), [
      { pk: viaSdk.pk, sk: '-' },
      { pk: viaWire.pk, sk: '-' },
    ]);
    const sdkRead = await documentClient().send(
      new GetCommand({
        TableName: table(),
        Key: { pk: viaWire.pk, sk: '-' },
        ConsistentRead: true,
      }),
    );

    expect(unprocessed).toEqual([]);
    const byPk = new Map(items.map((i) => [i.pk, i]));
    expect(byPk.get(viaSdk.pk)).toEqual(viaSdk);
    expect(byPk.get(viaWire.pk)).toEqual(viaWire);
    expect(sdkRead.Item).toEqual(viaWire);
    expect(byPk.get(viaWire.pk)?.bytes).toBeInstanceOf(Uint8Array);
  });

  it('sends the same through the document client, its fallback', async () => {
    const { sdkHandler } = await import('../../functions/store/wire.js');
    const item = everyKind(`WIRE#${randomUUID()}`);
    await sdkHandler('TransactWriteItems')({
      input: { TransactItems: [{ Put: { TableName: table(), Item: item } }] },
    });

    const { output } = await sdkHandler('BatchGetItem')({
      input: {
        RequestItems: { [table()]: { Keys: [{ pk: item.pk, sk: '-' }], ConsistentRead: true } },
      },
    });

    expect((output.Responses as Record<string, unknown[]>)[table()]).toEqual([item]);
  });

  it('throws the SDK’s exception classes: a failed condition with the item as it was', async () => {
    const { transactWriteItems, itemOf } = await import('../../functions/store/wire.js');
    const item = everyKind(`WIRE#${randomUUID()}`);
    await transactWriteItems([{ Put: { TableName: table(), Item: item } }]);

    const failed = await transactWriteItems([
      {
        Put: {
          TableName: table(),
          Item: { pk: item.pk, sk: '-' },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]).catch((e: unknown) => e);
    const invalid = await transactWriteItems([
      { Put: { TableName: table(), Item: { pk: item.pk } } },
    ]).catch((e: unknown) => e);

    expect(failed).toBeInstanceOf(TransactionCanceledException);
    const reasons = (failed as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons.map((r) => r.Code)).toEqual(['ConditionalCheckFailed']);
    expect(itemOf(reasons[0]?.Item ?? {})).toEqual(item);
    expect(invalid).toBeInstanceOf(DynamoDBServiceException);
    expect((invalid as DynamoDBServiceException).name).toBe('ValidationException');
    expect((invalid as DynamoDBServiceException).$metadata.httpStatusCode).toBe(400);
  });

  it('runs the client’s middlewares, added after its first call too, on every call', async () => {
    const { dynamoClient } = await import('../../functions/store/client.js');
    const { batchGetItems } = await import('../../functions/store/wire.js');
    const key = { pk: `WIRE#${randomUUID()}`, sk: '-' };
    await batchGetItems(table(), [key]);
    const seen: string[] = [];
    const inputs: unknown[] = [];
    dynamoClient.middlewareStack.add(
      (next, context) => (args) => {
        seen.push(String(context.commandName));
        inputs.push(args.input);
        return next(args);
      },
      { step: 'initialize', name: 'wireTestWatch' },
    );
    try {
      await batchGetItems(table(), [key]);
    } finally {
      dynamoClient.middlewareStack.remove('wireTestWatch');
    }
    await batchGetItems(table(), [key]);

    expect(seen).toEqual(['BatchGetItemCommand']);
    // As the document client's: the initialize step sees the items as values, not marshalled.
    expect(inputs).toEqual([
      { RequestItems: { [table()]: { Keys: [key], ConsistentRead: true } } },
    ]);
  });

  it('falls back to the SDK’s command when the stack places a middleware on one it takes out', async () => {
    // As a runtime SDK of another version might: the lean stack cannot be resolved.
    const { dynamoClient } = await import('../../functions/store/client.js');
    const { batchGetItems } = await import('../../functions/store/wire.js');
    const key = { pk: `WIRE#${randomUUID()}`, sk: '-' };
    const seen: string[] = [];
    const placed: BuildMiddleware<object, object> = (next, context) => (args) => {
      seen.push(String(context.commandName));
      return next(args);
    };
    dynamoClient.middlewareStack.addRelativeTo(
      placed as unknown as Parameters<typeof dynamoClient.middlewareStack.addRelativeTo>[0],
      { name: 'wireTestPlaced', relation: 'after', toMiddleware: 'hostHeaderMiddleware' },
    );
    let read: Awaited<ReturnType<typeof batchGetItems>> | undefined;
    try {
      read = await batchGetItems(table(), [key]);
    } finally {
      dynamoClient.middlewareStack.remove('wireTestPlaced');
    }

    expect(read).toEqual({ items: [], unprocessed: [] });
    expect(seen).toEqual(['BatchGetItemCommand']);
  });
});
