import * as z from 'zod';
import { DomainError } from '../../domain/errors.js';
import { MAX_SHARDS } from '../../domain/escrow.js';
import { PERMISSIONS } from '../../domain/permissions.js';
import type { ApiKeyRequest } from '../../use-cases/api-keys.js';
import type { BudgetRequest, FundRequest } from '../../use-cases/budgets.js';
import type { TenantRequest } from '../../use-cases/tenants.js';
import { Amount, camel, IdempotencyKey, Unit } from './common.js';

/** Tenant ids: 1 to 64 of letters, digits, '_', '.', '-', starting with a letter or digit. */
export const TenantId = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "must start with a letter or digit and hold only letters, digits, '_', '.' and '-'",
  );

export const CreateTenantBody = z
  .object({
    tenant_id: TenantId,
    name: z.string().min(1).max(256),
  })
  .transform((b): TenantRequest => camel(b));
export type CreateTenantBody = z.infer<typeof CreateTenantBody>;

export const CreateApiKeyBody = z
  .object({
    tenant_id: TenantId,
    name: z.string().min(1).max(256),
    description: z.string().max(1024).optional(),
    permissions: z
      .array(z.enum(PERMISSIONS))
      .max(PERMISSIONS.length)
      .default([...PERMISSIONS]),
    expires_at: z.iso.datetime({ offset: true }).optional(),
  })
  .transform((b): ApiKeyRequest => camel(b));
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

export const CreateBudgetBody = z
  .object({
    scope: z.string().min(1).max(4096),
    unit: Unit,
    allocated: Amount,
    overdraft_limit: Amount.optional(),
    /** Escrow shards for a busy budget (docs/scaling.md); 1 (unsharded) when absent. */
    shards: z.number().int().min(1).max(MAX_SHARDS).optional(),
  })
  .transform((b): BudgetRequest => camel(b));
export type CreateBudgetBody = z.infer<typeof CreateBudgetBody>;

/**
 * `{budget+}` of POST /v1/admin/budgets/{budget+}: `<scope>/<unit>/fund`, already
 * percent-decoded (API Gateway decodes the path), so a nested scope spans several segments.
 * Anything else under /v1/admin/budgets/ is no endpoint.
 */
export const FundPath = z
  .object({ budget: z.string().max(4200) })
  .transform(({ budget }) => {
    const match = /^(.+)\/([^/]+)\/fund$/.exec(budget);
    if (!match) throw new DomainError('NOT_FOUND', `no endpoint POST /v1/admin/budgets/${budget}`);
    return { scope: match[1] ?? '', unit: match[2] ?? '' };
  })
  .pipe(z.object({ scope: z.string().min(1).max(4096), unit: Unit }));

export const FundBudgetBody = z.object({
  operation: z.enum(['CREDIT', 'RESET', 'REPAY_DEBT']),
  amount: Amount,
  idempotency_key: IdempotencyKey,
  reason: z.string().max(1024).optional(),
});
/** The fund request: the budget from the path, the operation from the body. */
export const fundRequest = (params: z.infer<typeof FundPath>, b: FundBudgetBody): FundRequest => ({
  ...params,
  ...camel(b),
});
export type FundBudgetBody = z.infer<typeof FundBudgetBody>;

export const ValidateKeyBody = z.object({ key_secret: z.string().min(1).max(512) });
