/** SPEC § Administration records: the eight permission names. */
export const SPEC_PERMISSIONS = [
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
  'reservations:list',
  'balances:read',
  'decide',
  'events:create',
] as const;

/**
 * Create, fund and change budgets (the reference's name too). Without it a key cannot raise the
 * very limits it is held to (an agent's key must not CREDIT its own budget).
 */
export const BUDGETS_WRITE = 'budgets:write';

/**
 * The reference's `Permission` enum beyond SPEC's names (cycles-governance-admin v0.1.25, normative
 * per CONFORMANCE.md): the tenant permissions of its other resources, the two `admin:*` wildcards
 * and the granular admin permissions.
 */
export const REFERENCE_PERMISSIONS = [
  'budgets:read',
  'policies:read',
  'policies:write',
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'admin:read',
  'admin:write',
  'admin:tenants:read',
  'admin:tenants:write',
  'admin:budgets:read',
  'admin:budgets:write',
  'admin:policies:read',
  'admin:policies:write',
  'admin:apikeys:read',
  'admin:apikeys:write',
  'admin:webhooks:read',
  'admin:webhooks:write',
  'admin:events:read',
  'admin:audit:read',
] as const;

/** Every name a key may hold: SPEC's eight, `budgets:write`, and the rest of the reference's enum. */
export const PERMISSIONS = [...SPEC_PERMISSIONS, BUDGETS_WRITE, ...REFERENCE_PERMISSIONS] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What a key made without a list holds: SPEC's eight and `budgets:write`, never `admin:*`. */
export const DEFAULT_PERMISSIONS: readonly Permission[] = [...SPEC_PERMISSIONS, BUDGETS_WRITE];

export const isAdminPermission = (p: Permission): boolean => p.startsWith('admin:');

/**
 * Whether the permissions held grant the one required, by the reference's normative wildcard
 * semantics: `admin:write` satisfies any `*:write`, `admin:read` any `*:read` (never a write),
 * and — as its capability table reads — a granular `admin:<x>:<op>` satisfies `<x>:<op>`.
 */
export function grants(held: readonly Permission[], required: Permission): boolean {
  if (held.includes(required)) return true;
  if (required.endsWith(':read') && held.includes('admin:read')) return true;
  if (required.endsWith(':write') && held.includes('admin:write')) return true;
  return !isAdminPermission(required) && (held as readonly string[]).includes(`admin:${required}`);
}

/**
 * The permissions a key holds. SPEC's bootstrap creates budgets with a key made with no list
 * (all permissions) or with all eight of SPEC's: such a key also holds `budgets:write`, so that
 * order keeps working. Any narrower key does not. Applied to stored keys too, so keys made
 * before `budgets:write` existed keep the rights they were made with.
 */
export function effectivePermissions(given: readonly Permission[]): Permission[] {
  const unique = [...new Set(given)];
  const allOfSpec = SPEC_PERMISSIONS.every((p) => unique.includes(p));
  return allOfSpec && !unique.includes(BUDGETS_WRITE) ? [...unique, BUDGETS_WRITE] : unique;
}
