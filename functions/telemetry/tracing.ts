import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { MiddlewareObj } from '@middy/core';
import { config } from '../config/settings.js';

export interface Tracing {
  readonly tracer: Tracer;
  /** The `## handler` subsegment around an invocation (Powertools' middy middleware). */
  readonly middleware: () => MiddlewareObj;
}

/**
 * X-Ray through the Powertools tracer, loaded only when POWERTOOLS_TRACE_ENABLED is set (the
 * CDK app sets it with active tracing): the X-Ray SDK installs async hooks for its context,
 * which every other process (the local server, tests, benchmarks) is better off without.
 * Responses are never recorded in traces: some carry a new API key's secret.
 */
export const tracing: Tracing | undefined = config.POWERTOOLS_TRACE_ENABLED
  ? await loadTracing()
  : undefined;

async function loadTracing(): Promise<Tracing> {
  const [{ Tracer }, { captureLambdaHandler }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('@aws-lambda-powertools/tracer/middleware'),
  ]);
  // Our only outbound calls are AWS SDK clients, each captured on its own (captureClient).
  const tracer = new Tracer({
    serviceName: config.POWERTOOLS_SERVICE_NAME,
    captureHTTPsRequests: false,
  });
  return {
    tracer,
    middleware: () => captureLambdaHandler(tracer, { captureResponse: false }) as MiddlewareObj,
  };
}

/** An AWS SDK v3 client whose calls become X-Ray subsegments when tracing is on. */
export function captureClient<C>(client: C): C {
  return tracing ? tracing.tracer.captureAWSv3Client(client) : client;
}
