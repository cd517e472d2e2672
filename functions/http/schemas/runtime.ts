import * as z from 'zod/mini';
import { RESERVATION_SORT_KEYS } from '../../domain/reservation.js';
import type { DecideRequest } from '../../use-cases/decide.js';
import type { EventRequest } from '../../use-cases/events.js';
import type { BalanceFilters, ReservationFilters } from '../../use-cases/reads.js';
import type { ReservationRequest } from '../../use-cases/reservations.js';
import type { CommitRequest, ExtendRequest, ReleaseRequest } from '../../use-cases/settlements.js';
import {
  Action,
  Amount,
  BooleanParam,
  Chars,
  Cursor,
  camel,
  IdempotencyKey,
  Int,
  Metadata,
  OveragePolicy,
  PageLimit,
  StandardMetrics,
  Subject,
  SubjectFilters,
} from './common.js';
import { SortDir, WindowBound } from './lists.js';

/**
 * Fields a client sends to change what its request means, which this server does not implement:
 * refused with 400 naming the field, never applied as if absent (a shadow evaluation taken as a
 * real hold would spend budget the client meant only to observe). `false` means what absence
 * means, so it is accepted. Other unknown fields stay ignored (docs/decisions.md).
 */
const UNIMPLEMENTED = ['observe_mode'] as const;

const refusingUnimplemented = <T extends z.ZodMiniType>(schema: T) =>
  z.pipe(
    z.transform((body: unknown, ctx) => {
      if (body && typeof body === 'object') {
        for (const field of UNIMPLEMENTED) {
          const value = (body as Record<string, unknown>)[field];
          if (value !== undefined && value !== false) {
            ctx.issues.push({
              code: 'custom',
              path: [field],
              message: 'not supported by this server; send the request without it',
              input: value,
            });
          }
        }
      }
      return body;
    }),
    schema,
  );

// SPEC § Endpoints. Defaults live here so no later layer re-applies them.
export const CreateReservationBody = refusingUnimplemented(
  z.pipe(
    z.object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      estimate: Amount,
      // Absent: a policy's default, the tenant's, else SPEC's 60 000 (domain/policies.ts termsOf).
      ttl_ms: z
        .optional(Int(1_000, 86_400_000))
        .check(
          z.describe(
            "Default 60000, unless the tenant (default_reservation_ttl_ms) or a policy says otherwise; capped to the tenant's and policies' maximum",
          ),
        ),
      grace_period_ms: z._default(Int(0, 60_000), 5_000),
      overage_policy: z
        .optional(OveragePolicy)
        .check(
          z.describe(
            'Default REJECT, unless the tenant (default_commit_overage_policy) or a policy says otherwise',
          ),
        ),
      dry_run: z._default(z.boolean(), false),
      metadata: z.optional(Metadata),
    }),
    z.transform((b): ReservationRequest => camel(b)),
  ),
);
export type CreateReservationBody = z.infer<typeof CreateReservationBody>;

export const DecideBody = refusingUnimplemented(
  z.pipe(
    z.object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      estimate: Amount,
      metadata: z.optional(Metadata),
    }),
    z.transform((b): DecideRequest => camel(b)),
  ),
);
export type DecideBody = z.infer<typeof DecideBody>;

export const ReservationIdParams = z.object({ reservation_id: Chars(1, 128) });

export const CommitBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    actual: Amount,
    metrics: z.optional(StandardMetrics),
    metadata: z.optional(Metadata),
  }),
  z.transform((b): CommitRequest => camel(b)),
);
export type CommitBody = z.infer<typeof CommitBody>;

export const ReleaseBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    reason: z.optional(z.string().check(z.maxLength(256))),
  }),
  z.transform((b): ReleaseRequest => camel(b)),
);
export type ReleaseBody = z.infer<typeof ReleaseBody>;

export const ExtendBody = z.pipe(
  z.object({
    idempotency_key: IdempotencyKey,
    extend_by_ms: Int(1, 86_400_000),
    metadata: z.optional(Metadata),
  }),
  z.transform((b): ExtendRequest => camel(b)),
);
export type ExtendBody = z.infer<typeof ExtendBody>;

export const CreateEventBody = refusingUnimplemented(
  z.pipe(
    z.object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      actual: Amount,
      overage_policy: z
        .optional(OveragePolicy)
        .check(
          z.describe(
            'Default REJECT, unless the tenant (default_commit_overage_policy) or a policy says otherwise',
          ),
        ),
      metrics: z.optional(StandardMetrics),
      client_time_ms: z.optional(Int(0)),
      metadata: z.optional(Metadata),
    }),
    z.transform((b): EventRequest => camel(b)),
  ),
);
export type CreateEventBody = z.infer<typeof CreateEventBody>;

export const ListReservationsQuery = z.pipe(
  z.object({
    ...SubjectFilters,
    status: z.optional(z.enum(['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED'])),
    idempotency_key: z.optional(IdempotencyKey),
    // The reference's windows (inclusive; blank is no bound) and sort.
    from: WindowBound,
    to: WindowBound,
    expires_from: WindowBound,
    expires_to: WindowBound,
    finalized_from: WindowBound,
    finalized_to: WindowBound,
    sort_by: z.optional(z.enum(RESERVATION_SORT_KEYS)),
    sort_dir: SortDir,
    limit: PageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform(
    ({
      from,
      to,
      expires_from,
      expires_to,
      finalized_from,
      finalized_to,
      ...b
    }): ReservationFilters => ({
      ...camel(b),
      created: { from, to },
      expires: { from: expires_from, to: expires_to },
      finalized: { from: finalized_from, to: finalized_to },
    }),
  ),
);
export type ListReservationsQuery = z.infer<typeof ListReservationsQuery>;

export const ListBalancesQuery = z.pipe(
  z.object({
    ...SubjectFilters,
    include_children: z._default(BooleanParam, false),
    limit: PageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform((b): BalanceFilters => camel(b)),
);
export type ListBalancesQuery = z.infer<typeof ListBalancesQuery>;
