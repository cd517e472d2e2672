import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import type * as z from 'zod';
import { categoryOf, EVENT_TYPES, type EventType } from '../../functions/domain/events.js';
import { EVENT_SCHEMAS } from '../../functions/outbound/schemas.js';

/**
 * The reference's normative schemas (cycles-governance-admin v0.1.25, test/fixtures/reference):
 * `Event` and the `EventData*` payload of each type, `WebhookDelivery`, `WebhookSubscription`
 * and the other webhook answers, compiled with Ajv as a consumer generated from the reference
 * would hold our answers to them.
 */
type Json = Record<string, unknown>;

const document = parse(
  readFileSync(
    new URL('../fixtures/reference/cycles-governance-admin-v0.1.25.yaml', import.meta.url),
    'utf8',
  ),
) as Json;
const schemas = (document.components as Json).schemas as Json;

const addFormats = addFormatsModule.default;
// OpenAPI's own formats (int64, double) are annotations, not checks.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
for (const format of ['int64', 'int32', 'double', 'float']) ajv.addFormat(format, true);
ajv.addSchema({
  $id: 'urn:reference:admin',
  $defs: JSON.parse(
    JSON.stringify(schemas).replaceAll('"#/components/schemas/', '"urn:reference:admin#/$defs/'),
  ) as Json,
});

const validators = new Map<string, ValidateFunction>();
const validatorOf = (name: string): ValidateFunction => {
  let v = validators.get(name);
  if (!v) {
    v = ajv.getSchema(`urn:reference:admin#/$defs/${name}`);
    if (!v) throw new Error(`no schema ${name} in the reference document`);
    validators.set(name, v);
  }
  return v;
};

/** The EventData* schema of each type the reference defines one for. */
export function eventDataSchemaOf(type: string): string {
  if (type.endsWith('_via_tenant_cascade')) return 'EventDataTenantCascade';
  if (/_rate_spike$/.test(type)) return 'EventDataRateSpike';
  if (type === 'budget.threshold_crossed' || type === 'budget.exhausted') {
    return 'EventDataBudgetThreshold';
  }
  if (type.startsWith('budget.over_limit_')) return 'EventDataBudgetOverLimit';
  if (type === 'budget.debt_incurred') return 'EventDataBudgetDebtIncurred';
  if (type === 'budget.burn_rate_anomaly') return 'EventDataBurnRateAnomaly';
  if (type === 'reservation.denied') return 'EventDataReservationDenied';
  if (type === 'reservation.expired') return 'EventDataReservationExpired';
  if (type === 'reservation.commit_overage') return 'EventDataCommitOverage';
  const category = type.slice(0, type.indexOf('.'));
  const byCategory: Record<string, string> = {
    budget: 'EventDataBudgetLifecycle',
    tenant: 'EventDataTenantLifecycle',
    webhook: 'EventDataWebhookLifecycle',
    api_key: 'EventDataApiKey',
    policy: 'EventDataPolicy',
    system: 'EventDataSystem',
  };
  const name = byCategory[category];
  if (!name) throw new Error(`no EventData schema for ${type}`);
  return name;
}

/** The errors of a value against a reference schema, as `path: message` lines. */
export function referenceErrors(name: string, value: unknown): string[] {
  const validate = validatorOf(name);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${name}${e.instancePath}: ${e.message}`);
}

/**
 * The errors of an event: the `Event` envelope (closed), its type in the EventType enum, its
 * category the type's, and its `data` against the type's EventData* schema. A type of ours
 * (`custom.`: the reference's rule for them) is held to the same envelope with its own category
 * (domain/events.ts) and to its published schema (outbound/schemas.ts, docs/events/).
 */
export function eventErrors(event: unknown): string[] {
  const e = event as { event_type?: string; category?: string; data?: unknown };
  const type = String(e.event_type);
  if (type.startsWith('custom.')) return customEventErrors(event, type);
  const errors = referenceErrors('Event', event);
  if (e.category !== type.slice(0, type.indexOf('.'))) {
    errors.push(`Event: category ${e.category} is not that of ${type}`);
  }
  if (e.data !== undefined) errors.push(...referenceErrors(eventDataSchemaOf(type), e.data));
  return errors;
}

function customEventErrors(event: unknown, type: string): string[] {
  const schema = (EVENT_SCHEMAS as Record<string, z.ZodType>)[type];
  if (!schema || !(EVENT_TYPES as readonly string[]).includes(type)) {
    return [`Event: ${type} is no type of ours`];
  }
  // The envelope as the reference's, its EventType enum aside (a stand-in of the same category:
  // the first reference type of it, as `budget.created` for `budget`).
  const category = categoryOf(type as EventType);
  const sameCategory = EVENT_TYPES.find(
    (t) => !t.startsWith('custom.') && categoryOf(t) === category,
  );
  const standIn = { ...(event as Json), event_type: sameCategory };
  const errors = referenceErrors('Event', standIn);
  const parsed = schema.safeParse(event);
  if (!parsed.success) errors.push(...parsed.error.issues.map((i) => `${type}: ${i.message}`));
  return errors;
}
