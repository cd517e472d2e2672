import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, type PutCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Tenant } from '../domain/tenant.js';
import { documentClient, tableName } from './client.js';
import { keys } from './keys.js';
import { getItems, putIfAbsentInput, tenantExists } from './transact.js';

/** The tenant record, only if no tenant has that id. */
export function newTenantPut(t: Tenant): PutCommandInput {
  return putIfAbsentInput({
    ...keys.tenant(t.tenantId),
    type: 'tenant',
    tenant_id: t.tenantId,
    name: t.name,
    status: t.status,
    created_at: t.createdAt,
  });
}

export async function insertTenant(t: Tenant): Promise<'inserted' | 'duplicate'> {
  try {
    await documentClient.send(new PutCommand(newTenantPut(t)));
    return 'inserted';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return 'duplicate';
    throw error;
  }
}

/**
 * How long a process may answer from a tenant's budgeted dimension keys it read: a budget on a
 * new dimension key takes effect for reservations within this bound (docs/decisions.md).
 */
export const DIMENSION_KEYS_TTL_MS = 5_000;
const dimensionKeys = new Map<
  string,
  { readonly keys: ReadonlySet<string>; readonly at: number }
>();

/** The dimension keys some budget of the tenant names (strongly consistent, then cached). */
export async function budgetedDimensionKeys(
  tenant: string,
  now: number,
): Promise<ReadonlySet<string>> {
  const seen = dimensionKeys.get(tenant);
  if (seen && now >= seen.at && now - seen.at < DIMENSION_KEYS_TTL_MS) return seen.keys;
  const key = keys.tenant(tenant);
  const item = (await getItems([key])).get(key.pk);
  const stored = item?.dimension_keys;
  const found = new Set<string>(stored instanceof Set ? [...stored].map(String) : []);
  dimensionKeys.set(tenant, { keys: found, at: now });
  return found;
}

/**
 * Inside a budget's creation: the tenant must exist, and the dimension keys its scope names
 * become budget levels of the tenant (a string set on the tenant item).
 */
export function tenantWithDimensions(tenant: string, dimensionKeysOfScope: readonly string[]) {
  if (dimensionKeysOfScope.length === 0) return tenantExists(tenant);
  return {
    Update: {
      TableName: tableName(),
      Key: keys.tenant(tenant),
      UpdateExpression: 'ADD #keys :keys',
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#keys': 'dimension_keys', '#pk': 'pk' },
      ExpressionAttributeValues: { ':keys': new Set(dimensionKeysOfScope) },
    },
  };
}
