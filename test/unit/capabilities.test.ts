import { describe, expect, it } from 'vitest';
import {
  adminCapabilities,
  CAPABILITIES,
  type Capability,
  tenantCapabilities,
} from '../../functions/domain/capabilities.js';

/** All fifteen flags: true for those named, false for the rest. */
const only = (...trueOnes: Capability[]) =>
  Object.fromEntries(CAPABILITIES.map((c) => [c, trueOnes.includes(c)]));

const ADMIN_PLANE: readonly Capability[] = [
  'view_overview',
  'view_tenants',
  'view_api_keys',
  'view_audit',
  'manage_tenants',
  'manage_api_keys',
];

describe('tenantCapabilities (the reference derivation table)', () => {
  it.each([
    ['budgets:read', ['view_budgets']],
    ['admin:budgets:read', ['view_budgets']],
    ['policies:read', ['view_policies']],
    ['webhooks:read', ['view_webhooks']],
    ['events:read', ['view_events']],
    ['reservations:list', ['view_reservations']],
    ['reservations:commit', ['view_reservations', 'manage_reservations']],
    ['reservations:release', ['view_reservations', 'manage_reservations']],
    ['budgets:write', ['manage_budgets']],
    ['admin:budgets:write', ['manage_budgets']],
    ['policies:write', ['manage_policies']],
    ['webhooks:write', ['manage_webhooks']],
    ['balances:read', []],
    ['decide', []],
    ['events:create', []],
  ] as const)('%s grants exactly %j', (permission, expected) => {
    expect(tenantCapabilities([permission])).toEqual(only(...expected));
  });

  it('lets admin:read grant every tenant view, admin:write every tenant manage flag', () => {
    expect(tenantCapabilities(['admin:read'])).toEqual(
      only('view_budgets', 'view_policies', 'view_webhooks', 'view_events', 'view_reservations'),
    );
    expect(tenantCapabilities(['admin:write'])).toEqual(
      only('manage_budgets', 'manage_policies', 'manage_webhooks', 'manage_reservations'),
    );
  });

  it('keeps the six admin-plane flags false whatever admin permission a tenant key holds', () => {
    const legacy = [
      'admin:read',
      'admin:write',
      'admin:tenants:read',
      'admin:tenants:write',
      'admin:apikeys:read',
      'admin:apikeys:write',
      'admin:audit:read',
    ];

    const capabilities = tenantCapabilities(legacy);

    for (const c of ADMIN_PLANE) expect(capabilities[c], c).toBe(false);
  });

  it('gives a key without permissions no capability', () => {
    expect(tenantCapabilities([])).toEqual(only());
  });
});

describe('adminCapabilities', () => {
  it('is every flag true', () => {
    expect(adminCapabilities()).toEqual(only(...CAPABILITIES));
  });
});
