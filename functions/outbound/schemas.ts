import * as z from 'zod';
import { MAX_AMOUNT, UNITS } from '../domain/amounts.js';
import { BUDGET_EVENT_TYPES } from '../domain/budget-events.js';
import { categoryOf, EVENT_SOURCE } from '../domain/events.js';
import { REFUSAL_CODES } from '../domain/refusals.js';

/**
 * The budget events on the wire: the one source of their schemas. `npm run event-schemas`
 * writes them as JSON Schema to docs/events/ (test/unit/budget-event-schemas.test.ts keeps the
 * files current). The envelope is the reference's `Event` (cycles-governance-admin v0.1.25:
 * closed, snake_case); each `data` follows the reference's EventData* schema for the type, with
 * a few fields of ours added (marked below). Consumers must ignore fields they do not know.
 */

const Unit = z.enum(UNITS);
const Amount = z.number().int().min(-MAX_AMOUNT).max(MAX_AMOUNT);
const Timestamp = z.iso.datetime({ offset: true });

/** Usage of a budget at the event: the reference's EventDataBudgetThreshold. */
const BudgetUsage = {
  scope: z.string(),
  unit: Unit,
  utilization: z
    .number()
    .min(0)
    .optional()
    .describe('(spent + reserved) / allocated; absent when nothing is allocated. May exceed 1.'),
  allocated: Amount,
  remaining: Amount,
  spent: Amount,
  reserved: Amount,
  debt: Amount.describe("Ours: the budget's debt."),
  direction: z.literal('rising'),
  period_start: Timestamp.optional().describe("Ours: a rolling budget's current period."),
  period_end: Timestamp.optional().describe("Ours: the end of a rolling budget's period."),
};

export const ThresholdCrossedData = z
  .looseObject({
    ...BudgetUsage,
    threshold: z.number().min(0.01).max(1).describe('The threshold as a ratio: 0.5, 0.8, 1.'),
    threshold_percent: z
      .number()
      .int()
      .min(1)
      .max(100)
      .describe('Ours: the same threshold as configured, in percent.'),
  })
  .meta({ description: 'Usage (spent + reserved) reached a threshold of the allocation.' });

export const ExhaustedData = z
  .looseObject({ ...BudgetUsage, threshold: z.literal(1) })
  .meta({ description: 'Remaining went from above 0 to 0 or below.' });

export const DebtIncurredData = z
  .looseObject({
    scope: z.string(),
    unit: Unit,
    debt_incurred: Amount.min(1).describe('The debt this change added.'),
    total_debt: Amount,
    overdraft_limit: Amount,
  })
  .meta({ description: 'A commit or event charged past remaining (ALLOW_WITH_OVERDRAFT).' });

const overLimit = <T extends boolean>(isOver: T) => ({
  scope: z.string(),
  unit: Unit,
  debt: Amount,
  overdraft_limit: Amount,
  is_over_limit: z.literal(isOver),
  debt_utilization: z
    .number()
    .min(0)
    .optional()
    .describe('debt / overdraft_limit; absent when the limit is 0.'),
});

export const OverLimitEnteredData = z
  .looseObject(overLimit(true))
  .meta({ description: 'Debt went above the overdraft limit: new holds are refused.' });

export const OverLimitExitedData = z.looseObject(overLimit(false)).meta({
  description:
    'Debt came back to the overdraft limit or below (a repayment, or a raised limit): the budget takes new holds again.',
});

const Subject = z.record(z.string(), z.unknown());
const Action = z.object({
  kind: z.string(),
  name: z.string(),
  tags: z.array(z.string()).optional(),
});

export const ReservationExpiredData = z
  .looseObject({
    reservation_id: z.string(),
    scope: z.string(),
    unit: Unit,
    estimated_amount: Amount.describe('What was held and never committed.'),
    created_at: Timestamp,
    expired_at: Timestamp.describe("When the reservation's TTL ran out (its expires_at_ms)."),
    ttl_ms: z.number().int().min(0),
    finalized_at: Timestamp.optional().describe('Ours: when the hold was returned.'),
    subject: Subject.describe('Ours: the subject of the reservation.'),
    action: Action,
  })
  .meta({ description: 'A reservation expired unsettled: its hold went back to its budgets.' });

export const ReservationDeniedData = z
  .looseObject({
    scope: z.string(),
    unit: Unit,
    reason_code: z.enum(REFUSAL_CODES).describe('The error code the refusal answered (409).'),
    requested_amount: Amount,
    remaining: Amount,
    action: Action,
    subject: Subject,
    suppressed_count: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Ours: refusals of the same kind the process did not report since the one before this.',
      ),
  })
  .meta({
    description:
      'A reservation was refused: a live one with 409, a dry run or a decide with DENY (not on a replay).',
  });

export const CommitOverageData = z
  .looseObject({
    reservation_id: z.string(),
    scope: z.string(),
    unit: Unit,
    estimated_amount: Amount,
    actual_amount: Amount,
    overage: Amount.min(1).describe('actual_amount - estimated_amount'),
    overage_policy: z.enum(['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT']),
  })
  .meta({ description: 'A reservation was committed for more than it held.' });

