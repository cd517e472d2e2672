import { MAX_AMOUNT } from '../domain/amounts.js';
import {
  generateKeyId,
  generateKeySecret,
  hashKeySecret,
  isExpired,
  keyPrefixOf,
} from '../domain/api-keys.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { fingerprint } from '../domain/fingerprint.js';
import { applyDelta, fundChange, type Ledger } from '../domain/ledger.js';
import { parseScope, tenantOfScope } from '../domain/scopes.js';
import type { TenantCaller } from '../http/auth.js';
import type { Reply } from '../http/handler.js';
import type {
  CreateApiKeyBody,
  CreateBudgetBody,
  CreateTenantBody,
  FundBudgetBody,
} from '../http/schemas/admin.js';
import { amountView, balanceView } from '../http/views.js';
import { getApiKeyByHash, insertApiKey } from '../store/api-keys.js';
import { fundLedger, insertLedger } from '../store/ledgers.js';
import { readSnapshot } from '../store/snapshot.js';
import { insertTenant } from '../store/tenants.js';
import { MAX_STALE_RETRIES, replayOrMismatch } from './replay.js';

/** POST /v1/admin/tenants → 201 with the tenant record; an existing id → 409. */
export async function createTenant(body: CreateTenantBody, now: number): Promise<Reply> {
  const tenant = {
    tenantId: body.tenant_id,
    name: body.name,
    status: 'ACTIVE' as const,
    createdAt: new Date(now).toISOString(),
  };
  if ((await insertTenant(tenant)) === 'duplicate') {
    throw new DomainError('DUPLICATE_RESOURCE', `tenant ${body.tenant_id} already exists`, {
      tenant_id: body.tenant_id,
    });
  }
  return {
    statusCode: 201,
    body: {
      tenant_id: tenant.tenantId,
      name: tenant.name,
      status: tenant.status,
      created_at: tenant.createdAt,
    },
  };
}

/** POST /v1/admin/api-keys → 201; the secret is in this response and nowhere else. */
export async function createApiKey(body: CreateApiKeyBody, now: number): Promise<Reply> {
  if (body.expires_at !== undefined && Date.parse(body.expires_at) <= now) {
    throw invalidRequest('expires_at: must be in the future', { field: 'expires_at' });
  }
  const secret = generateKeySecret();
  const key = {
    keyId: generateKeyId(),
    keyPrefix: keyPrefixOf(secret),
    tenant: body.tenant_id,
    name: body.name,
    description: body.description,
    permissions: [...new Set(body.permissions)],
    createdAt: new Date(now).toISOString(),
    expiresAt: body.expires_at === undefined ? undefined : new Date(body.expires_at).toISOString(),
  };
  if ((await insertApiKey(hashKeySecret(secret), key)) === 'noTenant') {
    throw new DomainError('NOT_FOUND', `tenant ${body.tenant_id} does not exist`, {
      tenant_id: body.tenant_id,
    });
  }
  return {
    statusCode: 201,
    body: {
      key_id: key.keyId,
      key_prefix: key.keyPrefix,
      key_secret: secret,
      tenant_id: key.tenant,
      name: key.name,
      ...(key.description !== undefined && { description: key.description }),
      permissions: key.permissions,
      created_at: key.createdAt,
      ...(key.expiresAt !== undefined && { expires_at: key.expiresAt }),
    },
  };
}

/** POST /v1/auth/validate → always 200; `valid: false` with a reason for unknown or expired keys. */
export async function validateKey(secret: string, now: number): Promise<Reply> {
  const key = await getApiKeyByHash(hashKeySecret(secret));
  if (!key) return { statusCode: 200, body: { valid: false, reason: 'KEY_NOT_FOUND' } };
  if (isExpired(key, now))
    return { statusCode: 200, body: { valid: false, reason: 'KEY_EXPIRED' } };
  return {
    statusCode: 200,
    body: {
      valid: true,
      tenant_id: key.tenant,
      key_id: key.keyId,
      permissions: key.permissions,
      ...(key.expiresAt !== undefined && { expires_at: key.expiresAt }),
    },
  };
}

function scopeOfCaller(caller: TenantCaller, scope: string) {
  const segments = parseScope(scope);
  if (tenantOfScope(segments) !== caller.tenant) {
    throw new DomainError('FORBIDDEN', `scope ${scope} belongs to another tenant`, { scope });
  }
  return segments;
}

