import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../domain/audit.js';
import { SYSTEM_TENANT } from '../domain/events.js';
import type { WebhookSecurity } from '../domain/webhook-security.js';
import type { Subscription } from '../domain/webhooks.js';
import { documentClient, tableName } from './client.js';
import {
  isSubscriptionItem,
  revisionOf,
  type SealedSecrets,
  sealedSecretsOf,
  subscriptionItem,
  subscriptionOf,
  subscriptionSettings,
  webhookSecurityItem,
  webhookSecurityOf,
} from './entities/webhook.js';
import {
  and,
  attr,
  conditionCheck,
  Placeholders,
  putIfAbsent,
  queryExpressions,
  remove,
  type TransactItem,
  update,
  updateExpression,
} from './expressions.js';
import { directory, keys } from './keys.js';
import { queryPage } from './pages.js';
import { getItems } from './transact.js';
import { writeAudited } from './write.js';

/** A subscription as read, with the revision a change of it is conditioned on. */
export interface StoredSubscription {
  readonly subscription: Subscription;
  readonly revision: number;
}

/**
 * The subscription and its audit record, conditioned on its owner being a tenant that is not
 * CLOSED (an operator's `__system__` one has no tenant record): 'closed' when it is, or does
 * not exist (the caller checked which before).
 */
export async function insertSubscription(
  s: Subscription,
  sealed: SealedSecrets,
  audit: AuditEntry,
): Promise<'inserted' | 'refused'> {
  const owner =
    s.tenant === SYSTEM_TENANT
      ? []
      : [
          conditionCheck(
            keys.tenant(s.tenant),
            and(attr('pk').exists(), attr('status').ne('CLOSED')),
          ),
        ];
  const written = await writeAudited([...owner, putIfAbsent(subscriptionItem(s, sealed))], audit);
  return written === 'written' ? 'inserted' : 'refused';
}

export async function getSubscription(id: string): Promise<StoredSubscription | undefined> {
  const key = keys.webhook(id);
  const item = (await getItems([key])).get(key.pk);
  return isSubscriptionItem(item)
    ? { subscription: subscriptionOf(item), revision: revisionOf(item) }
    : undefined;
}

/** The subscription with its sealed secret and headers: the delivery function's read. */
export async function getSubscriptionForDelivery(
  id: string,
): Promise<{ readonly subscription: Subscription; readonly sealed: SealedSecrets } | undefined> {
  const key = keys.webhook(id);
  const item = (await getItems([key])).get(key.pk);
  return isSubscriptionItem(item)
    ? { subscription: subscriptionOf(item), sealed: sealedSecretsOf(item) }
    : undefined;
}

/**
 * A change of a subscription's settings as read (its revision unchanged since), with its audit
 * record; a new secret or new headers replace the sealed ones. 'stale': another change came
 * first, nothing was written.
 */
export async function updateSubscription(
  read: StoredSubscription,
  after: Subscription,
  sealed: Partial<SealedSecrets>,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const settings = subscriptionSettings(after);
  const removed = Object.entries(settings)
    .filter(([, v]) => v === undefined)
    .map(([k]) => k);
  return (await writeAudited(
    [
      update(
        keys.webhook(after.subscriptionId),
        {
          set: {
            ...settings,
            ...(sealed.secret !== undefined && { secret_sealed: sealed.secret }),
            ...(sealed.headers !== undefined && { headers_sealed: sealed.headers }),
            rev: read.revision + 1,
          },
          remove: removed,
        },
        { condition: attr('rev').eq(read.revision) },
      ),
    ],
    audit,
  )) === 'written'
    ? 'updated'
    : 'stale';
}

/** The subscription gone, with its audit record; 'stale' when it changed or went since it was read. */
export async function deleteSubscription(
  read: StoredSubscription,
  audit: AuditEntry,
): Promise<'deleted' | 'stale'> {
  const written = await writeAudited(
    [remove(keys.webhook(read.subscription.subscriptionId), attr('rev').eq(read.revision))],
    audit,
  );
  return written === 'written' ? 'deleted' : 'stale';
}

export interface SubscriptionQuery {
  /** One owner's subscriptions (a tenant or `__system__`); every owner's when absent. */
  readonly tenant?: string | undefined;
  readonly matches?: ((s: Subscription) => boolean) | undefined;
  readonly after?: string | undefined;
  readonly limit: number;
}

