import { cursorSecret } from '../config/secrets.js';
import { decodeCursor, encodeCursor } from '../domain/cursor.js';

/** A page of a listing: `nextCursor` only when there is more. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string | undefined;
}

export interface PageRequest {
  readonly limit: number;
  readonly cursor?: string | undefined;
}

/**
 * One page of a listing whose store query resumes after a position: the cursor carries that
 * position, signed together with `binding` (the route and its filters), so a cursor is refused
 * against other filters (domain/cursor.ts).
 */
export async function paged<T>(
  binding: Record<string, unknown>,
  request: PageRequest,
  fetch: (
    after: string | undefined,
  ) => Promise<{ readonly items: readonly T[]; readonly nextPosition?: string | undefined }>,
): Promise<Page<T>> {
  const secret = await cursorSecret();
  const after =
    request.cursor === undefined ? undefined : decodeCursor(secret, binding, request.cursor);
  const page = await fetch(after);
  return {
    items: page.items,
    ...(page.nextPosition !== undefined && {
      nextCursor: encodeCursor(secret, binding, page.nextPosition),
    }),
  };
}
