import { cursorSecret } from '../config/secrets.js';
import { decodeCursor, encodeCursor, invalidCursor } from '../domain/cursor.js';
import { DomainError } from '../domain/errors.js';

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

export type SortDirection = 'asc' | 'desc';

/** The reference's bound on an exact in-memory sort: more candidates answer 400 LIMIT_EXCEEDED. */
export const MAX_SORT_CANDIDATES = 20_000;

/** Refused before more than MAX_SORT_CANDIDATES are read: narrow the filters (a tenant, a prefix). */
export const tooManyToSort = (what: string) =>
  new DomainError(
    'LIMIT_EXCEEDED',
    `sorting ${what} reads every match, and more than ${MAX_SORT_CANDIDATES} match: narrow the filters`,
    { max_sort_candidates: MAX_SORT_CANDIDATES },
  );

/** Every item a paged walk yields, up to MAX_SORT_CANDIDATES (else 400 LIMIT_EXCEEDED). */
export async function allOf<T>(
  walk: (
    after: string | undefined,
  ) => Promise<{ readonly items: readonly T[]; readonly nextPosition?: string | undefined }>,
  what: string,
): Promise<T[]> {
  const all: T[] = [];
  for (let after: string | undefined; ; ) {
    const page = await walk(after);
    all.push(...page.items);
    if (all.length > MAX_SORT_CANDIDATES) throw tooManyToSort(what);
    if (page.nextPosition === undefined) return all;
    after = page.nextPosition;
  }
}

/** A sort key: the value sorted on, then an id that makes the order total. */
export type SortKey = readonly [value: string | number, id: string];

const compareKeys = (a: SortKey, b: SortKey): number =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;

/**
 * One page of a listing sorted on a key no index holds, as the reference sorts (exactly, in
 * memory, over at most MAX_SORT_CANDIDATES matches): the candidates are read whole, sorted, and
 * the page taken after the cursor's key. The cursor carries the last key and is bound to the
 * sort and the filters (`binding`), so it cannot be replayed against another order.
 */
export async function sortedPage<T>(
  binding: Record<string, unknown>,
  request: PageRequest & { readonly direction: SortDirection },
  candidates: () => Promise<readonly T[]>,
  keyOf: (item: T) => SortKey,
): Promise<Page<T>> {
  const secret = await cursorSecret();
  const bound = { ...binding, sorted: request.direction };
  const after =
    request.cursor === undefined
      ? undefined
      : parseKey(decodeCursor(secret, bound, request.cursor));
  const sign = request.direction === 'asc' ? 1 : -1;
  const order = (a: SortKey, b: SortKey) => sign * compareKeys(a, b);
  const sorted = [...(await candidates())]
    .map((item) => ({ item, key: keyOf(item) }))
    .sort((a, b) => order(a.key, b.key));
  const rest = after === undefined ? sorted : sorted.filter(({ key }) => order(key, after) > 0);
  const page = rest.slice(0, request.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(({ item }) => item),
    ...(rest.length > request.limit &&
      last && { nextCursor: encodeCursor(secret, bound, JSON.stringify(last.key)) }),
  };
}

function parseKey(position: string): SortKey {
  try {
    const key: unknown = JSON.parse(position);
    if (
      Array.isArray(key) &&
      key.length === 2 &&
      (typeof key[0] === 'string' || typeof key[0] === 'number') &&
      typeof key[1] === 'string'
    )
      return [key[0], key[1]];
  } catch {
    // A cursor that decodes but names no key is refused below, as any bad cursor is.
  }
  throw invalidCursor();
}
