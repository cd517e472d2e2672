/**
 * Where the API is, from where the console is: the console is at <base>/console, so the API
 * is at <base> ('' on localhost:7979, '/admin' under a custom domain's admin base path).
 */
export const apiBase = (pathname: string): string => pathname.replace(/\/console(\/.*)?$/, '');
