import { DomainError } from '../domain/errors.js';

/** Whatever no route matches: SPEC's error body rather than API Gateway's own 404. */
export function notFound(method: string, path: string): never {
  throw new DomainError('NOT_FOUND', `no endpoint ${method} ${path}`.trim());
}
