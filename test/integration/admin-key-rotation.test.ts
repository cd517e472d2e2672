import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { adminHeaders } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// A rotation window locally: ADMIN_API_KEY is the new key (the fixtures' own), and
// ADMIN_API_KEY_PREVIOUS the key operators and scripts still hold until they switch. In AWS the
// same two values are the secret's AWSCURRENT and AWSPREVIOUS versions (functions/config/secrets.ts).
const PREVIOUS = 'previous-admin-key';
const stack = useTestStack({ env: { ADMIN_API_KEY_PREVIOUS: PREVIOUS } });

const createTenant = (key: string) =>
  request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
    headers: { 'x-admin-api-key': key },
    body: { tenant_id: `r-${randomUUID().slice(0, 12)}`, name: 'Rotation' },
  });

describe('admin key rotation', () => {
  it('accepts the current and the previous key alike, and audits both as admin', async () => {
    const withCurrent = await createTenant(adminHeaders['x-admin-api-key']);
    const withPrevious = await createTenant(PREVIOUS);

    expect([withCurrent.status, withPrevious.status]).toEqual([201, 201]);
    const trail = await request<{ logs: { metadata: { actor: string } }[] }>(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${withPrevious.body.tenant_id}`,
      { headers: { 'x-admin-api-key': PREVIOUS } },
    );
    expect(trail.status).toBe(200);
    expect(trail.body.logs.map((l) => l.metadata.actor)).toEqual(['admin']);
  });

  it('refuses any other key with 401, and a key that only resembles one of them', async () => {
    expectError(await createTenant('not-the-admin-key'), 401, 'UNAUTHORIZED', 'admin');
    expectError(await createTenant(`${PREVIOUS}x`), 401, 'UNAUTHORIZED', 'admin');
  });
});
