import * as z from 'zod/mini';

// The reference's list parameters (issue 27 point 5), in zod/mini: a clamped limit, sort_by /
// sort_dir, search, and time windows.

/** A limit outside 1..max is clamped to it, not refused, as the reference server does. */
export const clampedLimit = (max: number, fallback = 50) =>
  z.pipe(
    z._default(z.coerce.number().check(z.int()), fallback),
    z.transform((n) => Math.max(1, Math.min(n, max))),
  );

/** The reference's SortDirection: desc when sort_by is given without it. */
export const SortDir = z.optional(z.enum(['asc', 'desc']));

/**
 * Case-insensitive substring: at most 128 characters (longer: 400), and an empty one is no
 * filter (the reference treats it as absent).
 */
export const Search = z.optional(
  z.pipe(
    z.string().check(z.maxLength(128)),
    z.transform((s) => (s === '' ? undefined : s)),
  ),
);

/**
 * An ISO 8601 bound of a time window, as epoch ms; blank is no bound (the reference requires
 * that: clients send unset variables as "").
 */
const ISO = z.iso.datetime({ offset: true });
export const WindowBound = z.optional(
  z.pipe(
    z
      .string()
      .check(
        z.refine((t) => t === '' || ISO.safeParse(t).success, {
          message: 'must be an ISO 8601 date-time',
        }),
      )
      .register(z.globalRegistry, { format: 'date-time' }),
    z.transform((t) => (t === '' ? undefined : Date.parse(t))),
  ),
);
