import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Tenant } from '../../client/index.js';
import type { Client } from './api.js';

export interface ConsoleContext {
  readonly client: Client;
  /** Every tenant, for the pickers; reloaded after a tenant changes. */
  readonly tenants: { readonly list?: readonly Tenant[] | undefined; readonly reload: () => void };
  /** A short message for the live region ("Budget funded"). */
  readonly notify: (message: string) => void;
}

export const Console = createContext<ConsoleContext | undefined>(undefined);

export function useConsole(): ConsoleContext {
  const value = useContext(Console);
  if (!value) throw new Error('useConsole outside the signed-in console');
  return value;
}
