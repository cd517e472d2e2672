/** A query string's parameters; undefined and empty ones are left out. */
export type Query = Readonly<Record<string, string | number | undefined>>;

/**
 * Where the API is, from where the console is: the console is at <base>/console, so the API
 * is at <base> ('' on localhost:7979, '/admin' under a custom domain's admin base path).
 */
export const apiBase = (pathname: string): string => pathname.replace(/\/console(\/.*)?$/, '');

export function urlOf(base: string, path: string, query: Query = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return `${base}${path}${text ? `?${text}` : ''}`;
}