function ledgerRecord(tenant: string, l: Ledger, createdAt?: string) {
  return {
    tenant_id: tenant,
    ...balanceView(l),
    unit: l.unit,
    ...(createdAt && { created_at: createdAt }),
  };
}

/** POST /v1/admin/budgets (tenant key) → 201 with the ledger; allocated is spendable at once. */
export async function createBudget(
  caller: TenantCaller,
  body: CreateBudgetBody,
  now: number,
): Promise<Reply> {
  const segments = scopeOfCaller(caller, body.scope);
  for (const [field, amount] of [
    ['allocated', body.allocated],
    ['overdraft_limit', body.overdraft_limit],
  ] as const) {
    if (amount && amount.unit !== body.unit) {
      throw invalidRequest(`${field}.unit: must equal unit ${body.unit}`, {
        field: `${field}.unit`,
      });
    }
  }
  const ledger: Ledger = {
    scope: body.scope,
    unit: body.unit,
    allocated: body.allocated.amount,
    spent: 0,
    reserved: 0,
    debt: 0,
    overdraftLimit: body.overdraft_limit?.amount ?? 0,
    remaining: body.allocated.amount,
  };
  const createdAt = new Date(now).toISOString();
  if (
    (await insertLedger({ tenant: caller.tenant, segments, ledger, createdAt })) === 'duplicate'
  ) {
    throw new DomainError(
      'DUPLICATE_RESOURCE',
      `a budget for ${body.scope} in ${body.unit} already exists`,
      {
        scope: body.scope,
        unit: body.unit,
      },
    );
  }
  return { statusCode: 201, body: ledgerRecord(caller.tenant, ledger, createdAt) };
}

/** POST /v1/admin/budgets/{scope}/{unit}/fund: CREDIT, RESET or REPAY_DEBT, idempotent. */
export async function fundBudget(
  caller: TenantCaller,
  params: { scope: string; unit: Ledger['unit'] },
  body: FundBudgetBody,
  now: number,
): Promise<Reply> {
  scopeOfCaller(caller, params.scope);
  if (body.amount.unit !== params.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `amount is in ${body.amount.unit}, the budget in ${params.unit}`,
      {
        requested_unit: body.amount.unit,
        expected_unit: params.unit,
      },
    );
  }
  const idempotency = { tenant: caller.tenant, operation: 'fund', key: body.idempotency_key };
  const print = fingerprint({ ...params, ...body });
  for (let attempt = 0; ; attempt++) {
    const snapshot = await readSnapshot({
      idempotency,
      ledgers: { scopes: [params.scope], unit: params.unit },
    });
    if (snapshot.stored) return replayOrMismatch(snapshot.stored, print);
    const ledger = snapshot.ledgers.get(params.scope);
    if (!ledger)
      throw new DomainError('NOT_FOUND', `no budget for ${params.scope} in ${params.unit}`);
    const change = fundChange(ledger, body.operation, body.amount.amount, MAX_AMOUNT);
    const next = applyDelta(ledger, change.delta);
    const unit = ledger.unit;
    const response = {
      operation: body.operation,
      scope: ledger.scope,
      unit,
      previous_allocated: amountView(unit, ledger.allocated),
      new_allocated: amountView(unit, next.allocated),
      previous_remaining: amountView(unit, ledger.remaining),
      new_remaining: amountView(unit, next.remaining),
      previous_debt: amountView(unit, ledger.debt),
      new_debt: amountView(unit, next.debt),
      balance: balanceView(next),
    };
    const outcome = await fundLedger(
      change,
      { scope: idempotency, response: { fingerprint: print, statusCode: 200, body: response } },
      now,
    );
    if (outcome.kind === 'applied') return { statusCode: 200, body: response };
    if (outcome.kind === 'replayed') return replayOrMismatch(outcome.stored, print);
    if (
      change.guard.kind === 'maxAllocated' &&
      outcome.item &&
      Number(outcome.item.allocated) > MAX_AMOUNT - body.amount.amount
    ) {
      throw invalidRequest(`allocated would exceed the largest amount ${MAX_AMOUNT}`, {
        field: 'amount',
      });
    }
    if (attempt >= MAX_STALE_RETRIES) throw new Error('funding kept conflicting');
  }
}
