import { config } from '../config/settings.js';
import { METRICS } from './catalog.js';
import type { Invocation, MetricPoint } from './invocation.js';

/**
 * Writes an invocation's metrics to stdout as CloudWatch embedded metric format (EMF) documents,
 * which CloudWatch Logs turns into metrics: the request's own (DynamoDB calls, retries, time)
 * and whatever it recorded. One document per dimension set, each carrying the request id as
 * metadata, so a metric spike leads to its log lines.
 *
 * The documents are written here rather than by Powertools Metrics: grouping by dimension set is
 * ours anyway, the format is a few fixed keys (docs.aws.amazon.com/AmazonCloudWatch/latest/
 * monitoring/CloudWatch_Embedded_Metric_Format_Specification.html), and the library weighed
 * 11 kB in every bundle, the health check's included (docs/decisions.md § Lean functions).
 * Written straight to stdout, like Powertools does, so Lambda's JSON log format does not wrap
 * them: CloudWatch reads EMF only from a line that is the document itself.
 */
export function publishMetrics(invocation: Invocation): void {
  if (config.POWERTOOLS_METRICS_DISABLED) return;
  const points: MetricPoint[] = [...invocation.points];
  if (invocation.dynamoCalls > 0) {
    points.push(
      { name: 'DynamoDBCalls', value: invocation.dynamoCalls, dimensions: {} },
      { name: 'DynamoDBRetries', value: invocation.dynamoRetries, dimensions: {} },
      { name: 'DynamoDBTime', value: Math.round(invocation.dynamoMs * 10) / 10, dimensions: {} },
      { name: 'ConflictRetries', value: invocation.conflictRetries, dimensions: {} },
    );
  }
  const lines = groupByDimensions(points).map((group) => emfDocument(group, invocation.requestId));
  if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
}

/** One EMF document: every point of `group` shares its dimensions (and tenant, if any). */
function emfDocument(group: readonly MetricPoint[], requestId: string): string {
  const [first] = group;
  const dimensions = { service: config.POWERTOOLS_SERVICE_NAME, ...first?.dimensions };
  const names = Object.keys(dimensions);
  const dimensionSets = first?.tenant === undefined ? [names] : [names, [...names, 'Tenant']];
  const values: Record<string, number | number[]> = {};
  for (const { name, value } of group) {
    const seen = values[name];
    // The same metric twice in one document: EMF takes an array of values.
    values[name] = seen === undefined ? value : [seen, value].flat();
  }
  return JSON.stringify({
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: config.POWERTOOLS_METRICS_NAMESPACE,
          Dimensions: dimensionSets,
          Metrics: Object.keys(values).map((name) => ({
            Name: name,
            Unit: METRICS[name as MetricPoint['name']].unit,
          })),
        },
      ],
    },
    ...dimensions,
    ...(first?.tenant !== undefined && { Tenant: first.tenant }),
    ...values,
    request_id: requestId,
  });
}

/** Points sharing dimensions (and tenant, where a Tenant dimension applies) share a document. */
function groupByDimensions(points: readonly MetricPoint[]): MetricPoint[][] {
  const groups = new Map<string, MetricPoint[]>();
  for (const point of points) {
    const perTenant = config.METRICS_TENANT_DIMENSION && 'perTenant' in METRICS[point.name];
    const p = { ...point, tenant: perTenant ? point.tenant : undefined };
    const key = JSON.stringify([Object.entries(p.dimensions).sort(), p.tenant ?? null]);
    const group = groups.get(key);
    if (group) group.push(p);
    else groups.set(key, [p]);
  }
  return [...groups.values()];
}
