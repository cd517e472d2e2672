import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { DomainError } from '../domain/errors.js';
import { log } from '../log.js';
import type { RouteId } from '../routes.js';
import { errorResponse } from './errors.js';
import { routeFacts } from './route-facts.js';

/**
 * The builder of the one handler that answers files instead of JSON: the operator console
 * (docs/decisions.md § Console). The files are read once per container from the first folder
 * of `folders` that holds an index.html; only files found there are ever answered (no path
 * from the request reaches the file system), each with the console's security headers.
 */

/**
 * The console's Content-Security-Policy: its own scripts and styles only (no inline code, no
 * eval), requests only to its own origin, no framing, no plugins, and DOM sinks that parse
 * HTML refused unless through a Trusted Types policy (it has none: Preact renders through DOM
 * calls).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
} as const;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
};

interface StaticFile {
  readonly body: string;
  readonly contentType: string;
  /** Content-hashed names (under assets/) never change: cached for a year. */
  readonly immutable: boolean;
}

/** Every servable file under `dir`, by its path relative to it with '/' separators. */
export function readSite(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const contentType = CONTENT_TYPES[extname(entry.name)];
    if (!entry.isFile() || !contentType) continue;
    const full = join(entry.parentPath, entry.name);
    const name = relative(dir, full).split(sep).join('/');
    files.set(name, {
      body: readFileSync(full, 'utf8'),
      contentType,
      immutable: name.startsWith('assets/'),
    });
  }
  return files;
}

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

/**
 * The page as answered one level down, at `<route>/` or `<route>/index.html`: its references
 * are relative to `<route>` (`console/assets/…`, so that they hold under any base path), which
 * from there would name `<route>/console/assets/…`.
 */
function nestedPage(page: StaticFile, folder: string): StaticFile {
  return { ...page, body: page.body.replaceAll(`="${folder}/`, '="') };
}

/**
 * A handler answering `GET <route>` with index.html and `GET <route>/{proxy+}` with the file
 * named by `proxy` (index.html too). `folders` are tried in order; an absent one (undefined) is
 * skipped.
 */
export function staticFilesHandler(
  routeId: RouteId,
  folders: readonly (string | URL | undefined)[],
) {
  let site: Map<string, StaticFile> | undefined;
  const load = () => {
    if (site) return site;
    const dir = folders
      .filter((f) => f !== undefined)
      .map((f) => (f instanceof URL ? fileURLToPath(f) : f))
      .find((f) => existsSync(join(f, 'index.html')));
    // Not built: answer 404 until it is (`npm run build`), without caching the absence.
    if (!dir) return undefined;
    site = readSite(dir);
    return site;
  };

  const folder = routeFacts(routeId).path.split('/').at(-1) ?? '';
  return async (event: Event): Promise<Result> => {
    const startedAt = performance.now();
    const requestId = event.requestContext?.requestId || randomUUID();
    const proxy = event.pathParameters?.proxy;
    const name = proxy ?? 'index.html';
    const files = load();
    const found = files?.get(name);
    // At <route>/ (should API Gateway route it here) or <route>/index.html: one level down.
    const nested = proxy !== undefined || (event.rawPath ?? '').endsWith('/');
    const file = found && name === 'index.html' && nested ? nestedPage(found, folder) : found;
    const result: Result = file
      ? {
          statusCode: 200,
          headers: {
            ...SECURITY_HEADERS,
            'content-type': file.contentType,
            'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
            'x-request-id': requestId,
          },
          body: file.body,
        }
      : withSecurityHeaders(
          errorResponse(
            new DomainError(
              'NOT_FOUND',
              files ? `no console file ${name}` : 'the console is not built: run npm run build',
            ),
            requestId,
          ),
        );
    log.info('request', {
      request_id: requestId,
      route: routeId,
      method: event.requestContext?.http?.method,
      status: result.statusCode,
      latency_ms: Math.round((performance.now() - startedAt) * 100) / 100,
    });
    return result;
  };
}

const withSecurityHeaders = (r: Result): Result => ({
  ...r,
  headers: { ...SECURITY_HEADERS, ...r.headers, 'cache-control': 'no-store' },
});
