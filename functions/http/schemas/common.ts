import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { MAX_AMOUNT, UNITS } from '../../domain/amounts.js';
import { isExactNumber } from '../../domain/json.js';
import {
  DIMENSION_KEY,
  LEVELS,
  MAX_DIMENSION_KEY,
  MAX_DIMENSIONS,
  MAX_SEGMENT_VALUE,
  MAX_TAG_VALUE,
  SEGMENT_VALUE,
} from '../../domain/scopes.js';

/**
 * The request schemas are written with zod/mini, not zod's classic API: the same parser and the
 * same issues, about a third of the bytes in every function that bundles them (docs/decisions.md
 * § Cloud room; how to write one: docs/architecture.md § Request schemas). Mini ships no
 * messages of its own: these are the English ones classic zod answers with.
 */
z.config(en());

/** A string of `min` to `max` characters. */
export const Chars = (min: number, max: number) =>
  z.string().check(z.minLength(min), z.maxLength(max));

export const Unit = z.enum(UNITS);

/**
 * A JSON integer field from `min` to `max` (at most 2^53 − 1: above, a number is no longer
 * exact). The body parser keeps numbers a double cannot hold as exact text; here they become
 * numbers only so that the range check names the field and its bound.
 */
export const Int = (min: number, max: number = MAX_AMOUNT) =>
  z.pipe(
    z.transform((v: unknown) => (isExactNumber(v) ? Number(v.value) : v)),
    z.number().check(z.int(), z.gte(min), z.lte(Math.min(max, MAX_AMOUNT))),
  );

/** Integers from the edge inward. */
export const AmountValue = Int(0);

export const Amount = z.object({ unit: Unit, amount: AmountValue });
export type Amount = z.infer<typeof Amount>;

export const IdempotencyKey = Chars(1, 256);

/** Tenant ids: 1 to 64 of letters, digits, '_', '.', '-', starting with a letter or digit. */
export const TenantId = Chars(1, 64).check(
  z.regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "must start with a letter or digit and hold only letters, digits, '_', '.' and '-'",
  ),
);

export const SegmentValue = Chars(1, MAX_SEGMENT_VALUE).check(
  z.regex(SEGMENT_VALUE, "may hold only letters, digits, '_', '.' and '-'"),
);

/** The standard subject fields: a subject's levels, and the filters of the listings. */
export const SubjectFilters = {
  tenant: z.optional(SegmentValue),
  workspace: z.optional(SegmentValue),
  app: z.optional(SegmentValue),
  workflow: z.optional(SegmentValue),
  agent: z.optional(SegmentValue),
  toolset: z.optional(SegmentValue),
};

const Dimensions = z
  .record(
    Chars(1, MAX_DIMENSION_KEY).check(
      z.regex(DIMENSION_KEY, "keys may hold only letters, digits, '_', '.' and '-'"),
    ),
    // Any string: a key no budget names is a tag (domain/scopes.ts checks budgeted keys).
    Chars(1, MAX_TAG_VALUE),
  )
  .check(
    z.refine(
      (d) => Object.keys(d).length <= MAX_DIMENSIONS,
      `at most ${MAX_DIMENSIONS} dimensions`,
    ),
  );

export const Subject = z.object({ ...SubjectFilters, dimensions: z.optional(Dimensions) }).check(
  z.refine((s) => LEVELS.some((level) => s[level] !== undefined), {
    message: 'subject needs at least one of tenant, workspace, app, workflow, agent, toolset',
  }),
);
export type Subject = z.infer<typeof Subject>;

/** Both required (as in the reference description): a hold without a name cannot be audited. */
export const Action = z.object({
  kind: Chars(1, 64),
  name: Chars(1, 256),
  tags: z.optional(z.array(Chars(1, 64)).check(z.maxLength(10))),
});

export const OveragePolicy = z.enum(['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT']);

/**
 * Any JSON object, kept as given: not rebuilt key by key, so keys such as "" and "__proto__"
 * survive, and exact numbers stay exact (stored as JSON text, docs/decisions.md).
 */
export const Metadata = z.custom<Record<string, unknown>>(
  (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !isExactNumber(v),
  { message: 'must be a JSON object' },
);

export const StandardMetrics = z.object({
  tokens_input: z.optional(Int(0)),
  tokens_output: z.optional(Int(0)),
  latency_ms: z.optional(Int(0)),
  model_version: z.optional(z.string().check(z.maxLength(128))),
  custom: z.optional(Metadata),
});

export const PageLimit = z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(200)), 50);
/** Reference admin listings: 1 to 100 per page, 50 by default. */
export const AdminPageLimit = z._default(
  z.coerce.number().check(z.int(), z.gte(1), z.lte(100)),
  50,
);
export const Cursor = Chars(1, 2048);
export const BooleanParam = z.pipe(
  z.enum(['true', 'false']),
  z.transform((v) => v === 'true'),
);

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;
export type Camel<T> = { [K in keyof T as CamelCase<K & string>]: T[K] };

/**
 * Wire (snake_case) → domain (camelCase) field names, one level deep: nested objects are
 * already domain-shaped (Amount, Subject) or opaque to the service (metadata, metrics).
 */
export const camel = <T extends object>(wire: T): Camel<T> =>
  Object.fromEntries(
    Object.entries(wire).map(([k, v]) => [
      k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
      v,
    ]),
  ) as Camel<T>;
