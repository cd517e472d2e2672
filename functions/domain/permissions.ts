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
 * Ours: create, fund and change budgets. Without it a key cannot raise the very limits it is
 * held to (an agent's key must not CREDIT its own budget).
 */
export const BUDGETS_WRITE = 'budgets:write';

/**
 * The reference's event and webhook permissions (docs/decisions.md § Events and webhooks): read
 * the tenant's events, read and manage its webhook subscriptions. Never held by default: a key
 * gets them when its list names them.
 */
export const EVENT_PERMISSIONS = ['events:read', 'webhooks:read', 'webhooks:write'] as const;

export const PERMISSIONS = [...SPEC_PERMISSIONS, BUDGETS_WRITE, ...EVENT_PERMISSIONS] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What a key made without a `permissions` list holds: SPEC's eight and `budgets:write`. */
export const DEFAULT_PERMISSIONS: readonly Permission[] = [...SPEC_PERMISSIONS, BUDGETS_WRITE];

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
