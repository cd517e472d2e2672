import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../infra/build-console.js';
import { consoleTestDir } from '../helpers/console.js';
import { expectError } from '../helpers/errors.js';
import { adminHeaders, givenTenantWith, usd } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

/**
 * What the operator console needs from the servers (docs/decisions.md § Console): its files on
 * the admin server with their security headers, and the two runtime routes it calls mounted on
 * the admin server (its own origin) — the reservation listing, which takes the admin key for a
 * named tenant, and the force-release.
 */
const consoleDir = consoleTestDir();
const stack = useTestStack({ env: { CONSOLE_DIR: consoleDir } });
const api = reservationsApi(stack);

beforeAll(async () => {
  await buildConsole(consoleDir);
  // A file the console does not serve: only its own kinds of files are answered.
  await writeFile(join(consoleDir, 'secret.env'), 'NOT=SERVED\n');
});
afterAll(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(consoleDir, { recursive: true, force: true });
});

/** The event API Gateway would send the console's route for `path` (no proxy parameter). */
const consoleEvent = (path: string) =>
  ({
    version: '2.0',
    routeKey: 'GET /console',
    rawPath: path,
    rawQueryString: '',
    headers: {},
    isBase64Encoded: false,
    requestContext: { http: { method: 'GET', path }, requestId: randomUUID() },
  }) as unknown as APIGatewayProxyEventV2;

const get = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers, redirect: 'manual' });

describe('the console’s files on the admin server', () => {
  it('serves the page at /console with a strict Content-Security-Policy and no caching', async () => {
    const { CONSOLE_CSP } = await import('../../functions/http/static-files.js');

    const res = await get(`${stack.adminUrl}/console`);
    const html = await res.text();

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("connect-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    // Nothing inline: one module script and one stylesheet, both files, relative to the page.
    expect(html).toMatch(
      /<script type="module" src="console\/assets\/main-[A-Z0-9]+\.js"><\/script>/,
    );
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=/);
  });

  it('serves the hashed assets for a year, and nothing else', async () => {
    const html = await (await get(`${stack.adminUrl}/console`)).text();
    const script = /src="console\/(assets\/[^"]+\.js)"/.exec(html)?.[1] ?? '';

    const res = await get(`${stack.adminUrl}/console/${script}`);

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    for (const path of [
      'assets/nope.js',
      'secret.env',
      'assets/..%2F..%2Fpackage.json',
      '..%2Fpackage.json',
      'assets/%2e%2e/%2e%2e/package.json',
    ]) {
      const missing = await request('GET', `${stack.adminUrl}/console/${path}`);
      expectError(missing, 404, 'NOT_FOUND', 'admin');
    }
  });

  it('answers /console/ and /console/index.html with the console too, its files one level down', async () => {
    const page = await (await get(`${stack.adminUrl}/console`)).text();
    const script = /src="console\/(assets\/[^"]+\.js)"/.exec(page)?.[1] ?? '';

    // No route can end in '/', so /console/ falls through to the not-found route: it sends the
    // browser to the console, relative so that a custom domain's base path is kept.
    const slash = await get(`${stack.adminUrl}/console/`);
    expect(slash.status).toBe(308);
    expect(slash.headers.get('location')).toBe('../console');
    expect(new URL('../console', `${stack.adminUrl}/admin/console/`).pathname).toBe(
      '/admin/console',
    );
    const followed = await fetch(`${stack.adminUrl}/console/`);
    expect(followed.url).toBe(`${stack.adminUrl}/console`);
    expect(await followed.text()).toBe(page);

    // /console/index.html: the same page, its references relative to /console/.
    const index = await get(`${stack.adminUrl}/console/index.html`);
    const html = await index.text();
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toBe(
      (await import('../../functions/http/static-files.js')).CONSOLE_CSP,
    );
    expect(html).toContain(`src="${script}"`);
    expect(html).not.toContain('console/assets/');
    const resolved = new URL(script, `${stack.adminUrl}/console/index.html`).href;
    expect((await get(resolved)).status).toBe(200);

    // Should API Gateway hand /console/ to the console's route, the page fits there as well.
    const { handler } = await import('../../functions/admin/console.js');
    const routed = await handler(consoleEvent('/console/'));
    expect(routed.statusCode).toBe(200);
    expect(routed.body).toContain(`src="${script}"`);
  });

  it('is not served by the runtime server', async () => {
    expectError(await request('GET', `${stack.runtimeUrl}/console`), 404, 'NOT_FOUND', 'runtime');
  });
});

