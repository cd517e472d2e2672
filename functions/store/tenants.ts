import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, type PutCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Tenant } from '../domain/tenant.js';
import { documentClient } from './client.js';
import { keys } from './keys.js';
import { putIfAbsentInput } from './transact.js';

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
