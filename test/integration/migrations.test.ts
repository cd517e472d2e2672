import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { keys } from '../../functions/store/keys.js';
import { givenTenantWith } from '../helpers/fixtures.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack();
const { reserve } = reservationsApi(stack);

describe('the byTenant fold backfill (infra/migrations/fold-by-tenant.ts)', () => {
  it('moves an event of before onto byStatus and drops a reservation’s tenant_pk, once', async () => {
    const { documentClient, tableName } = await import('../../functions/store/client.js');
    const { foldByTenant } = await import('../../infra/migrations/fold-by-tenant.js');
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const reserved = await reserve(t);
    expect(reserved.status).toBe(200);
    const rKey = keys.reservation(String(reserved.body.reservation_id));
    const eKey = { pk: `EVT#evt_before_${t.tenant}`, sk: '-' };
    // As written before the fold: the event on byTenant, the reservation too.
    await documentClient.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...eKey, type: 'logged-event', tenant_pk: 'EVENTS~1', list_sk: '1#x' },
      }),
    );
    const { Item: r = {} } = await documentClient.send(
      new GetCommand({ TableName: tableName(), Key: rKey, ConsistentRead: true }),
    );
    await documentClient.send(
      new PutCommand({ TableName: tableName(), Item: { ...r, tenant_pk: `T#${t.tenant}` } }),
    );

    const first = await foldByTenant();
    const second = await foldByTenant();

    const read = async (Key: { pk: string; sk: string }) =>
      (
        await documentClient.send(
          new GetCommand({ TableName: tableName(), Key, ConsistentRead: true }),
        )
      ).Item ?? {};
    expect(await read(eKey)).toMatchObject({ status_pk: 'EVENTS~1', list_sk: '1#x' });
    expect((await read(eKey)).tenant_pk).toBeUndefined();
    expect((await read(rKey)).tenant_pk).toBeUndefined();
    expect((await read(rKey)).status_pk).toBe(r.status_pk);
    expect(first.events).toBeGreaterThanOrEqual(1);
    expect(first.reservations).toBeGreaterThanOrEqual(1);
    expect(second).toEqual({ events: 0, reservations: 0 });
  });
});
