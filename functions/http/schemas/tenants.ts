import * as z from 'zod/mini';
import { TENANT_STATUSES } from '../../domain/tenant.js';
import type { TenantRequest } from '../../use-cases/tenants.js';
import { AdminPageLimit, Chars, Cursor, camel } from './common.js';

// The operator's tenant requests (docs/decisions.md § Control plane). A module of their own, apart
// from the other admin schemas (schemas/admin.ts): a tenant's functions bundle only these, and
// updateTenant, which carries the close cascade's code, stays within its size target.

/** Tenant ids: 1 to 64 of letters, digits, '_', '.', '-', starting with a letter or digit. */
export const TenantId = Chars(1, 64).check(
  z.regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "must start with a letter or digit and hold only letters, digits, '_', '.' and '-'",
  ),
);

export const CreateTenantBody = z.pipe(
  z.object({ tenant_id: TenantId, name: Chars(1, 256) }),
  z.transform((b): TenantRequest => camel(b)),
);
export type CreateTenantBody = z.infer<typeof CreateTenantBody>;

export const TenantParams = z.object({ tenant_id: TenantId });

export const ListTenantsQuery = z.object({
  status: z.optional(z.enum(TENANT_STATUSES)),
  limit: AdminPageLimit,
  cursor: z.optional(Cursor),
});

/** Strict: a field we do not implement would change what the request means (issue 13 § 5). */
export const UpdateTenantBody = z
  .strictObject({
    name: z.optional(Chars(1, 256)),
    status: z.optional(z.enum(TENANT_STATUSES)),
  })
  .check(
    z.refine((b) => b.name !== undefined || b.status !== undefined, {
      message: 'name or status is required',
    }),
  );
