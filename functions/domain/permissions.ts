/** SPEC § Administration records: the eight permission names. */
export const PERMISSIONS = [
  'reservations:create',
  'reservations:commit',
  'reservations:release',
  'reservations:extend',
  'reservations:list',
  'balances:read',
  'decide',
  'events:create',
] as const;
export type Permission = (typeof PERMISSIONS)[number];
