import type { ApiKey } from '../domain/api-keys.js';
import type { AuditEntry } from '../domain/audit.js';
import { auditPut } from './audit.js';
import { tableName } from './client.js';
import { apiKeyOf } from './items.js';
import { directory, keys } from './keys.js';
import { queryPage } from './pages.js';
import {
  getItems,
  type Item,
  putIfAbsent,
  type TransactItem,
  tenantExists,
  transact,
} from './transact.js';

const keyAttributes = (key: ApiKey) => ({
  type: 'api-key',
  key_id: key.keyId,
  key_prefix: key.keyPrefix,
  tenant: key.tenant,
  name: key.name,
  description: key.description,
  permissions: key.permissions,
  created_at: key.createdAt,
  expires_at: key.expiresAt,
  status: key.status,
  updated_at: key.updatedAt,
  revoked_at: key.revokedAt,
  revoked_reason: key.revokedReason,
  dir_pk: directory.apiKeys.pk,
  dir_sk: directory.apiKeys.sk(key.tenant, key.keyId),
});

/**
 * The key under the SHA-256 of its secret, a pointer from its id (for the operator's get, change
 * and revoke), and its audit record, conditioned on its tenant existing.
 */
export function newApiKeyTransaction(
  secretHash: string,
  key: ApiKey,
  audit?: AuditEntry,
): TransactItem[] {
  return [
    tenantExists(key.tenant),
    putIfAbsent({ ...keys.apiKey(secretHash), ...keyAttributes(key), secret_hash: secretHash }),
    putIfAbsent({ ...keys.apiKeyId(key.keyId), type: 'api-key-id', secret_hash: secretHash }),
    ...(audit ? [auditPut(audit)] : []),
  ];
}

export async function insertApiKey(
  secretHash: string,
  key: ApiKey,
  audit: AuditEntry,
): Promise<'inserted' | 'noTenant'> {
  const outcome = await transact(newApiKeyTransaction(secretHash, key, audit));
  return outcome.kind === 'committed' ? 'inserted' : 'noTenant';
}

export async function getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
  const key = keys.apiKey(secretHash);
  const item = (await getItems([key])).get(key.pk);
  return item?.type === 'api-key' ? apiKeyOf(item) : undefined;
}

/** A stored key by its id, with the hash it is stored under (two strongly consistent reads). */
export async function getApiKeyById(
  keyId: string,
): Promise<{ readonly key: ApiKey; readonly secretHash: string } | undefined> {
  const pointer = keys.apiKeyId(keyId);
  const secretHash = (await getItems([pointer])).get(pointer.pk)?.secret_hash;
  if (typeof secretHash !== 'string') return undefined;
  const key = await getApiKeyByHash(secretHash);
  return key && { key, secretHash };
}

/** Keys by tenant then id (the directory index): one tenant's, or every tenant's. */
export async function queryApiKeys(q: {
  readonly tenant?: string | undefined;
  readonly matches?: (key: ApiKey) => boolean;
  readonly after?: string | undefined;
  readonly limit: number;
}) {
  const prefix = q.tenant === undefined ? '' : directory.apiKeys.tenantPrefix(q.tenant);
  const page = await queryPage({
    index: 'directory',
    partitionKey: 'dir_pk',
    partition: directory.apiKeys.pk,
    sortKey: 'dir_sk',
    lowest: prefix,
    highest: `${prefix}~`,
    newestFirst: false,
    after: q.after,
    limit: q.limit,
    matches: (item: Item) => q.matches?.(apiKeyOf(item)) ?? true,
  });
  return { keys: page.items.map(apiKeyOf), nextPosition: page.nextPosition };
}

/** Keys stored before revocation existed have no status: they are live. */
const LIVE = '(attribute_not_exists(#status) OR #status <> :revoked)';

/**
 * A change to a key as it was read, with its audit record: only while it is ACTIVE and unchanged
 * since (its `updated_at`); 'stale' otherwise.
 */
export async function updateApiKey(
  secretHash: string,
  before: ApiKey,
  after: ApiKey,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const attributes = Object.entries(keyAttributes(after)).filter(([, v]) => v !== undefined);
  const outcome = await transact([
    {
      Update: {
        TableName: tableName(),
        Key: keys.apiKey(secretHash),
        UpdateExpression: `SET ${attributes.map((_, i) => `#a${i} = :a${i}`).join(', ')}`,
        ConditionExpression:
          before.updatedAt === undefined
            ? `${LIVE} AND attribute_not_exists(#updated)`
            : `${LIVE} AND #updated = :updated`,
        ExpressionAttributeNames: {
          ...Object.fromEntries(attributes.map(([name], i) => [`#a${i}`, name])),
          '#status': 'status',
          '#updated': 'updated_at',
        },
        ExpressionAttributeValues: {
          ...Object.fromEntries(attributes.map(([, value], i) => [`:a${i}`, value])),
          ':revoked': 'REVOKED',
          ...(before.updatedAt !== undefined && { ':updated': before.updatedAt }),
        },
      },
    },
    auditPut(audit),
  ]);
  return outcome.kind === 'committed' ? 'updated' : 'stale';
}
