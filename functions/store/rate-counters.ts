import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { RATE_WINDOW_MS, type RateCounter, rateLimitsFrom } from '../domain/rate-limits.js';
import { documentClient, tableName } from './client.js';
import { keys } from './keys.js';

// Request counters (docs/decisions.md § Rate limits): one item per tenant and minute holding a
// counter per limit that applies (the tenant's, each key's). A request adds one to each of its
// counters in one UpdateItem, conditioned on every one of them being below its limit, so the
// count is exact across every container and a refused request adds nothing.

/** Counters are kept a little past their window, then DynamoDB's TTL deletes them. */
const KEEP_S = 2 * (RATE_WINDOW_MS / 1000);

export interface Counted {
  readonly admitted: boolean;
  /** The counts after the request (admitted) or as they stood (refused). */
  readonly counts: Readonly<Record<string, number>>;
}

export async function countRequest(
  tenant: string,
  window: number,
  counters: readonly RateCounter[],
): Promise<Counted> {
  const names: Record<string, string> = { '#type': 'type', '#ttl': 'ttl' };
  const values: Record<string, unknown> = {
    ':type': 'rate-window',
    ':ttl': Math.floor(window / 1000) + KEEP_S,
    ':one': 1,
  };
  const adds: string[] = [];
  const below: string[] = [];
  counters.forEach((c, i) => {
    names[`#c${i}`] = c.name;
    values[`:l${i}`] = c.limit;
    adds.push(`#c${i} :one`);
    below.push(`(attribute_not_exists(#c${i}) OR #c${i} < :l${i})`);
  });
  try {
    const out = await documentClient.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.rateWindow(tenant, window),
        UpdateExpression: `SET #type = :type, #ttl = :ttl ADD ${adds.join(', ')}`,
        ConditionExpression: below.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { admitted: true, counts: numbersOf(out.Attributes ?? {}) };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    // As they stood (raw attribute values: this error bypasses the document client's unmarshalling).
    const raw = (error.Item ?? {}) as Record<string, { N?: string }>;
    const counts = Object.fromEntries(
      counters.map((c) => [c.name, Number(raw[c.name]?.N ?? c.limit)]),
    );
    return { admitted: false, counts };
  }
}

const numbersOf = (item: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(item)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => [k, v as number]),
  );

/** A tenant's rate limits alone (a projection of its record), for http/rate-limits.ts's cache. */
export async function getTenantRateLimits(tenant: string) {
  const out = await documentClient.send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.tenant(tenant),
      ProjectionExpression: 'rate_limits',
    }),
  );
  return rateLimitsFrom(out.Item?.rate_limits);
}
