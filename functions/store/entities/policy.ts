import type { Caps } from '../../domain/caps.js';
import type { OveragePolicy } from '../../domain/ledger.js';
import type { Policy, PolicyStatus, RateLimits, TtlOverride } from '../../domain/policies.js';
import { attr, type Item, or, type TransactItem, update } from '../expressions.js';
import { keys } from '../keys.js';

// The policy family: a policy in its tenant's partition (keys.ts), a name lock beside it, and a
// pointer from its id to its tenant. A tenant's state and its policies are one Query.

/** Written on every policy item (the family is new in this version). */
export const POLICY_VERSION = 1;

export const isPolicyItem = (item: Item | undefined): item is Item => item?.type === 'policy';

/** Everything but the keys: what a change rewrites (undefined attributes are removed). */
export const policyAttributes = (p: Policy): Item => ({
  type: 'policy',
  policy_id: p.policyId,
  tenant: p.tenant,
  name: p.name,
  description: p.description,
  scope_pattern: p.scopePattern,
  priority: p.priority,
  // JSON text, as on a ledger: lists keep their canonical order.
  caps: p.caps && JSON.stringify(p.caps),
  overage_policy: p.commitOveragePolicy,
  ttl: p.ttl && { ...p.ttl },
  rate_limits: p.rateLimits && { ...p.rateLimits },
  status: p.status,
  effective_from: p.effectiveFrom,
  effective_until: p.effectiveUntil,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
  owner: p.owner,
});

export const policyItem = (p: Policy): Item => ({
  ...keys.policy(p.tenant, p.policyId),
  ...policyAttributes(p),
  v: POLICY_VERSION,
});

/**
 * Claims a name for a policy: its lock item, where the name is free (never used, or released by
 * a rename) or already the policy's. An Update, not a Put and Delete, so a rename needs no
 * DeleteItem permission.
 */
export const claimPolicyName = (p: Pick<Policy, 'tenant' | 'name' | 'policyId'>): TransactItem =>
  update(
    keys.policyName(p.tenant, p.name),
    { set: { type: 'policy-name', v: POLICY_VERSION, policy_id: p.policyId, released: false } },
    {
      condition: or(
        attr('policy_id').notExists(),
        attr('released').eq(true),
        attr('policy_id').eq(p.policyId),
      ),
    },
  );

/** Frees the name a policy held (a rename). */
export const releasePolicyName = (p: Pick<Policy, 'tenant' | 'name' | 'policyId'>): TransactItem =>
  update(
    keys.policyName(p.tenant, p.name),
    { set: { released: true } },
    { condition: attr('policy_id').eq(p.policyId) },
  );

export const policyPointerItem = (p: Pick<Policy, 'tenant' | 'policyId'>): Item => ({
  ...keys.policyId(p.policyId),
  type: 'policy-id',
  v: POLICY_VERSION,
  tenant: p.tenant,
});

const text = (v: unknown) => (v === undefined ? undefined : String(v));
const numbers = <T extends object>(v: unknown): T | undefined =>
  v === undefined
    ? undefined
    : (Object.fromEntries(Object.entries(v as object).map(([k, n]) => [k, Number(n)])) as T);

export function policyOf(item: Item): Policy {
  return {
    policyId: String(item.policy_id),
    tenant: String(item.tenant),
    name: String(item.name),
    description: text(item.description),
    scopePattern: String(item.scope_pattern),
    priority: Number(item.priority ?? 0),
    caps: item.caps === undefined ? undefined : (JSON.parse(String(item.caps)) as Caps),
    commitOveragePolicy: text(item.overage_policy) as OveragePolicy | undefined,
    ttl: numbers<TtlOverride>(item.ttl),
    rateLimits: numbers<RateLimits>(item.rate_limits),
    status: String(item.status) as PolicyStatus,
    effectiveFrom: text(item.effective_from),
    effectiveUntil: text(item.effective_until),
    createdAt: String(item.created_at),
    updatedAt: text(item.updated_at),
    owner: item.owner === 'tenant' ? 'tenant' : 'operator',
  };
}
