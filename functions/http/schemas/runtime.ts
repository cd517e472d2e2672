import * as z from 'zod';
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

const refusingUnimplemented = <T extends z.ZodType>(schema: T) =>
  z.preprocess((body, ctx) => {
    if (body && typeof body === 'object') {
      for (const field of UNIMPLEMENTED) {
        const value = (body as Record<string, unknown>)[field];
        if (value !== undefined && value !== false) {
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: 'not supported by this server; send the request without it',
            input: value,
          });
        }
      }
    }
    return body;
  }, schema);

// SPEC § Endpoints. Defaults live here so no later layer re-applies them.
export const CreateReservationBody = refusingUnimplemented(
  z
    .object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      estimate: Amount,
      // Absent: a policy's default, the tenant's, else SPEC's 60 000 (domain/policies.ts termsOf).
      ttl_ms: Int(1_000, 86_400_000)
        .optional()
        .describe(
          "Default 60000, unless the tenant (default_reservation_ttl_ms) or a policy says otherwise; capped to the tenant's and policies' maximum",
        ),
      grace_period_ms: Int(0, 60_000).default(5_000),
      overage_policy: OveragePolicy.optional().describe(
        'Default REJECT, unless the tenant (default_commit_overage_policy) or a policy says otherwise',
      ),
      dry_run: z.boolean().default(false),
      metadata: Metadata.optional(),
    })
    .transform((b): ReservationRequest => camel(b)),
);
export type CreateReservationBody = z.infer<typeof CreateReservationBody>;

export const DecideBody = refusingUnimplemented(
  z
    .object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      estimate: Amount,
      metadata: Metadata.optional(),
    })
    .transform((b): DecideRequest => camel(b)),
);
export type DecideBody = z.infer<typeof DecideBody>;

export const ReservationIdParams = z.object({ reservation_id: z.string().min(1).max(128) });

export const CommitBody = z
  .object({
    idempotency_key: IdempotencyKey,
    actual: Amount,
    metrics: StandardMetrics.optional(),
    metadata: Metadata.optional(),
  })
  .transform((b): CommitRequest => camel(b));
export type CommitBody = z.infer<typeof CommitBody>;

export const ReleaseBody = z
  .object({
    idempotency_key: IdempotencyKey,
    reason: z.string().max(256).optional(),
  })
  .transform((b): ReleaseRequest => camel(b));
export type ReleaseBody = z.infer<typeof ReleaseBody>;

export const ExtendBody = z
  .object({
    idempotency_key: IdempotencyKey,
    extend_by_ms: Int(1, 86_400_000),
    metadata: Metadata.optional(),
  })
  .transform((b): ExtendRequest => camel(b));
export type ExtendBody = z.infer<typeof ExtendBody>;

export const CreateEventBody = refusingUnimplemented(
  z
    .object({
      idempotency_key: IdempotencyKey,
      subject: Subject,
      action: Action,
      actual: Amount,
      overage_policy: OveragePolicy.optional().describe(
        'Default REJECT, unless the tenant (default_commit_overage_policy) or a policy says otherwise',
      ),
      metrics: StandardMetrics.optional(),
      client_time_ms: Int(0).optional(),
      metadata: Metadata.optional(),
    })
    .transform((b): EventRequest => camel(b)),
);
export type CreateEventBody = z.infer<typeof CreateEventBody>;

export const ListReservationsQuery = z
  .object({
    ...SubjectFilters,
    status: z.enum(['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED']).optional(),
    idempotency_key: IdempotencyKey.optional(),
    // The reference's windows (inclusive; blank is no bound) and sort.
    from: WindowBound,
    to: WindowBound,
    expires_from: WindowBound,
    expires_to: WindowBound,
    finalized_from: WindowBound,
    finalized_to: WindowBound,
    sort_by: z.enum(RESERVATION_SORT_KEYS).optional(),
    sort_dir: SortDir,
    limit: PageLimit,
    cursor: Cursor.optional(),
  })
  .transform(
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
  );
export type ListReservationsQuery = z.infer<typeof ListReservationsQuery>;

export const ListBalancesQuery = z
  .object({
    ...SubjectFilters,
    include_children: BooleanParam.default(false),
    limit: PageLimit,
    cursor: Cursor.optional(),
  })
  .transform((b): BalanceFilters => camel(b));
export type ListBalancesQuery = z.infer<typeof ListBalancesQuery>;