describe('GET /v1/reservations with the admin key', () => {
  const list = (base: string, query: string, headers: Record<string, string> = adminHeaders) =>
    request<{ reservations: Json[]; has_more: boolean; next_cursor?: string }>(
      'GET',
      `${base}/v1/reservations?${query}`,
      { headers },
    );

  it('lists the named tenant’s reservations, on the runtime server and on the admin server', async () => {
    const [t, other] = await Promise.all([
      givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 }),
      givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 }),
    ]);
    const held = await api.reserve(t, { estimate: usd(100) });
    const done = await api.reserve(t, { estimate: usd(200) });
    await api.commit(t, done.body.reservation_id, { actual: usd(150) });
    await api.reserve(other, { estimate: usd(300) });

    for (const base of [stack.runtimeUrl, stack.adminUrl]) {
      const all = await list(base, `tenant=${t.tenant}`);
      const active = await list(base, `tenant=${t.tenant}&status=ACTIVE`);

      expect(all.status).toBe(200);
      expect(all.body.reservations.map((r) => r.reservation_id).sort()).toEqual(
        [held.body.reservation_id, done.body.reservation_id].sort(),
      );
      expect(active.body.reservations.map((r) => r.reservation_id)).toEqual([
        held.body.reservation_id,
      ]);
    }
  });

  it('pages with cursors bound to the tenant', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    for (let i = 0; i < 3; i++) await api.reserve(t, { estimate: usd(10) });

    const first = await list(stack.adminUrl, `tenant=${t.tenant}&limit=2`);
    const cursor = encodeURIComponent(String(first.body.next_cursor));
    const second = await list(stack.adminUrl, `tenant=${t.tenant}&limit=2&cursor=${cursor}`);
    const elsewhere = await list(stack.adminUrl, `tenant=someone-else&limit=2&cursor=${cursor}`);

    expect(first.body.reservations).toHaveLength(2);
    expect(first.body.has_more).toBe(true);
    expect(second.body.reservations).toHaveLength(1);
    expectError(elsewhere, 400, 'INVALID_REQUEST', 'runtime');
  });

  it('requires the tenant with the admin key, and refuses a wrong admin key', async () => {
    expectError(await list(stack.adminUrl, 'status=ACTIVE'), 400, 'INVALID_REQUEST', 'admin');
    expectError(
      await list(stack.adminUrl, 'tenant=acme', { 'x-admin-api-key': 'wrong' }),
      401,
      'UNAUTHORIZED',
      'admin',
    );
  });

  it('still lists only its own tenant’s with a tenant key, on either server', async () => {
    const [t, other] = await Promise.all([
      givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 }),
      givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 }),
    ]);
    await api.reserve(t, { estimate: usd(100) });

    for (const base of [stack.runtimeUrl, stack.adminUrl]) {
      const own = await list(base, '', t.headers);
      expect(own.body.reservations).toHaveLength(1);
      expectError(await list(base, `tenant=${other.tenant}`, t.headers), 403, 'FORBIDDEN');
    }
  });
});

describe('POST /v1/reservations/{id}/release on the admin server', () => {
  it('force-releases with the admin key, audited with its reason', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const hold = await api.reserve(t, { estimate: usd(400) });
    const id = String(hold.body.reservation_id);

    const released = await request('POST', `${stack.adminUrl}/v1/reservations/${id}/release`, {
      headers: adminHeaders,
      body: { idempotency_key: randomUUID(), reason: 'released from the console' },
    });

    expect(released.status).toBe(200);
    expect(released.body.released).toEqual(usd(400));
    const trail = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${t.tenant}&operation=releaseReservation`,
      { headers: adminHeaders },
    );
    expect(trail.body.logs).toEqual([
      expect.objectContaining({
        resource_id: id,
        metadata: {
          actor: 'admin',
          actor_type: 'admin',
          detail: expect.objectContaining({ reason: 'released from the console' }),
        },
      }),
    ]);
  });

  it('answers only the mounted method and path: other reservation routes stay on the runtime server', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const hold = await api.reserve(t, { estimate: usd(10) });
    const id = String(hold.body.reservation_id);

    const commit = await request('POST', `${stack.adminUrl}/v1/reservations/${id}/commit`, {
      headers: t.headers,
      body: { idempotency_key: randomUUID(), actual: usd(10) },
    });
    const reserve = await request('POST', `${stack.adminUrl}/v1/reservations`, {
      headers: t.headers,
      body: { idempotency_key: randomUUID() },
    });

    expectError(commit, 404, 'NOT_FOUND', 'admin');
    // A path the admin server answers, with another method: 405, Allow names them.
    expectError(reserve, 405, 'INVALID_REQUEST');
    expect(reserve.headers.get('allow')).toBe('GET, HEAD');
  });
});
