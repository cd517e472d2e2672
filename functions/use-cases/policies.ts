import { randomBytes } from 'node:crypto';
import { type Credential, requireOwnTenant } from '../domain/caller.js';
import type { Caps } from '../domain/caps.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import type { OveragePolicy } from '../domain/ledger.js';
import {
  canonicalPattern,
  changedPolicy,
  MAX_POLICIES_PER_TENANT,
  type Policy,
  type PolicyChange,
  type PolicyStatus,
  type RateLimits,
  requireWindow,
  type TtlOverride,
} from '../domain/policies.js';
import { tenantClosed } from '../domain/tenant.js';
import { getPolicy, insertPolicy, queryPolicies, updatePolicy } from '../store/policies.js';
import { actorOf, type WriteContext } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import { type Page, type PageRequest, paged } from './pages.js';

// POST/GET /v1/admin/policies, GET/PATCH /v1/admin/policies/{policy_id}: the operator's (admin
// key, any tenant) and a tenant key's (policies:read / policies:write, its own tenant).
// Admission applies them (use-cases/admission.ts, domain/policies.ts policyEffect).

export interface PolicyRequest {
  /** Required with the admin key; a tenant key's own tenant otherwise (never sent). */
  readonly tenantId?: string | undefined;
  readonly name: string;
  readonly description?: string | undefined;
  readonly scopePattern: string;
  readonly priority: number;
  readonly caps?: Caps | undefined;
  readonly commitOveragePolicy?: OveragePolicy | undefined;
  readonly ttl?: TtlOverride | undefined;
  readonly rateLimits?: RateLimits | undefined;
  readonly effectiveFrom?: string | undefined;
  readonly effectiveUntil?: string | undefined;
}

/**
 * The tenant a request is for: the admin key names it (400 without), a tenant key never does (it
 * is the key's own; the reference refuses a tenant_id sent with a tenant key with 400).
 */
function tenantOf(writer: Credential, tenantId: string | undefined, where: string): string {
  if (writer.kind === 'tenant') {
    if (tenantId !== undefined && tenantId !== writer.tenant) {
      throw invalidRequest(`${where}tenant_id is not sent with a tenant key: it is the key's own`, {
        field: 'tenant_id',
      });
    }
    return writer.tenant;
  }
  if (tenantId === undefined) {
    throw invalidRequest(`${where}tenant_id is required with the admin key`, {
      field: 'tenant_id',
    });
  }
  return tenantId;
}

const newPolicyId = (): string => `pol_${randomBytes(8).toString('hex')}`;

/** The reference's "*\/agent:x" (any tenant) is a pattern without a root: the policy's tenant's. */
const patternOf = (pattern: string, tenant: string) =>
  canonicalPattern(pattern.startsWith('*/') ? pattern.slice(2) : pattern, tenant);

/** POST /v1/admin/policies: audited; at most MAX_POLICIES_PER_TENANT per tenant. */
export async function createPolicy(
  writer: Credential,
  request: PolicyRequest,
  context: WriteContext,
): Promise<Policy> {
  const tenant = tenantOf(writer, request.tenantId, '');
  const { tenantId: _, ...fields } = request;
  const policy: Policy = {
    ...fields,
    policyId: newPolicyId(),
    tenant,
    scopePattern: patternOf(request.scopePattern, tenant),
    status: 'ACTIVE',
    createdAt: new Date(context.now).toISOString(),
    owner: writer.kind === 'tenant' ? 'tenant' : 'operator',
  };
  requireWindow(policy);
  const audit = {
    tenant,
    actor: actorOf(writer),
    requestId: context.requestId,
    atMs: context.now,
    action: 'policy.create' as const,
    after: policy,
  };
  const written = await insertPolicy(policy, audit);
  if (written === 'noTenant') {
    throw new DomainError('NOT_FOUND', `tenant ${tenant} does not exist`, { tenant_id: tenant });
  }
  if (written === 'tenantClosed') throw tenantClosed(tenant);
  if (written === 'duplicate') throw duplicateName(policy.name);
  if (written === 'full') {
    throw new DomainError(
      'LIMIT_EXCEEDED',
      `tenant ${tenant} has ${MAX_POLICIES_PER_TENANT} policies, the most it may have`,
      { tenant_id: tenant, max_policies: MAX_POLICIES_PER_TENANT },
    );
  }
  if (written === 'stale') throw new Error('policy creation failed on no known condition');
  return policy;
}

