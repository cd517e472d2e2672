import { randomBytes } from 'node:crypto';
import { config } from '../config/settings.js';
import { type Actor, type AuditContext, TENANT_CLOSED_CASCADE } from '../domain/audit.js';
import type { Credential } from '../domain/caller.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { EVENT_CATEGORIES, type EventType, SYSTEM_TENANT } from '../domain/events.js';
import { derivedId } from '../domain/fingerprint.js';
import { tenantClosed } from '../domain/tenant.js';
import {
  blockedAddress,
  blockedTarget,
  checkSecurity,
  checkTargetUrl,
  defaultWebhookSecurity,
  type WebhookSecurity,
} from '../domain/webhook-security.js';
import {
  changedSubscription,
  newSubscription,
  requireOwned,
  type Subscription,
  type SubscriptionChange,
  type SubscriptionSpec,
  type SubscriptionStatus,
} from '../domain/webhooks.js';
import { getTenant } from '../store/tenants.js';
import {
  deleteSubscription,
  disableSubscription,
  getSubscription,
  getWebhookSecurity,
  insertSubscription,
  putWebhookSecurity,
  querySubscriptions,
  type StoredSubscription,
  updateSubscription,
} from '../store/webhooks.js';
import type { WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import { type Page, type PageRequest, paged } from './pages.js';

/**
 * Webhook subscriptions, on the operator's routes (`/v1/admin/webhooks…`) and the tenants' own
 * (`/v1/webhooks…`), and the environment bootstrap: every path creates and changes them through
 * the domain's `newSubscription` / `changedSubscription` (the reference's invariants) and writes
 * the change with its audit record, from which the `webhook.*` event derives.
 */

/** What the use cases need from the outbound edge: name resolution and sealing. */
export interface WebhookPorts {
  readonly resolve: (host: string) => Promise<string[]>;
  readonly seal: (plain: string, subscriptionId: string) => Promise<string>;
}

/** Who acts on a subscription, and for whom: the audit record's actor. */
const actorOf = (caller: Credential, onTenantRoute: boolean): Actor =>
  caller.kind === 'tenant'
    ? { kind: 'key', keyId: caller.keyId }
    : { kind: 'admin', ...(onTenantRoute && { onBehalfOf: true }) };

const by = (owner: string, actor: Actor, { now, requestId }: WriteContext): AuditContext => ({
  tenant: owner,
  actor,
  requestId,
  atMs: now,
});

/** The configuration in force: the operator's, else the default (strict in AWS). */
export async function webhookSecurity(): Promise<WebhookSecurity> {
  return (await getWebhookSecurity()) ?? defaultWebhookSecurity(config.WEBHOOK_LOCAL_TARGETS);
}

/** A target checked as a delivery will be: its URL, then every address its name resolves to. */
async function checkTarget(url: string, ports: WebhookPorts): Promise<void> {
  const security = await webhookSecurity();
  const target = checkTargetUrl(security, url);
  let addresses: string[];
  try {
    addresses = await ports.resolve(target.hostname.replace(/^\[|\]$/g, ''));
  } catch {
    throw invalidRequest(`url: its host ${target.hostname} does not resolve`, {
      field: 'url',
      reason: 'WEBHOOK_URL_INVALID',
    });
  }
  const blocked = blockedAddress(security, addresses);
  if (blocked !== undefined) throw blockedTarget(url, blocked);
}

/** `whsec_` + 32 random bytes: what a subscription signs with when its creator gave none. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

const newSubscriptionId = () => `whsub_${randomBytes(12).toString('hex')}`;

/** The owner a subscription may be made for: an existing tenant that is not closed. */
async function requireOpenOwner(owner: string): Promise<void> {
  if (owner === SYSTEM_TENANT) return;
  const tenant = await getTenant(owner);
  if (!tenant) {
    throw new DomainError('NOT_FOUND', `tenant ${owner} does not exist`, { tenant_id: owner });
  }
  if (tenant.status === 'CLOSED') throw tenantClosed(owner);
}

export interface CreateRequest extends SubscriptionSpec {
  readonly signingSecret?: string | undefined;
}

export interface Created {
  readonly subscription: Subscription;
  /** Answered this once; only its sealed form is kept. */
  readonly signingSecret: string;
}

/**
 * createWebhookSubscription (the operator's; `owner` a tenant, or `__system__` when absent) and
 * createTenantWebhook (a key's own tenant): the invariants, the target, the owner, then the
 * subscription and its audit record in one transaction.
 */
export async function createSubscription(
  caller: Credential,
  owner: string,
  request: CreateRequest,
  context: WriteContext,
  ports: WebhookPorts,
  options: { readonly subscriptionId?: string; readonly onTenantRoute?: boolean } = {},
): Promise<Created> {
  const { signingSecret: given, ...spec } = request;
  const id = options.subscriptionId ?? newSubscriptionId();
  const subscription = newSubscription(id, owner, spec, new Date(context.now).toISOString());
  await checkTarget(subscription.url, ports);
  await requireOpenOwner(owner);
  const signingSecret = given ?? generateSigningSecret();
  const sealed = {
    secret: await ports.seal(signingSecret, id),
    ...(spec.headers && { headers: await ports.seal(JSON.stringify(spec.headers), id) }),
  };
  const audit = {
    ...by(owner, actorOf(caller, options.onTenantRoute ?? false), context),
    action: 'webhook.create' as const,
    after: subscription,
  };
  if ((await insertSubscription(subscription, sealed, audit)) === 'refused') {
    await requireOpenOwner(owner); // it closed or went meanwhile: say which
    throw new DomainError('DUPLICATE_RESOURCE', `webhook subscription ${id} already exists`, {
      subscription_id: id,
    });
  }
  return { subscription, signingSecret };
}

/**
 * A subscription by id: the operator reads any; a tenant key only its own tenant's (another
 * tenant's is not found, never forbidden).
 */
export async function readSubscription(
  caller: Credential,
  id: string,
): Promise<StoredSubscription> {
  const stored = await getSubscription(id);
  requireOwned(stored?.subscription, caller.kind === 'tenant' ? caller.tenant : undefined, id);
  return stored as StoredSubscription;
}

export interface SubscriptionFilters extends PageRequest {
  readonly tenantId?: string | undefined;
  readonly status?: SubscriptionStatus | undefined;
  readonly eventType?: EventType | undefined;
  /** Case-insensitive substring of the subscription id or URL. */
  readonly search?: string | undefined;
}

/** listWebhookSubscriptions and listTenantWebhooks: by owner, then id. */
export function listSubscriptions(q: SubscriptionFilters): Promise<Page<Subscription>> {
  const search = q.search?.toLowerCase();
  const matches = (s: Subscription) =>
    (q.status === undefined || s.status === q.status) &&
    (q.eventType === undefined || s.eventTypes.includes(q.eventType)) &&
    (search === undefined ||
      s.subscriptionId.toLowerCase().includes(search) ||
      s.url.toLowerCase().includes(search));
  const { cursor: _c, limit, ...binding } = q;
  return paged({ route: 'webhooks', ...binding }, q, async (after) => {
    const page = await querySubscriptions({ tenant: q.tenantId, matches, after, limit });
    return { items: page.subscriptions, nextPosition: page.nextPosition };
  });
}

/** The owner of a listing on the tenants' route: a key's own; the operator names one. */
export function listedTenant(caller: Credential, tenant: string | undefined): string {
  if (caller.kind === 'tenant') {
    if (tenant !== undefined && tenant !== caller.tenant) {
      throw new DomainError('FORBIDDEN', `tenant ${tenant} is not the key's tenant`, {
        tenant,
      });
    }
    return caller.tenant;
  }
  if (tenant === undefined) {
    throw invalidRequest('tenant query parameter is required when using admin key authentication', {
      field: 'tenant',
    });
  }
  return tenant;
}

export interface UpdateRequest extends SubscriptionChange {
  readonly signingSecret?: string | undefined;
}

/** A concrete tenant's subscription is frozen once the tenant is CLOSED (409 TENANT_CLOSED). */
async function requireOwnerNotClosed(s: Subscription): Promise<void> {
  if (s.tenant === SYSTEM_TENANT) return;
  if ((await getTenant(s.tenant))?.status === 'CLOSED') throw tenantClosed(s.tenant);
}

/**
 * updateWebhookSubscription and updateTenantWebhook: a partial change, the invariants checked on
 * the result; a no-op writes nothing and emits nothing.
 */
export async function changeSubscription(
  caller: Credential,
  id: string,
  request: UpdateRequest,
  context: WriteContext,
  ports: WebhookPorts,
  options: { readonly onTenantRoute?: boolean; readonly detail?: Record<string, unknown> } = {},
): Promise<Subscription> {
  return whileStale(async () => {
    const read = await readSubscription(caller, id);
    const before = read.subscription;
    await requireOwnerNotClosed(before);
    const { signingSecret, ...change } = request;
    const { after, changed } = changedSubscription(
      before,
      { ...change, rotatesSecret: signingSecret !== undefined },
      new Date(context.now).toISOString(),
    );
    if (after === before) return before;
    if (change.url !== undefined && change.url !== before.url) await checkTarget(after.url, ports);
    const sealed = {
      ...(signingSecret !== undefined && { secret: await ports.seal(signingSecret, id) }),
      ...(change.headers !== undefined && {
        headers: await ports.seal(JSON.stringify(change.headers), id),
      }),
    };
    const audit = {
      ...by(before.tenant, actorOf(caller, options.onTenantRoute ?? false), context),
      action: 'webhook.update' as const,
      before,
      after,
      detail: { changed_fields: changed, ...options.detail },
    };
    return (await updateSubscription(read, after, sealed, audit)) === 'stale' ? readAgain : after;
  });
}

/** deleteWebhookSubscription and deleteTenantWebhook: gone, with its audit record. */
export async function removeSubscription(
  caller: Credential,
  id: string,
  context: WriteContext,
  options: { readonly onTenantRoute?: boolean; readonly detail?: Record<string, unknown> } = {},
): Promise<void> {
  await whileStale(async () => {
    const read = await readSubscription(caller, id);
    await requireOwnerNotClosed(read.subscription);
    const audit = {
      ...by(read.subscription.tenant, actorOf(caller, options.onTenantRoute ?? false), context),
      action: 'webhook.delete' as const,
      before: read.subscription,
      ...(options.detail && { detail: options.detail }),
    };
    return (await deleteSubscription(read, audit)) === 'stale' ? readAgain : undefined;
  });
}

/** Part of a tenant's close: its subscriptions DISABLED (audited, one by one). Idempotent. */
export async function disableSubscriptionsOfTenant(
  tenant: string,
  context: WriteContext,
): Promise<void> {
  for (let after: string | undefined; ; ) {
    const page = await querySubscriptions({
      tenant,
      after,
      limit: 100,
      matches: (s) => s.status !== 'DISABLED',
    });
    for (const s of page.subscriptions) {
      await disableSubscription(s, {
        ...by(tenant, { kind: 'admin' }, context),
        action: 'webhook.disable',
        before: s,
        after: { ...s, status: 'DISABLED' },
        detail: { cascade: TENANT_CLOSED_CASCADE },
      });
    }
    if (page.nextPosition === undefined) return;
    after = page.nextPosition;
  }
}

/** getWebhookSecurityConfig. */
export const readWebhookSecurity = webhookSecurity;

/** updateWebhookSecurityConfig: replaced whole (every range valid), audited. */
export async function replaceWebhookSecurity(
  next: WebhookSecurity,
  context: WriteContext,
): Promise<WebhookSecurity> {
  const checked = checkSecurity(next);
  const before = await webhookSecurity();
  await putWebhookSecurity(checked, {
    ...by(SYSTEM_TENANT, { kind: 'admin' }, context),
    action: 'webhook_security.update',
    before,
    after: checked,
  });
  return checked;
}

/** A bootstrap subscription's id: fixed by its URL, so a restart finds it. */
export const bootstrapId = (url: string): string =>
  derivedId('whsub', 'bootstrap', url).replace('whsub_', 'whsub_env');

/**
 * The environment bootstrap (WEBHOOK_URLS, WEBHOOK_SECRET): an operator (`__system__`)
 * subscription to every event category per URL, created at start through the same path as the
 * API's (so the same invariants and target checks), once: one that exists is left as it is
 * (an operator may have paused or changed it).
 */
export async function bootstrapSubscriptions(
  urls: readonly string[],
  secret: string,
  context: WriteContext,
  ports: WebhookPorts,
): Promise<void> {
  for (const url of urls) {
    const subscriptionId = bootstrapId(url);
    if (await getSubscription(subscriptionId)) continue;
    await createSubscription(
      { kind: 'admin' },
      SYSTEM_TENANT,
      {
        name: 'WEBHOOK_URLS',
        url,
        eventTypes: [],
        // Every category: the environment's subscriptions take everything.
        eventCategories: [...EVENT_CATEGORIES],
        signingSecret: secret,
      },
      context,
      ports,
      { subscriptionId },
    ).catch((error: unknown) => {
      // Two processes starting at once: the other one made it.
      if (error instanceof DomainError && error.code === 'DUPLICATE_RESOURCE') return;
      throw error;
    });
  }
}
