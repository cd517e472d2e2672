import { type ApiKey, isOperatorKey } from '../domain/api-keys.js';
import type { AuditEntry } from '../domain/audit.js';
import {
  apiKeyItem,
  apiKeyOf,
  apiKeyPointerItem,
  isApiKeyItem,
  keyAttributes,
} from './entities/api-key.js';
import { closedTenantIn, tenantOpen } from './entities/tenant.js';
import { and, attr, type Item, or, putIfAbsent, type TransactItem, update } from './expressions.js';
import { directory, keys } from './keys.js';
import { queryPage } from './pages.js';
import { getItems, transact } from './transact.js';
import { auditPut, writeAudited } from './write.js';

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
    // An operator credential's owner is no tenant (domain/api-keys.ts OPERATORS).
    ...(isOperatorKey(key) ? [] : [tenantOpen(key.tenant)]),
    putIfAbsent(apiKeyItem(secretHash, key)),
    putIfAbsent(apiKeyPointerItem(secretHash, key.keyId)),
    ...(audit ? [auditPut(audit)] : []),
  ];
}

export async function insertApiKey(
  secretHash: string,
  key: ApiKey,
  audit: AuditEntry,
): Promise<'inserted' | 'noTenant' | 'tenantClosed'> {
  const outcome = await transact(newApiKeyTransaction(secretHash, key, audit));
  if (outcome.kind === 'committed') return 'inserted';
  return closedTenantIn(outcome) ? 'tenantClosed' : 'noTenant';
}

export async function getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
  const key = keys.apiKey(secretHash);
  const item = (await getItems([key])).get(key.pk);
  return isApiKeyItem(item) ? apiKeyOf(item) : undefined;
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

/**
 * A change to a key as it was read, with its audit record: only while it is ACTIVE and unchanged
 * since (its `updated_at`); 'stale' otherwise. Keys stored before revocation existed have no
 * status: they are live.
 */
export async function updateApiKey(
  secretHash: string,
  before: ApiKey,
  after: ApiKey,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const written = await writeAudited(
    [
      update(
        keys.apiKey(secretHash),
        { set: keyAttributes(after) },
        {
          condition: and(
            or(attr('status').notExists(), attr('status').ne('REVOKED')),
            before.updatedAt === undefined
              ? attr('updated_at').notExists()
              : attr('updated_at').eq(before.updatedAt),
          ),
        },
      ),
    ],
    audit,
  );
  return written === 'written' ? 'updated' : 'stale';
}
