/** A page of any listing: SPEC's cursor pagination. */
export interface Page {
  readonly has_more: boolean;
  readonly next_cursor?: string;
}

/**
 * Every page of a listing, in order, following `next_cursor` until `has_more` is false:
 * `for await (const page of pages((cursor) => unwrap(api.GET(path, { params: { query: { cursor } } }))))`.
 */
export async function* pages<P extends Page>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  firstCursor?: string,
): AsyncGenerator<P, void, undefined> {
  let cursor = firstCursor;
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    if (!page.has_more || !page.next_cursor) return;
    cursor = page.next_cursor;
  }
}

/** Every item of a listing, across its pages. */
export async function* items<P extends Page, T>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  itemsOf: (page: P) => readonly T[],
): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage)) yield* itemsOf(page);
}

/** Up to `max` items of an iteration, and whether there were more. */
export async function collect<T>(
  iteration: AsyncIterable<T>,
  max = Number.POSITIVE_INFINITY,
): Promise<{ readonly items: T[]; readonly truncated: boolean }> {
  const found: T[] = [];
  for await (const item of iteration) {
    if (found.length >= max) return { items: found, truncated: true };
    found.push(item);
  }
  return { items: found, truncated: false };
}
