import { DomainError, MethodNotAllowedError } from '../domain/errors.js';

/**
 * Whatever no route matches: 405 with the methods the path does answer (the route table's) when
 * it is a known path, else SPEC's 404 body, rather than API Gateway's own.
 */
export function notFound(method: string, path: string, allowed: readonly string[]): never {
  if (allowed.length > 0 && !allowed.includes(method)) {
    throw new MethodNotAllowedError(method, path, allowed);
  }
  throw new DomainError('NOT_FOUND', `no endpoint ${method} ${path}`.trim());
}
