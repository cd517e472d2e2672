import * as z from 'zod';
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

export const Unit = z.enum(UNITS);

/**
 * A JSON integer field from `min` to `max` (at most 2^53 − 1: above, a number is no longer
 * exact). The body parser keeps numbers a double cannot hold as exact text; here they become
 * numbers only so that the range check names the field and its bound.
 */
export const Int = (min: number, max: number = MAX_AMOUNT) =>
  z.preprocess(
    (v) => (isExactNumber(v) ? Number(v.value) : v),
    z.number().int().min(min).max(Math.min(max, MAX_AMOUNT)),
  );

/** Integers from the edge inward. */
export const AmountValue = Int(0);

export const Amount = z.object({ unit: Unit, amount: AmountValue });
export type Amount = z.infer<typeof Amount>;

export const IdempotencyKey = z.string().min(1).max(256);

/** Tenant ids: 1 to 64 of letters, digits, '_', '.', '-', starting with a letter or digit. */
export const TenantId = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "must start with a letter or digit and hold only letters, digits, '_', '.' and '-'",
  );

export const SegmentValue = z
  .string()
  .min(1)
  .max(MAX_SEGMENT_VALUE)
  .regex(SEGMENT_VALUE, "may hold only letters, digits, '_', '.' and '-'");

/** The standard subject fields: a subject's levels, and the filters of the listings. */
export const SubjectFilters = {
  tenant: SegmentValue.optional(),
  workspace: SegmentValue.optional(),
  app: SegmentValue.optional(),
  workflow: SegmentValue.optional(),
  agent: SegmentValue.optional(),
  toolset: SegmentValue.optional(),
};

export const Subject = z
  .object({
    ...SubjectFilters,
    dimensions: z
      .record(
        z
          .string()
          .min(1)
          .max(MAX_DIMENSION_KEY)
          .regex(DIMENSION_KEY, "keys may hold only letters, digits, '_', '.' and '-'"),
        // Any string: a key no budget names is a tag (domain/scopes.ts checks budgeted keys).
        z.string().min(1).max(MAX_TAG_VALUE),
      )
      .refine(
        (d) => Object.keys(d).length <= MAX_DIMENSIONS,
        `at most ${MAX_DIMENSIONS} dimensions`,
      )
      .optional(),
  })
  .refine((s) => LEVELS.some((level) => s[level] !== undefined), {
    message: 'subject needs at least one of tenant, workspace, app, workflow, agent, toolset',
  });
export type Subject = z.infer<typeof Subject>;

/** Both required (as in the reference description): a hold without a name cannot be audited. */
export const Action = z.object({
  kind: z.string().min(1).max(64),
  name: z.string().min(1).max(256),
  tags: z.array(z.string().min(1).max(64)).max(10).optional(),
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
  tokens_input: Int(0).optional(),
  tokens_output: Int(0).optional(),
  latency_ms: Int(0).optional(),
  model_version: z.string().max(128).optional(),
  custom: Metadata.optional(),
});

export const PageLimit = z.coerce.number().int().min(1).max(200).default(50);
export const Cursor = z.string().min(1).max(2048);
export const BooleanParam = z.enum(['true', 'false']).transform((v) => v === 'true');

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
