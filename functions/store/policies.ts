import type { AuditEntry } from '../domain/audit.js';
import { MAX_POLICIES_PER_TENANT, type Policy } from '../domain/policies.js';
import {
  claimPolicyName,
  isPolicyItem,
  policyAttributes,
  policyItem,
  policyOf,
  policyPointerItem,
  releasePolicyName,
} from './entities/policy.js';
import { tenantNotClosed, tenantOpen } from './entities/tenant.js';
import { and, attr, or, putIfAbsent, update } from './expressions.js';
import { keys, POLICY_PREFIX } from './keys.js';
import { queryPage } from './pages.js';
import { getItems, transact } from './transact.js';
import { auditPut } from './write.js';

export type PolicyWrite = 'written' | 'noTenant' | 'tenantClosed' | 'duplicate' | 'full' | 'stale';

/**
 * A new policy, its name lock and id pointer, and its audit record, in one transaction: only
 * for a tenant that exists, is not CLOSED and has fewer than MAX_POLICIES_PER_TENANT policies
 * (a count on the tenant item), under a name no other policy of the tenant has.
 */
export async function insertPolicy(p: Policy, audit: AuditEntry): Promise<PolicyWrite> {
  const outcome = await transact([
    update(
      keys.tenant(p.tenant),
      { increment: { policy_count: 1 } },
      {
        condition: and(
          attr('pk').exists(),
          tenantNotClosed,
          or(attr('policy_count').notExists(), attr('policy_count').lt(MAX_POLICIES_PER_TENANT)),
        ),
        returnOld: true,
      },
    ),
    putIfAbsent(policyItem(p)),
    claimPolicyName(p),
    putIfAbsent(policyPointerItem(p)),
    auditPut(audit),
  ]);
  if (outcome.kind === 'committed') return 'written';
  const [tenant, , name] = outcome.reasons;
  if (tenant?.code === 'ConditionalCheckFailed') {
    if (tenant.item === undefined) return 'noTenant';
    return tenant.item.status === 'CLOSED' ? 'tenantClosed' : 'full';
  }
  return name?.code === 'ConditionalCheckFailed' ? 'duplicate' : 'stale';
}

/** A policy by its id: its pointer, then the policy (strongly consistent). */
export async function getPolicy(policyId: string): Promise<Policy | undefined> {
  const pointer = keys.policyId(policyId);
  const tenant = (await getItems([pointer])).get(pointer.pk)?.tenant;
  if (typeof tenant !== 'string') return undefined;
  const key = keys.policy(tenant, policyId);
  const item = (await getItems([key])).get(key.pk);
  return isPolicyItem(item) ? policyOf(item) : undefined;
}

/** A tenant's policies by id (its partition: strongly consistent). */
export async function queryPolicies(q: {
  readonly tenant: string;
  readonly matches?: (p: Policy) => boolean;
  readonly after?: string | undefined;
  readonly limit: number;
}) {
  const page = await queryPage({
    partitionKey: 'pk',
    partition: keys.tenant(q.tenant).pk,
    sortKey: 'sk',
    lowest: POLICY_PREFIX,
    highest: `${POLICY_PREFIX}~`,
    newestFirst: false,
    after: q.after,
    limit: q.limit,
    matches: (item) => isPolicyItem(item) && (q.matches?.(policyOf(item)) ?? true),
  });
  return { policies: page.items.map(policyOf), nextPosition: page.nextPosition };
}

/**
 * A change to a policy as it was read (its `updated_at`), with its audit record: only while its
 * tenant is not CLOSED (the reference's Rule 2); a new name moves its lock.
 */
export async function updatePolicy(
  before: Policy,
  after: Policy,
  audit: AuditEntry,
): Promise<PolicyWrite> {
  const attributes = Object.entries(policyAttributes(after));
  const renamed = after.name !== before.name;
  const outcome = await transact([
    tenantOpen(after.tenant),
    update(
      keys.policy(after.tenant, after.policyId),
      {
        set: Object.fromEntries(attributes.filter(([, v]) => v !== undefined)),
        remove: attributes.filter(([, v]) => v === undefined).map(([a]) => a),
      },
      {
        condition:
          before.updatedAt === undefined
            ? attr('updated_at').notExists()
            : attr('updated_at').eq(before.updatedAt),
      },
    ),
    ...(renamed ? [releasePolicyName(before), claimPolicyName(after)] : []),
    auditPut(audit),
  ]);
  if (outcome.kind === 'committed') return 'written';
  const [tenant, , , name] = outcome.reasons;
  if (tenant?.code === 'ConditionalCheckFailed') return 'tenantClosed';
  return renamed && name?.code === 'ConditionalCheckFailed' ? 'duplicate' : 'stale';
}
