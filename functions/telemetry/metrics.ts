import { Metrics } from '@aws-lambda-powertools/metrics';
import { config } from '../config/settings.js';
import { logger } from '../log.js';
import { METRICS } from './catalog.js';
import type { Invocation, MetricPoint } from './invocation.js';

const metrics = new Metrics({
  namespace: config.POWERTOOLS_METRICS_NAMESPACE,
  serviceName: config.POWERTOOLS_SERVICE_NAME,
  logger,
});

/**
 * Writes an invocation's metrics to stdout as EMF documents, which CloudWatch Logs turns into
 * metrics: the request's own (DynamoDB calls, retries) and whatever it recorded. One document
 * per dimension set (Powertools writes one directive per document), each carrying the request
 * id as metadata, so a metric spike leads to its log lines. The shared Metrics instance is used
 * synchronously from first addMetric to publish, so concurrent local requests never mix.
 */
export function publishMetrics(invocation: Invocation): void {
  if (config.POWERTOOLS_METRICS_DISABLED) return;
  const points: MetricPoint[] = [...invocation.points];
  if (invocation.dynamoCalls > 0) {
    points.push(
      { name: 'DynamoDBCalls', value: invocation.dynamoCalls, dimensions: {} },
      { name: 'DynamoDBRetries', value: invocation.dynamoRetries, dimensions: {} },
      { name: 'ConflictRetries', value: invocation.conflictRetries, dimensions: {} },
    );
  }
  for (const group of groupByDimensions(points)) {
    const [first] = group;
    if (!first) continue;
    metrics.addDimensions(first.dimensions);
    if (first.tenant !== undefined)
      metrics.addDimensions({ ...first.dimensions, Tenant: first.tenant });
    metrics.addMetadata('request_id', invocation.requestId);
    for (const p of group) metrics.addMetric(p.name, METRICS[p.name].unit, p.value);
    metrics.publishStoredMetrics();
  }
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