const duplicateName = (name: string) =>
  new DomainError('DUPLICATE_RESOURCE', `a policy named '${name}' already exists`, { name });

const notFound = (policyId: string) =>
  new DomainError('NOT_FOUND', `policy ${policyId} does not exist`, { policy_id: policyId });

/** A policy a credential may see: any for the operator, its own tenant's for a key. */
async function visiblePolicy(reader: Credential, policyId: string): Promise<Policy> {
  const policy = await getPolicy(policyId);
  if (!policy) throw notFound(policyId);
  if (reader.kind === 'tenant') requireOwnTenant(reader, policy.tenant, `policy ${policyId}`);
  return policy;
}

/** GET /v1/admin/policies/{policy_id} (ours: the reference lists and patches only). */
export const readPolicy = visiblePolicy;

/** GET /v1/admin/policies: one tenant's, by id; filtered by scope_pattern and status. */
export function listPolicies(
  reader: Credential,
  q: PageRequest & {
    readonly tenantId?: string | undefined;
    readonly scopePattern?: string | undefined;
    readonly status?: PolicyStatus | undefined;
  },
): Promise<Page<Policy>> {
  // The reference: a tenant key's tenant_id is ignored, the admin key's required.
  const tenant = reader.kind === 'tenant' ? reader.tenant : tenantOf(reader, q.tenantId, '');
  const pattern = q.scopePattern === undefined ? undefined : patternOf(q.scopePattern, tenant);
  const binding = { route: 'policies', tenant, pattern, status: q.status };
  return paged(binding, q, async (after) => {
    const page = await queryPolicies({
      tenant,
      after,
      limit: q.limit,
      matches: (p) =>
        (pattern === undefined || p.scopePattern === pattern) &&
        (q.status === undefined || p.status === q.status),
    });
    return { items: page.policies, nextPosition: page.nextPosition };
  });
}

/**
 * PATCH /v1/admin/policies/{policy_id}: audited; refused once its tenant is CLOSED. A tenant
 * key changes only its own tenant's policies that a tenant key made: the operator's limits are
 * not the agent's to lift (403).
 */
export function changePolicy(
  writer: Credential,
  policyId: string,
  change: PolicyChange,
  context: WriteContext,
): Promise<Policy> {
  return whileStale(async () => {
    const before = await visiblePolicy(writer, policyId);
    if (writer.kind === 'tenant' && before.owner !== 'tenant') {
      throw new DomainError(
        'FORBIDDEN',
        `policy ${policyId} is the operator's: a tenant key cannot change it`,
        { policy_id: policyId },
      );
    }
    const pattern =
      change.scopePattern === undefined ? undefined : patternOf(change.scopePattern, before.tenant);
    const after = changedPolicy(
      before,
      { ...change, ...(pattern !== undefined && { scopePattern: pattern }) },
      new Date(context.now).toISOString(),
    );
    if (after === before) return before;
    requireWindow(after);
    const audit = {
      tenant: before.tenant,
      actor: actorOf(writer),
      requestId: context.requestId,
      atMs: context.now,
      action: 'policy.update' as const,
      before,
      after,
    };
    const written = await updatePolicy(before, after, audit);
    if (written === 'tenantClosed') throw tenantClosed(before.tenant);
    if (written === 'duplicate') throw duplicateName(after.name);
    return written === 'written' ? after : readAgain;
  });
}
