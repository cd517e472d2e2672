import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from './client.js';
import { keys } from './keys.js';

export interface Tenant {
  readonly tenantId: string;
  readonly name: string;
  readonly status: 'ACTIVE';
  readonly createdAt: string;
}

export async function insertTenant(t: Tenant): Promise<'inserted' | 'duplicate'> {
  try {
    await documentClient.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.tenant(t.tenantId),
          type: 'tenant',
          tenant_id: t.tenantId,
          name: t.name,
          status: t.status,
          created_at: t.createdAt,
        },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      }),
    );
    return 'inserted';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return 'duplicate';
    throw error;
  }
}
