/**
 * The backfill of the byTenant fold (docs/table-design.md § Migration): on a table deployed
 * before it, moves every logged event's index key from `tenant_pk` (the dropped byTenant index)
 * to `status_pk` (byStatus, which now lists every tenant's events too), and removes `tenant_pk`
 * from reservations, which nothing reads any more. Idempotent: each update is conditioned on
 * `tenant_pk` still being there, so a second run (or one that overlaps a first) changes nothing.
 *
 *   TABLE_NAME=<table> AWS_REGION=<region> npx tsx infra/migrations/fold-by-tenant.ts
 *
 * A Scan of the whole table, in pages; cost: the table's size in read units once, a write unit
 * per item moved.
 */
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from '../../functions/store/client.js';

export async function foldByTenant(): Promise<{ events: number; reservations: number }> {
  const moved = { events: 0, reservations: 0 };
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documentClient.send(
      new ScanCommand({
        TableName: tableName(),
        FilterExpression: 'attribute_exists(tenant_pk)',
        ProjectionExpression: 'pk, sk, tenant_pk, #type',
        ExpressionAttributeNames: { '#type': 'type' },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const event = String(item.pk).startsWith('EVT#');
      if (!event && item.type !== 'reservation') continue;
      await documentClient
        .send(
          new UpdateCommand({
            TableName: tableName(),
            Key: { pk: item.pk, sk: item.sk },
            UpdateExpression: event
              ? 'SET status_pk = tenant_pk REMOVE tenant_pk'
              : 'REMOVE tenant_pk',
            ConditionExpression: 'attribute_exists(tenant_pk)',
          }),
        )
        .then(
          () => moved[event ? 'events' : 'reservations']++,
          (error: unknown) => {
            // Moved meanwhile by another run: nothing left to do for it.
            if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
          },
        );
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return moved;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const moved = await foldByTenant();
  process.stdout.write(
    `moved ${moved.events} events to byStatus; removed tenant_pk from ${moved.reservations} reservations\n`,
  );
}
