import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ApiKey } from '../domain/api-keys.js';
import { documentClient, tableName } from './client.js';
import { apiKeyOf } from './items.js';
import { keys } from './keys.js';
import { putIfAbsent, type TransactItem, tenantExists, transact } from './transact.js';

/** The key under the SHA-256 of its secret, conditioned on its tenant existing. */
export function newApiKeyTransaction(secretHash: string, key: ApiKey): TransactItem[] {
  return [
    tenantExists(key.tenant),
    putIfAbsent({
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
    }),
  ];
}

export async function insertApiKey(
  secretHash: string,
  key: ApiKey,
): Promise<'inserted' | 'noTenant'> {
  const outcome = await transact(newApiKeyTransaction(secretHash, key));
  return outcome.kind === 'committed' ? 'inserted' : 'noTenant';
}

export async function getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
  const { Item: item } = await documentClient.send(
    new GetCommand({ TableName: tableName(), Key: keys.apiKey(secretHash), ConsistentRead: true }),
  );
  return item?.type === 'api-key' ? apiKeyOf(item) : undefined;
}
