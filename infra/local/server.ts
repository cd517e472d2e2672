import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  createServer,
  type Server as HttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { fileURLToPath } from 'node:url';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { config } from '../../functions/config/settings.js';
import { invalidRequest, RetryLaterError } from '../../functions/domain/errors.js';
import { errorResponse } from '../../functions/http/errors.js';
import { isKeyShaped, KEY_HEADERS } from '../../functions/http/unknown-keys.js';
import { log } from '../../functions/log.js';
import {
  placesOf,
  type Route,
  type RouteId,
  routeEntries,
  type Server,
} from '../../functions/routes.js';
import { type Admission, laneOf, localAdmission } from './admission.js';
import { FairShare } from './fair-share.js';
import { localWaf } from './waf.js';

/**
 * Plays API Gateway's part locally: matches a request against functions/routes.ts, builds an
 * HTTP API payload 2.0 event, invokes the very handler module that is deployed, and writes
 * its result back, headers included.
 */
export type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

interface CompiledRoute {
  readonly id: RouteId;
  readonly route: Route;
  /** The path matched: the route's own, or one of its mounts on this server. */
  readonly path: string;
  readonly pattern: RegExp | undefined;
  readonly params: readonly string[];
}

/** Above this the local server stops reading; handlers enforce the smaller MAX_BODY_BYTES. */
const READ_LIMIT_BYTES = 1_048_576;

/**
 * Routes as API Gateway matches them: `{name}` is one segment, `{name+}` (greedy, last) one or
 * more; a route without a greedy variable wins over one with it, `$default` comes last. A
 * route's mounts on this server are matched like routes of their own.
 */
function compile(server: Server): CompiledRoute[] {
  return routeEntries()
    .flatMap(([id, route]) =>
      placesOf(route)
        .filter((place) => place.server === server)
        .map(({ path }) => ({ id, route, path })),
    )
    .map(({ id, route, path }) => {
      const params: string[] = [];
      if (path === '$default') return { id, route, path, pattern: undefined, params };
      const source = path.replace(/\{([a-z_]+)(\+?)\}/g, (_, name: string, greedy) => {
        params.push(name);
        return greedy ? '(.+)' : '([^/]+)';
      });
      return { id, route, path, pattern: new RegExp(`^${source}$`), params };
    })
    .sort((a, b) => rank(a.path) - rank(b.path));
}

const rank = (path: string) => (path === '$default' ? 2 : path.includes('+}') ? 1 : 0);

const handlers = new Map<string, Promise<Handler>>();
function loadHandler(entry: string): Promise<Handler> {
  let loaded = handlers.get(entry);
  if (!loaded) {
    // Lazy: a handler module is loaded on first use, like a Lambda cold start.
    const base = new URL(`../../functions/${entry}`, import.meta.url);
    const file = existsSync(fileURLToPath(`${base.href}.ts`))
      ? `${base.href}.ts`
      : `${base.href}.js`;
    loaded = import(/* @vite-ignore */ file).then((m: { handler: Handler }) => m.handler);
    handlers.set(entry, loaded);
  }
  return loaded;
}

function match(routes: readonly CompiledRoute[], method: string, path: string) {
  for (const r of routes) {
    if (!r.pattern || (r.route.method !== method && r.route.method !== 'ANY')) continue;
    const m = r.pattern.exec(path);
    if (m)
      return {
        route: r,
        pathParameters: Object.fromEntries(r.params.map((p, i) => [p, m[i + 1] ?? ''])),
      };
  }
  const fallback = routes.find((r) => r.path === '$default');
  return fallback ? { route: fallback, pathParameters: undefined } : undefined;
}

/**
 * Reads the body; past the limit it keeps reading but discards, so the answer reaches a client
 * still sending and the connection stays usable (breaking off would reset it mid-request).
 */
async function readBody(req: IncomingMessage): Promise<Buffer | 'tooLarge'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= READ_LIMIT_BYTES) chunks.push(chunk as Buffer);
  }
  return size > READ_LIMIT_BYTES ? 'tooLarge' : Buffer.concat(chunks);
}

/**
 * The request target as API Gateway sees it: HTTP APIs percent-decode the path before route
 * matching and hand it decoded to the function (`rawPath`, `pathParameters`), so `%2F` in a
 * path parameter arrives as `/`. Undefined: not a target API Gateway would accept (400).
 */
export function requestTarget(
  target: string | undefined,
): { readonly url: URL; readonly path: string } | undefined {
  try {
    if (!target?.startsWith('/') || target.startsWith('//')) return undefined;
    const url = new URL(target, 'http://localhost');
    return { url, path: decodeURIComponent(url.pathname) };
  } catch {
    return undefined;
  }
}

export function toEvent(
  req: IncomingMessage,
  target: { readonly url: URL; readonly path: string },
  body: Buffer,
  routeKey: string,
  pathParameters: Record<string, string> | undefined,
): APIGatewayProxyEventV2 {
  const { url, path } = target;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined)
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams)
    query[name] = name in query ? `${query[name]},${value}` : value;
  const now = new Date();
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length > 0 && { queryStringParameters: query }),
    ...(pathParameters && { pathParameters }),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: req.method ?? 'GET',
        path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0 && { body: body.toString('utf8') }),
    isBase64Encoded: false,
  };
}