export const RefundData = z
  .looseObject({
    refund_id: z.string(),
    reservation_id: z.string().optional().describe('The reservation refunded (or event_id)'),
    event_id: z.string().optional().describe('The usage event refunded (or reservation_id)'),
    unit: Unit,
    amount: Amount.min(1).describe('What this refund gave back on every scope charged'),
    refunded_total: Amount.describe('Refunded so far, this refund included'),
    charged: Amount.describe('What the reservation or event charged'),
    reason: z.string(),
    scopes: z.array(z.string()).describe('The scopes refunded, root first'),
  })
  .meta({
    description:
      'Ours (x-extension budget-reservations): part of what a reservation or an event charged was given back (docs/decisions.md § Refunds).',
  });

export const DelegationData = z
  .looseObject({
    parent_reservation_id: z.string().describe('The reservation whose hold the child took part of'),
    child_reservation_id: z.string().describe('The child reservation the delegation made'),
    unit: Unit,
    amount: Amount.min(1).describe("What moved from the parent's hold to the child's"),
    depth: z.number().int().min(1).describe('The child’s depth: a child of a root is 1'),
    scopes: z.array(z.string()).describe('The child’s scopes, root first'),
  })
  .meta({
    description:
      'Ours (x-extension budget-reservations): a reservation handed part of its hold to a child reservation (docs/decisions.md § Delegations).',
  });

export const DATA_SCHEMAS = {
  'budget.threshold_crossed': ThresholdCrossedData,
  'budget.exhausted': ExhaustedData,
  'budget.debt_incurred': DebtIncurredData,
  'budget.over_limit_entered': OverLimitEnteredData,
  'budget.over_limit_exited': OverLimitExitedData,
  'reservation.expired': ReservationExpiredData,
  'reservation.denied': ReservationDeniedData,
  'reservation.commit_overage': CommitOverageData,
  'custom.refund': RefundData,
  'custom.delegation': DelegationData,
} as const satisfies Record<PublishedEventType, z.ZodType>;

/**
 * The types published here: the budget-state events, and our `custom.refund` and
 * `custom.delegation` (derived from a refund's or a delegation's audit record:
 * domain/audit-events.ts), in the reference's categories `budget` and `reservation`.
 */
const PUBLISHED_EVENT_TYPES = [
  ...BUDGET_EVENT_TYPES,
  'custom.refund',
  'custom.delegation',
] as const;
type PublishedEventType = (typeof PUBLISHED_EVENT_TYPES)[number];

/** The reference's Event envelope around one type's data. */
function envelope<T extends PublishedEventType>(type: T) {
  return z
    .strictObject({
      event_id: z
        .string()
        .regex(/^evt_[0-9a-f]{32}$/)
        .describe('Stable across redeliveries: deduplicate on it.'),
      event_type: z.literal(type),
      category: z.literal(categoryOf(type)),
      timestamp: Timestamp,
      tenant_id: z.string(),
      scope: z.string().optional(),
      actor: z
        .strictObject({
          type: z.enum(['admin', 'api_key', 'system']),
          key_id: z.string().optional(),
        })
        .optional(),
      source: z.literal(EVENT_SOURCE),
      data: DATA_SCHEMAS[type],
      request_id: z.string().optional(),
      trace_id: z
        .string()
        .regex(/^[0-9a-f]{32}$/)
        .optional()
        .describe("The W3C trace id of the request that caused it, or the event's own."),
    })
    .meta({ title: type, description: DATA_SCHEMAS[type].description });
}

export const EVENT_SCHEMAS = Object.fromEntries(
  PUBLISHED_EVENT_TYPES.map((type) => [type, envelope(type)]),
) as { readonly [T in PublishedEventType]: ReturnType<typeof envelope<T>> };

/** Any budget event. */
export const BudgetEventMessage = z
  .discriminatedUnion('event_type', [
    EVENT_SCHEMAS['budget.threshold_crossed'],
    EVENT_SCHEMAS['budget.exhausted'],
    EVENT_SCHEMAS['budget.debt_incurred'],
    EVENT_SCHEMAS['budget.over_limit_entered'],
    EVENT_SCHEMAS['budget.over_limit_exited'],
    EVENT_SCHEMAS['reservation.expired'],
    EVENT_SCHEMAS['reservation.denied'],
    EVENT_SCHEMAS['reservation.commit_overage'],
    EVENT_SCHEMAS['custom.refund'],
    EVENT_SCHEMAS['custom.delegation'],
  ])
  .meta({ title: 'budget event', description: 'Any event of the budget reservation service.' });
export type BudgetEventMessage = z.infer<typeof BudgetEventMessage>;

/** The JSON Schema documents published in docs/events/, by file name. */
export function jsonSchemaFiles(): Record<string, unknown> {
  const files: Record<string, unknown> = {
    'budget-event.schema.json': z.toJSONSchema(BudgetEventMessage, { io: 'output' }),
  };
  for (const type of PUBLISHED_EVENT_TYPES) {
    files[`${type}.schema.json`] = z.toJSONSchema(EVENT_SCHEMAS[type], { io: 'output' });
  }
  return files;
}
