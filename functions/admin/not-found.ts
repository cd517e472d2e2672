import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { plainHandler } from '../http/serve.js';
import { log } from '../log.js';
import { methodsAt } from '../routes.js';
import { notFound } from '../use-cases/not-found.js';

const answer = plainHandler('adminNotFound', async ({ event }) =>
  notFound(
    event.requestContext?.http?.method ?? '',
    event.rawPath ?? '',
    methodsAt('admin', event.rawPath ?? ''),
  ),
);

/**
 * `GET <base>/console/` reaches no route (a route path cannot end in '/'), so it lands here:
 * it is the console, at its address without the slash. `../console` is relative, so it holds
 * under a custom domain's base path too.
 */
const CONSOLE_WITH_SLASH = /\/console\/$/;

export const handler = async (event: APIGatewayProxyEventV2, context: Context) => {
  const method = event.requestContext?.http?.method;
  if ((method === 'GET' || method === 'HEAD') && CONSOLE_WITH_SLASH.test(event.rawPath ?? '')) {
    const requestId = event.requestContext?.requestId ?? context.awsRequestId;
    log.info('request', { request_id: requestId, route: 'adminNotFound', method, status: 308 });
    return {
      statusCode: 308,
      headers: { location: '../console', 'cache-control': 'no-store', 'x-request-id': requestId },
      body: '',
    };
  }
  return answer(event, context);
};