/** A function's timeout in AWS (infra/service-function.ts): what the local context counts down. */
const FUNCTION_TIMEOUT_MS = 10_000;

function lambdaContext(requestId: string, name: string): Context {
  const startedAt = Date.now();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, FUNCTION_TIMEOUT_MS - (Date.now() - startedAt)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function write(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  const body =
    result.body === undefined
      ? ''
      : result.isBase64Encoded
        ? Buffer.from(result.body, 'base64')
        : result.body;
  headers['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

/** The API key a request names, when one of our shape: its fair share's key. */
const keyOf = (headers: IncomingHttpHeaders): string | undefined =>
  KEY_HEADERS.map((name) => headers[name])
    .filter((v): v is string => typeof v === 'string')
    .find(isKeyShaped);

export function createLocalServer(server: Server): HttpServer {
  const routes = compile(server);
  const admission = admissionOf(server, config);
  const share =
    config.LOCAL_FAIR_SHARE_PER_KEY > 0
      ? new FairShare(config.LOCAL_FAIR_SHARE_PER_KEY)
      : undefined;
  const waf = localWaf();
  const http = createServer((req, res) => {
    const target = requestTarget(req.url);
    // The edge, in front of API Gateway: what it blocks never reaches a function (waf.ts).
    const blocked = waf?.inspect({
      server,
      path: target?.path,
      headers: req.headers,
      sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
    });
    if (blocked) {
      req.resume();
      return write(res, blocked);
    }
    const matched = target && match(routes, req.method ?? 'GET', target.path);
    const key = share && matched ? keyOf(req.headers) : undefined;
    const turn = key === undefined ? undefined : share?.enter(key);
    if (turn === 'refused') {
      req.resume();
      return write(res, errorResponse(new RetryLaterError('CONCURRENCY', 1_000), randomUUID()));
    }
    void (async () => {
      // One key's burst waits behind its own share while others have work (fair-share.ts).
      const ended = await turn;
      if (ended) res.once('close', ended);
      // As a function's concurrency caps it in AWS: admitted, kept waiting a moment (settling
      // first), or 429 at once with nothing done; health always answers.
      const admitted =
        matched && matched.route.path !== '/actuator/health'
          ? await admission.admit(laneOf(matched.route.id))
          : undefined;
      if (admitted?.kind === 'shed') {
        req.resume();
        const busy = new RetryLaterError('CONCURRENCY', admitted.retryAfterMs);
        return write(res, errorResponse(busy, randomUUID()));
      }
      if (admitted) {
        // A client that gave up while it waited: its turn goes to the next at once.
        if (res.closed || req.socket.destroyed) return admitted.release();
        res.once('close', admitted.release);
      }
      const body = await readBody(req);
      if (body === 'tooLarge' || !target || !matched) {
        const error =
          body === 'tooLarge'
            ? invalidRequest(`request body exceeds ${READ_LIMIT_BYTES} bytes`)
            : !target
              ? invalidRequest('the request target is not a valid path', { field: 'path' })
              : new Error('no route');
        return write(res, errorResponse(error, randomUUID()));
      }
      const { route, pathParameters } = matched;
      const routeKey =
        route.path === '$default' ? '$default' : `${route.route.method} ${route.path}`;
      const event = toEvent(req, target, body, routeKey, pathParameters);
      const handler = await loadHandler(route.route.entry);
      write(res, await handler(event, lambdaContext(event.requestContext.requestId, route.id)));
    })().catch((error: unknown) => {
      log.error('local server failed to invoke a handler', { error });
      if (!res.headersSent) write(res, errorResponse(error, randomUUID()));
      else res.destroy();
    });
  });
  // A request Node's parser refuses (bad header, bad request line) never reaches a handler:
  // answer it with SPEC's error body too, as API Gateway answers 400 itself.
  http.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    const result = errorResponse(invalidRequest('malformed HTTP request'), randomUUID());
    const body = result.body ?? '';
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-request-id: ${String(result.headers?.['x-request-id'])}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  // Longer than clients' idle pools keep sockets (Node's 5 s default races their reuse), as
  // API Gateway does.
  http.keepAliveTimeout = 65_000;
  http.headersTimeout = 66_000;
  return http;
}

const admissionOf = (server: Server, c: typeof config): Admission =>
  localAdmission(server, {
    maxInFlight: c.LOCAL_MAX_IN_FLIGHT,
    minLimit: Math.min(16, c.LOCAL_MAX_IN_FLIGHT),
    initialLimit: 32,
    targetMs: c.LOCAL_ADMISSION_TARGET_MS,
    queue: c.LOCAL_ADMISSION_QUEUE,
    maxWaitMs: { settle: 20_000, take: 10_000 },
  });

export function listen(server: HttpServer, port: number, host = '127.0.0.1'): Promise<number> {
  return new Promise((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolveListen(typeof address === 'object' && address ? address.port : port);
    });
  });
}
