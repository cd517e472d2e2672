import type { Ledger } from './ledger.js';

/** Who changed something: the operator's admin key, or a tenant API key by its id. */
export type Actor = { readonly kind: 'admin' } | { readonly kind: 'key'; readonly keyId: string };

export const actorName = (a: Actor): string => (a.kind === 'admin' ? 'admin' : a.keyId);

/** One change to a budget, recorded in the same transaction as the change itself. */
export interface AuditEntry {
  readonly tenant: string;
  readonly atMs: number;
  readonly actor: Actor;
  readonly requestId: string;
  readonly action: 'budget.create' | 'budget.fund';
  readonly scope: string;
  readonly unit: Ledger['unit'];
  /** Absent for a creation. */
  readonly before?: Ledger | undefined;
  readonly after: Ledger;
  readonly detail?: Readonly<Record<string, unknown>> | undefined;
}
