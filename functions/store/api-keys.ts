import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ApiKey } from '../domain/api-keys.js';
import type { Permission } from '../domain/permissions.js';
import { documentClient, tableName } from './client.js';
import { keys } from './keys.js';
import { type TransactItem, transact } from './transact.js';

/** Stores the key under the SHA-256 of its secret, only if its tenant exists. */
export async function insertApiKey(
  secretHash: string,
  key: ApiKey,
): Promise<'inserted' | 'noTenant'> {
  const items: TransactItem[] = [
    {
      ConditionCheck: {
        TableName: tableName(),
        Key: keys.tenant(key.tenant),
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      },
    },
    {
      Put: {
        TableName: tableName(),
        Item: {
          ...keys.apiKey(secretHash),
          type: 'api-key',
          key_id: key.keyId,
          key_prefix: key.keyPrefix,
          tenant: key.tenant,
          name: key.name,
          description: key.description,
          permissions: key.permissions,
          created_at: key.createdAt,
          expires_at: key.expiresAt,
        },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      },
    },
  ];
  const outcome = await transact(items);
  return outcome.kind === 'committed' ? 'inserted' : 'noTenant';
}

export async function getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
  const { Item: item } = await documentClient.send(
    new GetCommand({ TableName: tableName(), Key: keys.apiKey(secretHash), ConsistentRead: true }),
  );
  if (item?.type !== 'api-key') return undefined;
  return {
    keyId: String(item.key_id),
    keyPrefix: String(item.key_prefix),
    tenant: String(item.tenant),
    name: String(item.name),
    description: item.description as string | undefined,
    permissions: item.permissions as Permission[],
    createdAt: String(item.created_at),
    expiresAt: item.expires_at as string | undefined,
  };
}
