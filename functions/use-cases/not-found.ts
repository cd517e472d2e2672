import { DomainError } from '../domain/errors.js';

/** Whatever no route matches: SPEC's error body rather than API Gateway's own 404. */
export function notFound(event: {
  requestContext?: { http?: { method?: string } };
  rawPath?: string;
}): never {
  const method = event.requestContext?.http?.method ?? '';
  throw new DomainError('NOT_FOUND', `no endpoint ${method} ${event.rawPath ?? ''}`.trim());
}
