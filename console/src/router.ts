import { useEffect, useState } from 'preact/hooks';

/**
 * Pages live in the URL's fragment (#/budgets?tenant=acme): a reload or a shared link opens
 * the same view, and the server serves one page. Only view state goes there, never a key.
 */
export const PAGES = [
  'overview',
  'tenants',
  'budgets',
  'policies',
  'reservations',
  'keys',
  'events',
  'webhooks',
  'audit',
] as const;
export type PageId = (typeof PAGES)[number];

export const PAGE_TITLES: Readonly<Record<PageId, string>> = {
  overview: 'Overview',
  tenants: 'Tenants',
  budgets: 'Budgets',
  policies: 'Policies',
  reservations: 'Reservations',
  keys: 'API keys',
  events: 'Events',
  webhooks: 'Webhooks',
  audit: 'Audit trail',
};

export type Params = Readonly<Record<string, string>>;

export interface Location {
  readonly page: PageId;
  readonly params: Params;
}

export function parseHash(hash: string): Location {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  const page = (PAGES as readonly string[]).includes(path) ? (path as PageId) : 'overview';
  return { page, params: Object.fromEntries(new URLSearchParams(query)) };
}

export function hrefOf(page: PageId, params: Record<string, string | undefined> = {}): string {
  const defined = Object.entries(params).filter((e): e is [string, string] => !!e[1]);
  const query = new URLSearchParams(defined).toString();
  return `#/${page}${query ? `?${query}` : ''}`;
}

export function navigate(page: PageId, params: Record<string, string | undefined> = {}): void {
  window.location.hash = hrefOf(page, params);
}

export function useLocation(): Location {
  const [location, setLocation] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const onChange = () => setLocation(parseHash(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return location;
}
