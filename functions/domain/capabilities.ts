/**
 * The dashboard capabilities of GET /v1/auth/introspect, named as the reference spells them
 * (cycles-governance-admin v0.1.25, `AuthIntrospectResponse.capabilities`): the eight required
 * flags, then the seven optional ones, which we always send (as the reference server does).
 */
export const CAPABILITIES = [
  'view_overview',
  'view_budgets',
  'view_events',
  'view_webhooks',
  'view_audit',
  'view_tenants',
  'view_api_keys',
  'view_policies',
  'view_reservations',
  'manage_budgets',
  'manage_policies',
  'manage_webhooks',
  'manage_tenants',
  'manage_api_keys',
  'manage_reservations',
] as const;
export type Capability = (typeof CAPABILITIES)[number];
export type Capabilities = Readonly<Record<Capability, boolean>>;

const RESERVATION_WRITES = [
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
] as const;

/**
 * The reference's NORMATIVE derivation table for a tenant key, row for row: a capability is true
 * iff the key holds any permission of its row. The six admin-plane rows are empty: they are false
 * under a tenant key whatever `admin:*` permission it carries ("ADMIN-PLANE CAPABILITIES UNDER
 * auth_type=tenant"). Permissions are plain strings here: the table names the reference's
 * permissions, most of which we do not issue.
 */
const TENANT_RULES: Readonly<Record<Capability, readonly string[]>> = {
  view_overview: [],
  view_budgets: ['budgets:read', 'admin:read', 'admin:budgets:read'],
  view_events: ['events:read', 'admin:read', 'admin:events:read'],
  view_webhooks: ['webhooks:read', 'admin:read', 'admin:webhooks:read'],
  view_audit: [],
  view_tenants: [],
  view_api_keys: [],
  view_policies: ['policies:read', 'admin:read', 'admin:policies:read'],
  view_reservations: ['reservations:list', ...RESERVATION_WRITES, 'admin:read'],
  manage_budgets: ['budgets:write', 'admin:write', 'admin:budgets:write'],
  manage_policies: ['policies:write', 'admin:write', 'admin:policies:write'],
  manage_webhooks: ['webhooks:write', 'admin:write', 'admin:webhooks:write'],
  manage_tenants: [],
  manage_api_keys: [],
  manage_reservations: [...RESERVATION_WRITES, 'admin:write'],
};

/** A tenant key's capabilities, derived from its permissions by the table above. */
export function tenantCapabilities(permissions: readonly string[]): Capabilities {
  const held = new Set(permissions);
  return Object.fromEntries(
    CAPABILITIES.map((c) => [c, TENANT_RULES[c].some((p) => held.has(p))]),
  ) as Capabilities;
}

/**
 * The rows of the six admin-plane flags for a named operator credential (docs/decisions.md §
 * Operators), by the same wildcard reading as the tenant rows: the wildcard or the granular
 * admin permission of the resource. The other rows are the tenant table's, whose `admin:*`
 * entries an operator's permissions meet.
 */
const OPERATOR_RULES: Readonly<Record<Capability, readonly string[]>> = {
  ...TENANT_RULES,
  view_overview: ['admin:read'],
  view_audit: ['admin:read', 'admin:audit:read'],
  view_tenants: ['admin:read', 'admin:tenants:read'],
  view_api_keys: ['admin:read', 'admin:apikeys:read'],
  manage_tenants: ['admin:write', 'admin:tenants:write'],
  manage_api_keys: ['admin:write', 'admin:apikeys:write'],
};

/** A named operator credential's capabilities, from its `admin:*` permissions. */
export function operatorCapabilities(permissions: readonly string[]): Capabilities {
  const held = new Set(permissions);
  return Object.fromEntries(
    CAPABILITIES.map((c) => [c, OPERATOR_RULES[c].some((p) => held.has(p))]),
  ) as Capabilities;
}

/** The admin key is unconstrained (`permissions: ["*"]`): every capability is true. */
export const adminCapabilities = (): Capabilities =>
  Object.fromEntries(CAPABILITIES.map((c) => [c, true])) as Capabilities;