/** Subscriptions by owner then id (the directory index). */
export async function querySubscriptions(q: SubscriptionQuery) {
  const prefix = q.tenant === undefined ? '' : directory.webhooks.ownerPrefix(q.tenant);
  const page = await queryPage({
    index: 'directory',
    partitionKey: 'dir_pk',
    partition: directory.webhooks.pk,
    sortKey: 'dir_sk',
    lowest: prefix,
    highest: `${prefix}~`,
    newestFirst: false,
    after: q.after,
    limit: q.limit,
    matches: (item) => isSubscriptionItem(item) && (q.matches?.(subscriptionOf(item)) ?? true),
  });
  return { subscriptions: page.items.map(subscriptionOf), nextPosition: page.nextPosition };
}

/**
 * Every subscription of one owner, whatever their number (the directory index, page by page):
 * what the stream consumer matches a tenant's events against.
 */
export async function subscriptionsOf(tenant: string): Promise<Subscription[]> {
  const found: Subscription[] = [];
  const prefix = directory.webhooks.ownerPrefix(tenant);
  let start: Record<string, unknown> | undefined;
  do {
    const out = await documentClient.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: 'directory',
        ...queryExpressions(
          and(attr('dir_pk').eq(directory.webhooks.pk), attr('dir_sk').beginsWith(prefix)),
        ),
        ExclusiveStartKey: start,
      }),
    );
    for (const item of out.Items ?? [])
      if (isSubscriptionItem(item)) found.push(subscriptionOf(item));
    start = out.LastEvaluatedKey;
  } while (start);
  return found;
}

/**
 * A delivery's outcome on its subscription: a success clears the run of failures, a delivery
 * given up on adds one. Answers the run after it. No condition: it touches no setting, and a
 * change racing it keeps its own fields.
 */
export async function recordDeliveryOutcome(
  subscriptionId: string,
  succeeded: boolean,
  at: string,
): Promise<number | undefined> {
  const p = new Placeholders();
  const parts = succeeded
    ? { set: { consecutive_failures: 0, last_success_at: at, last_triggered_at: at } }
    : { set: { last_failure_at: at, last_triggered_at: at }, add: { consecutive_failures: 1 } };
  try {
    const out = await documentClient.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.webhook(subscriptionId),
        UpdateExpression: updateExpression(parts, p),
        ConditionExpression: attr('pk').exists()(p),
        ExpressionAttributeNames: p.names,
        ExpressionAttributeValues: p.values,
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.consecutive_failures ?? 0);
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return undefined; // deleted
    throw error;
  }
}

/**
 * A subscription DISABLED by the service (its run of failures reached the limit, or its tenant
 * closed), with the audit record its `webhook.disabled` event derives from; only from a status
 * other than DISABLED, so it happens once.
 */
export async function disableSubscription(
  before: Subscription,
  audit: AuditEntry,
): Promise<'disabled' | 'already'> {
  const disable = update(
    keys.webhook(before.subscriptionId),
    { set: { status: 'DISABLED', updated_at: new Date(audit.atMs).toISOString() } },
    { condition: and(attr('pk').exists(), attr('status').ne('DISABLED')) },
  );
  return (await writeAudited([disable], audit)) === 'written' ? 'disabled' : 'already';
}

/**
 * A replay holds its subscription until `untilMs` (the reference refuses concurrent replays):
 * false when another replay holds it.
 */
export async function holdForReplay(id: string, now: number, untilMs: number): Promise<boolean> {
  const p = new Placeholders();
  try {
    await documentClient.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.webhook(id),
        UpdateExpression: updateExpression({ set: { replay_until_ms: untilMs } }, p),
        ConditionExpression: and(
          attr('pk').exists(),
          (q) =>
            `(attribute_not_exists(${q.name('replay_until_ms')}) OR ${q.name('replay_until_ms')} < ${q.value('now', now)})`,
        )(p),
        ExpressionAttributeNames: p.names,
        ExpressionAttributeValues: p.values,
      }),
    );
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
}

export async function releaseReplayHold(id: string): Promise<void> {
  const p = new Placeholders();
  await documentClient
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.webhook(id),
        UpdateExpression: updateExpression({ remove: ['replay_until_ms'] }, p),
        ConditionExpression: attr('pk').exists()(p),
        ExpressionAttributeNames: p.names,
      }),
    )
    .catch(() => undefined); // deleted meanwhile, or the hold simply lapses
}

/** The operator's webhook security settings, or undefined while none were PUT. */
export async function getWebhookSecurity(): Promise<WebhookSecurity | undefined> {
  const out = await documentClient.send(
    new GetCommand({ TableName: tableName(), Key: keys.webhookSecurity(), ConsistentRead: true }),
  );
  return out.Item ? webhookSecurityOf(out.Item) : undefined;
}

/** Replaces the settings, with the audit record of the change. */
export async function putWebhookSecurity(c: WebhookSecurity, audit: AuditEntry): Promise<void> {
  const put: TransactItem = { Put: { TableName: tableName(), Item: webhookSecurityItem(c) } };
  await writeAudited([put], audit);
}
