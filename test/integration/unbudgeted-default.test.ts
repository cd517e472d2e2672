import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { adminHeaders } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// UNBUDGETED_SCOPES_DEFAULT=SKIP (a deployment moving from the reference, and the reference
// dashboard's unchanged e2e seed): a tenant created without `unbudgeted_scopes` skips unbudgeted
// scopes; one that names SPEC's rule keeps it. test/integration/unbudgeted.test.ts has both
// behaviours on the runtime operations.
const stack = useTestStack({ env: { UNBUDGETED_SCOPES_DEFAULT: 'SKIP' } });
const admin = (method: string, path: string, body?: Json) =>
  request(method, `${stack.adminUrl}${path}`, { headers: adminHeaders, body });

describe('UNBUDGETED_SCOPES_DEFAULT=SKIP', () => {
  it('makes SKIP the option of a tenant created without one, and leaves an explicit one', async () => {
    const plain = `plain-${randomUUID().slice(0, 8)}`;
    const spec = `spec-${randomUUID().slice(0, 8)}`;

    const created = await admin('POST', '/v1/admin/tenants', { tenant_id: plain, name: 'Plain' });
    const explicit = await admin('POST', '/v1/admin/tenants', {
      tenant_id: spec,
      name: 'SPEC',
      unbudgeted_scopes: 'ZERO_ALLOCATION',
    });

    expect(created.status).toBe(201);
    expect(created.body.unbudgeted_scopes).toBe('SKIP');
    expect(explicit.status).toBe(201);
    expect(explicit.body).not.toHaveProperty('unbudgeted_scopes');
  });
});
