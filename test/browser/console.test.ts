import { mkdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../infra/build-console.js';
import { axeViolations, launchChromium, watchCsp } from '../helpers/browser.js';
import { consoleTestDir } from '../helpers/console.js';
import { request } from '../helpers/http.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { useTestStack } from '../helpers/scaffold.js';
import { ADMIN_KEY } from '../helpers/stack.js';

/**
 * The operator console in headless Chromium against the real local stack (both servers, this
 * file's table on the shared DynamoDB Local): an operator's day, one step per test, in order —
 * sign in, create a tenant and keys, create and fund a budget, watch its bar move as an agent
 * reserves, force-release a stuck reservation, revoke a key, suspend and close tenants, find it
 * all in the audit trail and its CSV, read the overview. Then every page at 1280 px and at phone
 * width: no accessibility violations (axe-core, WCAG 2 A/AA), nothing wider than the screen, a
 * screenshot (in docs/console/ with UPDATE_SCREENSHOTS=1). The Content-Security-Policy is enforced throughout and must never
 * be violated. Steps are generous with time: the machine is shared.
 */
const consoleDir = consoleTestDir();
// Events on: the Events and Webhooks pages show the log and real deliveries; estimate accuracy is
// read from the same stream, as `npm start` does by default.
const stack = useTestStack({
  env: {
    CONSOLE_DIR: consoleDir,
    EVENTS_ENABLED: 'true',
    ESTIMATE_ACCURACY: 'true',
    STREAM_POLL_INTERVAL_MS: '100',
  },
});
// docs/console/ when asked (UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean.
const screenshots =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/console/', import.meta.url))
    : join(tmpdir(), 'budget-console-screenshots');

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const USD = 'USD_MICROCENTS';
const usd = (dollars: number) => ({ unit: USD, amount: Math.round(dollars * 100_000_000) });

let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
let cspViolations: readonly string[] = [];
const requestedUrls: string[] = [];
const pageErrors: string[] = [];

/** What the agent of tenant acme does on the runtime server, with the key the console made. */
const agent = { secret: '', laptopSecret: '' };
const ids = { stuck: '', expired: '', overdrawn: '' };

const consoleUrl = (hash = '') => `${stack.adminUrl}/console${hash}`;
const admin = (method: string, path: string, body?: unknown) =>
  request(method, `${stack.adminUrl}${path}`, {
    headers: { 'x-admin-api-key': ADMIN_KEY },
    ...(body !== undefined && { body }),
  });
const runtime = (path: string, body: unknown, secret = agent.secret) =>
  request('POST', `${stack.runtimeUrl}${path}`, { headers: { 'x-service-api-key': secret }, body });
const reserve = async (idempotencyKey: string, body: Record<string, unknown>) => {
  const res = await runtime('/v1/reservations', {
    idempotency_key: idempotencyKey,
    action: { kind: 'llm.completion', name: 'gpt-4o' },
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.reservation_id);
};

const live = () => page.locator('.live');
const nav = (name: string) =>
  page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name, exact: true });
const heading = (name: string) => page.getByRole('heading', { name, level: 1 });
/** The page has finished loading what it shows. */
const settled = async () => {
  await expect.poll(() => page.getByText(/^Loading .*…$/).count(), { timeout: 20_000 }).toBe(0);
};
const budgetCard = (scope: string, unit = USD): Locator =>
  page
    .locator('article.budget-card')
    .filter({ has: page.getByRole('heading', { name: scope, exact: true }) })
    .filter({ hasText: unit === USD ? 'USD' : 'tokens' });

beforeAll(async () => {
  const [launched] = await Promise.all([launchChromium(), buildConsole(consoleDir)]);
  browser = launched;
  context = await browser.newContext({ viewport: DESKTOP });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  cspViolations = await watchCsp(page);
  page.on('request', (r) => requestedUrls.push(r.url()));
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await mkdir(screenshots, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await rm(consoleDir, { recursive: true, force: true });
});

describe('the operator console, in Chromium', { timeout: 120_000 }, () => {
  it('is served with its security headers and signs in with the admin key only', async () => {
    // Imported only now: function modules read their configuration once, when the stack starts.
    const { CONSOLE_CSP } = await import('../../functions/http/static-files.js');
    const response = await page.goto(consoleUrl());

    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    expect(response?.headers()['x-content-type-options']).toBe('nosniff');
    const keyField = page.getByLabel('Admin API key');
    await keyField.fill('not-the-admin-key');
    await keyField.press('Enter');
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('That key was refused');
    await page.screenshot({ path: join(screenshots, 'sign-in.png') });

    await keyField.fill(ADMIN_KEY);
    await keyField.press('Enter');
    await heading('Overview').waitFor();

    // The key travels in a header only: never in a URL, a cookie or localStorage.
    expect(page.url()).not.toContain(ADMIN_KEY);
    expect(requestedUrls.filter((u) => u.includes(ADMIN_KEY))).toEqual([]);
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
  });

  it('creates a tenant', async () => {
    // Two more tenants, made by API, for the suspend and close steps.
    for (const [id, name] of [
      ['globex', 'Globex Corporation'],
      ['initech', 'Initech'],
    ]) {
      expect((await admin('POST', '/v1/admin/tenants', { tenant_id: id, name })).status).toBe(201);
    }
    await nav('Tenants').click();
    await heading('Tenants').waitFor();

    await page.getByLabel('Tenant id').fill('acme');
    await page.getByLabel('Name', { exact: true }).fill('Acme Corp');
    await page.getByRole('button', { name: 'Create tenant' }).click();

    await expect.poll(() => live().textContent()).toBe('Tenant acme created.');
    const row = page.getByRole('row').filter({ hasText: 'Acme Corp' });
    await row.waitFor();
    expect(await row.getByText('ACTIVE').count()).toBe(1);
    expect((await admin('GET', '/v1/admin/tenants/acme')).body).toMatchObject({
      name: 'Acme Corp',
    });
  });

  it('creates API keys and shows each secret once', async () => {
    await nav('API keys').click();
    await heading('API keys').waitFor();

    for (const name of ['agents', 'laptop']) {
      if ((await page.locator('details.panel').getAttribute('open')) === null) {
        await page.getByText('New API key').click();
      }
      await page.locator('#new-key-tenant').selectOption('acme');
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByRole('button', { name: 'Create key' }).click();

      const dialog = page.getByRole('dialog', { name: `Key ${name} created` });
      await dialog.waitFor();
      const secret = await dialog.getByLabel(/^Secret of key_/).inputValue();
      expect(secret).toMatch(/^cyc_live_/);
      if (name === 'agents') agent.secret = secret;
      else agent.laptopSecret = secret;
      await dialog.getByRole('button', { name: 'I have stored it' }).click();
      await dialog.waitFor({ state: 'detached' });
      // Once closed, the secret is nowhere in the page any more.
      expect(await page.content()).not.toContain(secret);
      await page.getByRole('row').filter({ hasText: name }).first().waitFor();
    }
    const introspected = await request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, {
      headers: { 'x-service-api-key': agent.secret },
    });
    expect(introspected.body).toMatchObject({ tenant_id: 'acme' });
  });

  it('creates and funds a budget, whose bar moves as the agent reserves and spends', async () => {
    await nav('Budgets').click();
    await heading('Budgets').waitFor();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    await page.getByText('New budget for acme').click();
    // The scope starts at the tenant on screen; only what follows it is typed (empty: its own).
    expect(await page.locator('#new-budget-scope-prefix').textContent()).toBe('tenant:acme');
    expect(await page.getByLabel('Scope', { exact: true }).inputValue()).toBe('');
    await page.getByLabel('Allocated (USD)').fill('1.00');
    await page.getByRole('button', { name: 'Create budget' }).click();
    await expect.poll(() => live().textContent()).toContain('Budget tenant:acme');
    const card = budgetCard('tenant:acme');
    await card.waitFor();

    await card.getByRole('button', { name: /^Fund…/ }).click();
    const fund = page.getByRole('dialog', { name: 'Fund tenant:acme' });
    await fund.getByLabel('Amount (USD)').fill('0.50');
    await fund.getByLabel(/^Reason/).fill('top-up for the pilot');
    await fund.getByRole('button', { name: 'Apply CREDIT' }).click();
    await fund.waitFor({ state: 'detached' });
    await expect.poll(() => card.locator('dd').first().textContent()).toBe('$1.50');

    // The agent's other budgets, made by API: its prod workspace (with an overdraft) and tokens.
    for (const body of [
      {
        scope: 'tenant:acme/workspace:prod',
        unit: USD,
        allocated: usd(0.5),
        overdraft_limit: usd(0.2),
      },
      {
        scope: 'tenant:acme',
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 1_000_000 },
        caps: { max_tokens: 2048, tool_denylist: ['shell'] },
        caps_when_remaining_below_bps: 2000,
        period: 'MONTHLY',
      },
    ]) {
      expect((await admin('POST', '/v1/admin/budgets', body)).status).toBe(201);
    }
    const bar = card.locator('.bar');
    const usedBefore = Number(await bar.getAttribute('data-used'));
    expect(usedBefore).toBe(0);

    // The agent holds $0.40 on prod (it will get stuck), spends $0.04 of a $0.05 hold, and
    // holds 850k tokens; a short hold expires unsettled.
    ids.stuck = await reserve('stuck-run', {
      subject: { workspace: 'prod' },
      estimate: usd(0.4),
      ttl_ms: 600_000,
    });
    const spent = await reserve('quick-run', {
      subject: { workspace: 'prod' },
      estimate: usd(0.05),
    });
    expect(
      (
        await runtime(`/v1/reservations/${spent}/commit`, {
          idempotency_key: 'quick-run-commit',
          actual: usd(0.04),
        })
      ).status,
    ).toBe(200);
    await reserve('long-context', {
      subject: { tenant: 'acme' },
      estimate: { unit: 'TOKENS', amount: 850_000 },
      ttl_ms: 600_000,
    });
    ids.expired = await reserve('abandoned-run', {
      subject: { workspace: 'prod' },
      estimate: usd(0.02),
      ttl_ms: 1_000,
      grace_period_ms: 0,
    });

    await page.getByRole('button', { name: 'Refresh' }).click();
    // (0.04 spent + 0.40 + 0.02 held) / 1.50
    await expect
      .poll(async () => Number(await bar.getAttribute('data-used')))
      .toBeCloseTo(0.46 / 1.5, 4);
    const width = (seg: string) =>
      bar
        .locator(`.seg.${seg}`)
        .evaluate((el) => (el as HTMLElement).getBoundingClientRect().width);
    expect(await width('spent')).toBeGreaterThan(0);
    expect(await width('reserved')).toBeGreaterThan(await width('spent'));
    expect(await bar.getAttribute('aria-label')).toContain('31 % used');
    const tokens = budgetCard('tenant:acme', 'TOKENS');
    await tokens.getByText('Near threshold').waitFor();
    // A rolling budget shows its current period, and its closed ones on demand.
    const month = new Date().toISOString().slice(0, 7);
    await tokens
      .getByText(`Rolls over monthly. Current period: ${month}-01 00:00:00 UTC to`)
      .waitFor();
    await tokens.getByRole('button', { name: /^Past periods…/ }).click();
    const past = page.getByRole('dialog', { name: 'Past periods of tenant:acme' });
    await past.getByText('No period has closed yet.').waitFor();
    await past.getByRole('button', { name: 'Close' }).click();
    await past.waitFor({ state: 'detached' });
  });

  it('keeps a new budget to the tenant on screen and shows each error by its kind', async () => {
    await nav('Budgets').click();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    const form = page.locator('details').filter({ hasText: 'New budget for acme' });
    if ((await form.getAttribute('open')) === null) await form.locator('summary').click();
    const scope = form.getByLabel('Scope', { exact: true });
    const create = form.getByRole('button', { name: 'Create budget' });
    const alert = form.getByRole('alert');
    const posted: string[] = [];
    const onRequest = (r: { method(): string; url(): string }) => {
      if (r.method() === 'POST' && r.url().endsWith('/v1/admin/budgets')) posted.push(r.url());
    };
    page.on('request', onRequest);
    /** Submits the form and waits for the error it shows: its kind and its text. */
    const submitted = async () => {
      await create.click();
      await alert.waitFor();
      return {
        kind: await alert.getAttribute('data-kind'),
        text: (await alert.textContent()) ?? '',
      };
    };
    try {
      // Typed: another tenant's scope is refused before anything is sent, naming the field.
      await scope.fill('tenant:globex/workspace:prod');
      await form.getByLabel('Allocated (USD)').fill('1.00');
      const pinned = await submitted();
      expect(pinned.kind).toBe('input');
      expect(pinned.text).toContain('Check the form.');
      expect(pinned.text).toContain('Scope');
      expect(pinned.text).toContain('pinned to tenant:acme');
      expect(posted).toEqual([]);

      // Validation by the service, with its field.
      await scope.fill('/team:platform');
      const invalid = await submitted();
      expect(invalid.kind).toBe('validation');
      expect(invalid.text).toContain('The service refused the input.');
      expect(invalid.text).toContain('scope');
      expect(invalid.text).toContain('INVALID_REQUEST');

      // A conflict: the tenant's own USD budget exists already.
      await scope.fill('');
      const conflict = await submitted();
      expect(conflict.kind).toBe('conflict');
      expect(conflict.text).toContain('DUPLICATE_RESOURCE');

      // The network: no answer at all is not a typing error, nor the service's refusal.
      await page.route('**/v1/admin/budgets', (route) => route.abort('connectionrefused'));
      try {
        await scope.fill('/workspace:offline');
        const offline = await submitted();
        expect(offline.kind).toBe('network');
        expect(offline.text).toContain('Could not reach the service');
      } finally {
        await page.unroute('**/v1/admin/budgets');
      }
      expect((await admin('GET', '/v1/admin/budgets?tenant_id=globex')).body).toMatchObject({
        ledgers: [],
      });

      // Not found: a link to a tenant that does not exist.
      await page.goto(consoleUrl('#/budgets?tenant=ghost'));
      const ghost = page.locator('details').filter({ hasText: 'New budget for ghost' });
      await ghost.locator('summary').click();
      await ghost.getByLabel('Allocated (USD)').fill('1.00');
      await ghost.getByRole('button', { name: 'Create budget' }).click();
      const missing = ghost.getByRole('alert');
      await missing.waitFor();
      expect(await missing.getAttribute('data-kind')).toBe('notFound');
      expect(await missing.textContent()).toContain('tenant ghost does not exist');
    } finally {
      page.off('request', onRequest);
    }
  });

  it('shows a refused admin key by its kind: signed out, saying why', async () => {
    if (!browser) throw new Error('no browser');
    const other = await browser.newContext({ viewport: DESKTOP });
    try {
      const p = await other.newPage();
      // A session whose key the service no longer takes (rotated, say).
      await p.addInitScript(() => {
        sessionStorage.setItem('budget-console.admin-key', 'a-key-since-rotated');
        sessionStorage.setItem('budget-console.last-activity', String(Date.now()));
      });
      await p.goto(consoleUrl());
      await p.getByText('Signed out: the service refused the admin key').waitFor();
      expect(await p.getByLabel('Admin API key').count()).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('lists ACTIVE reservations with age and deadline and force-releases one with a reason', async () => {
    // The short hold's deadline passes; the sweeper (driven here, off in test stacks) expires it.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');
    expect((await sweepOnce()).expired).toBe(1);

    await nav('Reservations').click();
    await heading('Reservations').waitFor();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    const row = page.getByRole('row').filter({ hasText: ids.stuck });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/in (9|10) min/);
    expect(await page.getByRole('row').filter({ hasText: ids.expired }).count()).toBe(0);

    await row.getByRole('button', { name: /^Release…/ }).click();
    const dialog = page.getByRole('dialog', { name: `Force-release ${ids.stuck}?` });
    const confirm = dialog.getByRole('button', { name: 'Release reservation' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(/^Reason/).fill('agent stuck in a retry loop');
    await confirm.click();
    await expect.poll(() => live().textContent()).toBe(`Reservation ${ids.stuck} released.`);
    await row.waitFor({ state: 'detached' });

    // The agent's late commit finds it finalized.
    const late = await runtime(`/v1/reservations/${ids.stuck}/commit`, {
      idempotency_key: 'stuck-run-commit',
      actual: usd(0.1),
    });
    expect(late.status).toBe(409);

    await page.getByLabel('Status').selectOption('EXPIRED');
    await page.getByRole('row').filter({ hasText: ids.expired }).waitFor();
  });

  it('revokes a key, which the service then refuses', async () => {
    await nav('API keys').click();
    await heading('API keys').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'laptop' });
    // Its own rate limits first, from its row (they can only narrow its tenant's).
    await row.getByRole('button', { name: /^Limits…/ }).click();
    const limits = page.getByRole('dialog', { name: 'Rate limits of key laptop' });
    await limits.getByLabel(/^Commits a minute/).fill('30');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.waitFor({ state: 'detached' });
    await row.getByText('Rate limits: commits a minute: 30').waitFor();
    await row.getByRole('button', { name: /^Revoke…/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke key laptop?' });
    await dialog.getByLabel(/^Reason/).fill('laptop lost');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await dialog.waitFor({ state: 'detached' });

    await row.getByText('REVOKED').waitFor();
    expect(await row.textContent()).toContain('laptop lost');
    const refused = await request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, {
      headers: { 'x-service-api-key': agent.laptopSecret },
    });
    expect(refused.status).toBe(401);
  });

  it('suspends a tenant and closes another, each after confirmation', async () => {
    await nav('Tenants').click();
    await heading('Tenants').waitFor();
    const globex = page.getByRole('row').filter({ hasText: 'globex' });
    await globex.getByRole('button', { name: 'Suspend globex' }).click();
    await page
      .getByRole('dialog', { name: 'Suspend tenant globex?' })
      .getByRole('button', { name: 'Suspend tenant' })
      .click();
    await globex.getByText('SUSPENDED').waitFor();

    const initech = page.getByRole('row').filter({ hasText: 'initech' });
    await initech.getByRole('button', { name: 'Close… initech' }).click();
    const dialog = page.getByRole('dialog', { name: 'Close tenant initech?' });
    const close = dialog.getByRole('button', { name: 'Close tenant' });
    expect(await close.isDisabled()).toBe(true);
    await dialog.getByLabel('Type the tenant id to confirm').fill('initech');
    await close.click();
    await initech.getByText('CLOSED').waitFor();
    expect((await admin('GET', '/v1/admin/tenants/initech')).body).toMatchObject({
      status: 'CLOSED',
    });
  });

  it('finds the forced release in the audit trail, filtered, and exports it as CSV', async () => {
    // Debt for the overview: a commit past the prod workspace's allocation, into its overdraft.
    ids.overdrawn = await reserve('big-run', {
      subject: { workspace: 'prod' },
      estimate: usd(0.05),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });
    const committed = await runtime(`/v1/reservations/${ids.overdrawn}/commit`, {
      idempotency_key: 'big-run-commit',
      actual: usd(0.55),
    });
    expect(committed.status, JSON.stringify(committed.body)).toBe(200);

    await nav('Audit trail').click();
    await heading('Audit trail').waitFor();
    await page.locator('#audit-tenant').selectOption('acme');
    await page.getByLabel('Operation').selectOption('releaseReservation');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const row = page.getByRole('row').filter({ hasText: ids.stuck });
    // The unfiltered trail already shows this row: wait for the filtered page to replace it.
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await row.waitFor();
    await row.getByText('Reason: agent stuck in a retry loop').click();
    await row.getByText('Request', { exact: true }).waitFor();

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const csv = await readFile(await download.path(), 'utf8');
    const lines = csv.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'timestamp,tenant_id,actor,operation,resource_type,resource_id,status,request_id,log_id,before,after,detail',
    );
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(`acme,admin,releaseReservation,reservation,${ids.stuck},200`);
    expect(lines[1]).toContain('agent stuck in a retry loop');

    await page.getByRole('button', { name: 'Clear' }).click();
    for (const operation of [
      'revokeApiKey',
      'fundBudget',
      'createApiKey',
      'createTenant',
      'updateTenant',
    ]) {
      await page.getByRole('rowheader', { name: operation }).first().waitFor();
    }
  });

  it('webhooks: subscribes a receiver (its secret once), tests, pauses and resumes it, shows its deliveries, replays', async () => {
    const receiver: Receiver = await startReceiver('/console-hooks');
    try {
      await nav('Webhooks').click();
      await heading('Webhooks').waitFor();
      await page.getByText('New webhook subscription').click();
      await page.getByLabel('Owner').selectOption('acme');
      await page.getByLabel('URL', { exact: true }).fill(receiver.url);
      await page.getByLabel('Name (optional)').fill('finance alerts');
      await page.getByLabel('Event types').selectOption(['budget.funded', 'budget.created']);
      await page.getByRole('button', { name: 'Create subscription' }).click();
      const dialog = page.getByRole('dialog', { name: /^Subscription whsub_\w+ created$/ });
      const secret = await dialog.getByLabel('Signing secret').inputValue();
      expect(secret).toMatch(/^whsec_/);
      await dialog.getByRole('button', { name: 'I have stored it' }).click();
      const row = page.getByRole('row').filter({ hasText: 'finance alerts' });
      await row.getByText('ACTIVE').waitFor();
      const listed = await admin('GET', '/v1/admin/webhooks?tenant_id=acme');
      const id = String(
        (listed.body.subscriptions as { subscription_id: string; name?: string }[]).find(
          (x) => x.name === 'finance alerts',
        )?.subscription_id,
      );

      await row.getByRole('button', { name: `Test ${id}` }).click();
      await expect.poll(() => live().textContent()).toContain(`Test event delivered to ${id}`);
      const funded = await admin(
        'POST',
        `/v1/admin/budgets/fund?scope=${encodeURIComponent('tenant:acme')}&unit=${USD}`,
        { operation: 'CREDIT', amount: usd(1), idempotency_key: 'console-hook-fund' },
      );
      expect(funded.status).toBe(200);
      await eventually(
        () => receiver.received.some((r) => r.event.event_type === 'budget.funded'),
        'budget.funded delivered',
      );
      await row.getByRole('link', { name: `Deliveries of ${id}` }).click();
      const deliveries = page.getByRole('region', { name: 'Deliveries' });
      await deliveries.getByRole('rowheader', { name: /budget\.funded/ }).waitFor();
      await deliveries.getByRole('cell', { name: 'SUCCESS' }).first().waitFor();

      await row.getByRole('button', { name: `Pause ${id}` }).click();
      await row.getByText('PAUSED').waitFor();
      await row.getByRole('button', { name: `Resume ${id}` }).click();
      await row.getByText('ACTIVE').waitFor();
      await row.getByRole('button', { name: `Replay… ${id}` }).click();
      await page
        .getByRole('dialog', { name: 'Replay events to finance alerts' })
        .getByRole('button', { name: 'Replay' })
        .click();
      await expect
        .poll(() => live().textContent())
        .toMatch(new RegExp(`Replay to ${id}: \\d+ events queued`));
    } finally {
      await receiver.close();
    }
  });

  it('events: lists the log, newest first, filtered by type, each event opening to its document', async () => {
    await nav('Events').click();
    await heading('Events').waitFor();
    await settled();
    await page.getByLabel('Event type').selectOption('budget.funded');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const row = page.getByRole('row').filter({ hasText: 'budget.funded' }).first();
    await row.waitFor();
    expect(page.url()).toContain('event_type=budget.funded');
    // The unfiltered list also holds budget.funded rows: wait for the filtered page to replace it.
    await expect
      .poll(() => page.getByRole('rowheader').filter({ hasNotText: 'budget.funded' }).count(), {
        timeout: 20_000,
      })
      .toBe(0);
    await settled();
    await row.getByText('Document').click();
    await row.getByText('"operation": "CREDIT"').waitFor();
    expect(await page.getByRole('rowheader').filter({ hasNotText: 'budget.funded' }).count()).toBe(
      0,
    );
  });

  it('overview: tenants, budgets near and over threshold, debt, expiries and changes', async () => {
    await nav('Overview').click();
    await heading('Overview').waitFor();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await settled();
    const tile = (label: string) =>
      page.getByRole('list', { name: 'Summary' }).getByRole('listitem').filter({ hasText: label });
    const figure = (label: string) => tile(label).locator('.tile-figure').textContent();
    expect(await figure('Active tenants')).toBe('1');
    expect(await tile('Active tenants').textContent()).toContain('1 suspended · 1 closed');
    expect(await figure('Over threshold')).toBe('1');
    expect(await tile('Over threshold').textContent()).toContain('of 3 open budgets');
    expect(await figure('Near threshold')).toBe('1');
    expect(await figure('In debt')).toBe('1');
    expect(await tile('In debt').textContent()).toContain('$0.09');

    const attention = page.getByRole('region', { name: 'Budgets needing attention' });
    const prod = attention.getByRole('row').filter({ hasText: 'tenant:acme/workspace:prod' });
    expect(await prod.textContent()).toContain('Over threshold');
    expect(await prod.textContent()).toContain('in debt');
    const tokens = attention.getByRole('row').filter({ hasText: 'TOKENS' });
    expect(await tokens.textContent()).toContain('Near threshold');

    const feed = page.locator('ol.feed');
    expect(await feed.textContent()).toContain('Reservation expired unsettled: $0.02 held');
    expect(await feed.textContent()).toContain('releaseReservation by admin');
    // Refusals are budget events, sent where the operator routes them: said once, no stale banner.
    expect(await page.getByText('does not record refused reservations').count()).toBe(0);
    expect(await page.getByText(/Refused reservations, thresholds crossed/).count()).toBe(1);
  });

  it('caps one reservation, shows estimate accuracy, and refunds charges and a commit', async () => {
    const lookup = async (scope: string) =>
      (
        await admin(
          'GET',
          `/v1/admin/budgets/lookup?scope=${encodeURIComponent(scope)}&unit=${USD}`,
        )
      ).body;
    const dollars = (scope: string, field: string) =>
      lookup(scope).then((b) => (b[field] as { amount: number }).amount / 100_000_000);
    expect(
      (
        await admin('POST', '/v1/admin/budgets', {
          scope: 'tenant:acme/workspace:dev',
          unit: USD,
          allocated: usd(1),
        })
      ).status,
    ).toBe(201);

    // The cap of one reservation, set from the budget's card.
    await nav('Budgets').click();
    await heading('Budgets').waitFor();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    const dev = budgetCard('tenant:acme/workspace:dev');
    await dev.getByRole('button', { name: /^Limits and caps…/ }).click();
    const edit = page.getByRole('dialog', { name: 'Limits and caps of tenant:acme/workspace:dev' });
    await edit.getByLabel(/^Most one reservation may hold/).fill('0.25');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await expect.poll(() => dev.textContent()).toContain('Most one reservation may hold$0.25');
    const tooBig = await runtime('/v1/reservations', {
      idempotency_key: 'too-big',
      subject: { workspace: 'dev' },
      action: { kind: 'llm.completion', name: 'gpt-4o' },
      estimate: usd(0.3),
    });
    expect(tooBig.status).toBe(409);
    expect(tooBig.body).toMatchObject({
      error: 'BUDGET_EXCEEDED',
      details: {
        reason: 'MAX_RESERVATION_AMOUNT_EXCEEDED',
        scope: 'tenant:acme/workspace:dev',
        max_reservation_amount: 25_000_000,
      },
    });

    // What the prod workspace's estimates were worth, from the stream: two commits ($0.04 and
    // $0.55 of $0.05 each), the forced release and the expiry unspent.
    const prod = budgetCard('tenant:acme/workspace:prod');
    await prod.getByRole('button', { name: /^Estimate accuracy…/ }).click();
    const accuracy = page.getByRole('dialog', {
      name: 'Estimate accuracy of tenant:acme/workspace:prod',
    });
    const kind = accuracy.getByRole('row').filter({ hasText: 'llm.completion' });
    for (let i = 0; i < 50 && !(await kind.textContent().catch(() => ''))?.includes('1 / 1'); i++) {
      // Aggregated seconds behind: open it again until the stream's last records are in.
      await accuracy.getByRole('button', { name: 'Close' }).click();
      await prod.getByRole('button', { name: /^Estimate accuracy…/ }).click();
      await settled();
    }
    expect(await kind.textContent()).toContain('5.90');
    expect(await kind.textContent()).toContain('1 / 1');
    expect(await accuracy.textContent()).toContain('Σ actual ÷ Σ estimate: 5.90');
    expect(await axeViolations(page)).toEqual([]);
    await accuracy.getByRole('button', { name: 'Close' }).click();
    await accuracy.waitFor({ state: 'detached' });

    // A stream charged in two parts, then a refund of part of it from the reservations page.
    const streamed = await reserve('stream-run', {
      subject: { workspace: 'dev' },
      estimate: usd(0.2),
      ttl_ms: 600_000,
    });
    for (const part of [1, 2]) {
      const charged = await runtime(`/v1/reservations/${streamed}/charges`, {
        idempotency_key: `stream-run-part-${part}`,
        amount: usd(0.05),
      });
      expect(charged.status, JSON.stringify(charged.body)).toBe(200);
    }
    await nav('Reservations').click();
    await heading('Reservations').waitFor();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    const running = page.getByRole('row').filter({ hasText: streamed });
    await running.getByRole('button', { name: /^Refund…/ }).click();
    const refund = page.getByRole('dialog', { name: `Refund ${streamed}` });
    await refund.getByText('Charged $0.10 in 2 charge(s), refunded $0.00: $0.10 can be').waitFor();
    expect(await axeViolations(page)).toEqual([]);
    const submit = refund.getByRole('button', { name: 'Refund', exact: true });
    await refund.getByLabel('Amount (USD)').fill('0.04');
    expect(await submit.isDisabled()).toBe(true);
    await refund.getByLabel(/^Reason/).fill('the provider refunded a failed chunk');
    await submit.click();
    await expect
      .poll(() => live().textContent())
      .toBe(`Refunded $0.04 of ${streamed}; $0.06 left to refund.`);
    expect(await dollars('tenant:acme/workspace:dev', 'spent')).toBe(0.06);
    expect(await dollars('tenant:acme/workspace:dev', 'reserved')).toBe(0.1);

    // Sub-agent budgets: two children carved from the stream's hold, one settled; the tree.
    const child = await runtime(`/v1/reservations/${streamed}/delegations`, {
      idempotency_key: 'stream-run-child-1',
      amount: usd(0.03),
    });
    expect(child.status, JSON.stringify(child.body)).toBe(200);
    const childId = String(child.body.reservation_id);
    const grandchild = await runtime(`/v1/reservations/${childId}/delegations`, {
      idempotency_key: 'stream-run-grandchild-1',
      amount: usd(0.01),
    });
    expect(grandchild.status, JSON.stringify(grandchild.body)).toBe(200);
    await running.getByRole('button', { name: /^Delegations…/ }).click();
    const tree = page.getByRole('dialog', { name: `Delegations of ${streamed}` });
    await tree.getByText(childId).waitFor();
    await tree.getByText(String(grandchild.body.reservation_id)).waitFor();
    expect(await tree.textContent()).toContain('holds $0.07 itself; 1 delegation(s):');
    expect(await tree.textContent()).toContain('reserved $0.03 · holds $0.02');
    expect(await axeViolations(page)).toEqual([]);
    await tree.getByRole('button', { name: 'Close' }).click();
    await tree.waitFor({ state: 'detached' });

    // The overdrawn commit: a refund returns the debt it ran up first.
    expect(await dollars('tenant:acme/workspace:prod', 'debt')).toBe(0.09);
    await page.getByLabel('Status').selectOption('COMMITTED');
    const overdrawn = page.getByRole('row').filter({ hasText: ids.overdrawn });
    await overdrawn.getByRole('button', { name: /^Refund…/ }).click();
    const refundCommit = page.getByRole('dialog', { name: `Refund ${ids.overdrawn}` });
    await refundCommit.getByText('Committed $0.55, refunded $0.00: $0.55 can be').waitFor();
    await refundCommit.getByLabel('Amount (USD)').fill('0.05');
    await refundCommit.getByLabel(/^Reason/).fill('mistaken charge');
    await refundCommit.getByRole('button', { name: 'Refund', exact: true }).click();
    await expect
      .poll(() => live().textContent())
      .toBe(`Refunded $0.05 of ${ids.overdrawn}; $0.50 left to refund.`);
    expect(await dollars('tenant:acme/workspace:prod', 'debt')).toBe(0.04);
    expect(await dollars('tenant:acme/workspace:prod', 'spent')).toBe(0.5);
  });

  it('opens at /console/ and /console/index.html as at /console', async () => {
    for (const address of ['/console/', '/console/index.html']) {
      const response = await page.goto(`${stack.adminUrl}${address}#/tenants`);
      expect(response?.status(), address).toBe(200);
      await heading('Tenants').waitFor();
      await page.getByRole('row').filter({ hasText: 'acme' }).first().waitFor();
    }
    // /console/ is sent to the console's own address; index.html stays where it is.
    expect(new URL(page.url()).pathname).toBe('/console/index.html');
    await page.goto(`${stack.adminUrl}/console/#/tenants`);
    expect(new URL(page.url()).pathname).toBe('/console');
    await page.goto(consoleUrl());
    await heading('Overview').waitFor();
  });

  it('works by keyboard: skip link, navigation, a dialog opened, escaped, focus restored', async () => {
    // A fresh document (the session survives in this tab), so focus starts at its top.
    await page.goto('about:blank');
    await page.goto(consoleUrl('#/tenants'));
    await heading('Tenants').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H1');

    const focusedText = () => page.evaluate(() => document.activeElement?.textContent?.trim());
    await page.getByRole('button', { name: 'Skip to content' }).focus();
    for (let i = 0; i < 10 && (await focusedText()) !== 'Budgets'; i++)
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await heading('Budgets').waitFor();

    await page.goto(consoleUrl('#/tenants'));
    const suspend = page.getByRole('button', { name: 'Suspend acme' });
    await suspend.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Suspend tenant acme?' });
    await dialog.waitFor();
    expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await suspend.evaluate((b) => b === document.activeElement)).toBe(true);
    expect((await admin('GET', '/v1/admin/tenants/acme')).body).toMatchObject({ status: 'ACTIVE' });
  });

  it('governance: the service counters, a policy, bulk suspend and fund with progress, an operator credential', async () => {
    // The overview's counters are the service's own (GET /v1/admin/overview).
    await nav('Overview').click();
    await heading('Overview').waitFor();
    const counters = page.getByRole('list', { name: 'Counters' });
    const served = (await admin('GET', '/v1/admin/overview')).body as {
      tenant_counts: { total: number };
    };
    await counters.getByRole('listitem').filter({ hasText: 'Tenants' }).waitFor();
    expect(
      await counters
        .getByRole('listitem')
        .filter({ hasText: 'Tenants' })
        .locator('.tile-figure')
        .textContent(),
    ).toBe(String(served.tenant_counts.total));

    // A policy for acme, created, then disabled.
    await nav('Policies').click();
    await heading('Policies').waitFor();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    await page.getByText('New policy').click();
    await page.getByLabel('Name', { exact: true }).fill('agents');
    await page.getByLabel(/^Cap: at most this many tokens/).fill('4000');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await expect.poll(() => live().textContent()).toBe('Policy agents created.');
    const policy = page.getByRole('row').filter({ hasText: 'agents' });
    expect(await policy.textContent()).toContain('at most 4000 tokens');
    await policy.getByRole('button', { name: 'Disable agents' }).click();
    await policy.getByText('DISABLED').waitFor();
    const policies = (await admin('GET', '/v1/admin/policies?tenant_id=acme')).body as {
      policies: { scope_pattern: string; status: string }[];
    };
    expect(policies.policies).toMatchObject([
      { scope_pattern: 'tenant:acme/*', status: 'DISABLED' },
    ]);

    // Bulk suspend: counted first, then exactly those, with the outcome shown.
    for (const id of ['hooli-1', 'hooli-2']) {
      expect((await admin('POST', '/v1/admin/tenants', { tenant_id: id, name: id })).status).toBe(
        201,
      );
    }
    await nav('Tenants').click();
    await heading('Tenants').waitFor();
    await page.getByText('Suspend or reactivate many').click();
    await page.getByLabel('Whose id or name holds').fill('hooli');
    await page.getByRole('button', { name: 'Count matching tenants' }).click();
    await page.getByRole('button', { name: 'Suspend 2 tenants' }).click();
    await page.getByText('SUSPEND: 2 matched — 2 done, 0 skipped, 0 failed.').waitFor();
    for (const id of ['hooli-1', 'hooli-2']) {
      expect((await admin('GET', `/v1/admin/tenants/${id}`)).body).toMatchObject({
        status: 'SUSPENDED',
      });
    }

    // A tenant's unbudgeted scopes, skipped the reference's way, from its row.
    const hooli = page.getByRole('row').filter({ hasText: 'hooli-1' });
    await hooli.getByRole('button', { name: 'Skip unbudgeted scopes of hooli-1' }).click();
    await hooli.getByRole('button', { name: 'Refuse unbudgeted scopes of hooli-1' }).waitFor();
    expect((await admin('GET', '/v1/admin/tenants/hooli-1')).body).toMatchObject({
      unbudgeted_scopes: 'SKIP',
    });

    // Its request-rate limits, from its row's dialog (empty fields: no limit).
    await hooli.getByRole('button', { name: 'Limits… of hooli-1' }).click();
    const limits = page.getByRole('dialog', { name: 'Rate limits of tenant hooli-1' });
    await limits.getByLabel(/^Requests a minute/).fill('600');
    await limits.getByLabel(/^Reservations a minute/).fill('120');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.waitFor({ state: 'detached' });
    await hooli.getByText('requests a minute: 600, reservations a minute: 120').waitFor();
    expect((await admin('GET', '/v1/admin/tenants/hooli-1')).body).toMatchObject({
      rate_limits: { max_requests_per_minute: 600, max_reservations_per_minute: 120 },
    });

    // Bulk fund: every active USD budget of acme credited $1.
    const before = (
      await admin('GET', '/v1/admin/budgets?tenant_id=acme&unit=USD_MICROCENTS&status=ACTIVE')
    ).body as { ledgers: { allocated: { amount: number } }[] };
    await nav('Budgets').click();
    await page.getByLabel('Tenant', { exact: true }).selectOption('acme');
    await page.getByText('Fund many').click();
    await page.getByLabel('Amount for each (USD)').fill('1');
    await page.getByRole('button', { name: 'Count matching budgets' }).click();
    const n = before.ledgers.length;
    await page.getByRole('button', { name: `Credit ${n} budgets` }).click();
    await page.getByText(`CREDIT: ${n} matched — ${n} done, 0 skipped, 0 failed.`).waitFor();
    const after = (
      await admin('GET', '/v1/admin/budgets?tenant_id=acme&unit=USD_MICROCENTS&status=ACTIVE')
    ).body as { ledgers: { allocated: { amount: number } }[] };
    const total = (b: typeof before) => b.ledgers.reduce((sum, l) => sum + l.allocated.amount, 0);
    expect(total(after) - total(before)).toBe(n * 100_000_000);

    // An operator's own credential, read-only, whose secret signs the console in.
    await nav('API keys').click();
    await heading('API keys').waitFor();
    if ((await page.locator('details.panel').getAttribute('open')) === null) {
      await page.getByText('New API key').click();
    }
    await page.getByLabel(/An operator's credential/).check();
    await page.getByLabel('Name', { exact: true }).fill('alice');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Key alice created' });
    const secret = await dialog.getByLabel(/^Secret of key_/).inputValue();
    await dialog.getByRole('button', { name: 'I have stored it' }).click();
    const alice = await context.newPage();
    await alice.goto(consoleUrl('#/tenants'));
    const keyField = alice.getByLabel('Admin API key');
    await keyField.fill(secret);
    await keyField.press('Enter');
    await alice.getByRole('row').filter({ hasText: 'hooli-1' }).waitFor();
    await alice.close();
    const keys = (await admin('GET', '/v1/admin/api-keys?tenant_id=__system__')).body as {
      keys: { name: string; permissions: string[] }[];
    };
    expect(keys.keys).toMatchObject([{ name: 'alice', permissions: ['admin:read'] }]);
  });

  it('every page: no accessibility violations and nothing wider than the screen, at 1280 px and 390 px', async () => {
    const views: [name: string, hash: string, ready: () => Locator][] = [
      [
        'overview',
        '#/overview',
        () => page.getByRole('heading', { name: 'Budgets needing attention' }),
      ],
      ['tenants', '#/tenants', () => page.getByRole('row').filter({ hasText: 'globex' })],
      ['budgets', '#/budgets?tenant=acme', () => budgetCard('tenant:acme/workspace:prod')],
      [
        'policies',
        '#/policies?tenant=acme',
        () => page.getByRole('row').filter({ hasText: 'agents' }),
      ],
      [
        'reservations',
        '#/reservations?tenant=acme&status=ANY',
        () => page.getByRole('row').filter({ hasText: ids.stuck }),
      ],
      ['keys', '#/keys?tenant=acme', () => page.getByRole('row').filter({ hasText: 'laptop' })],
      [
        'events',
        '#/events?tenant_id=acme',
        () => page.getByRole('rowheader', { name: 'budget.funded' }).first(),
      ],
      [
        'webhooks',
        '#/webhooks?tenant=acme',
        () => page.getByRole('row').filter({ hasText: 'finance alerts' }),
      ],
      [
        'audit',
        '#/audit?tenant_id=acme',
        () => page.getByRole('rowheader', { name: 'fundBudget' }).first(),
      ],
    ];
    const problems: string[] = [];
    for (const [viewport, suffix] of [
      [DESKTOP, ''],
      [PHONE, '-phone'],
    ] as const) {
      await page.setViewportSize(viewport);
      for (const [name, hash, ready] of views) {
        await page.goto(consoleUrl(hash));
        await ready().waitFor();
        await settled();
        for (const v of await axeViolations(page)) problems.push(`${name}${suffix}: ${v}`);
        const overflow = await page.evaluate(
          () => document.documentElement.scrollWidth - window.innerWidth,
        );
        if (overflow > 0) problems.push(`${name}${suffix}: ${overflow} px wider than the screen`);
        await page.screenshot({
          path: join(screenshots, `${name}${suffix}.png`),
          fullPage: suffix === '',
        });
      }
    }
    await page.setViewportSize(DESKTOP);

    expect(problems).toEqual([]);
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('signs out after 15 minutes without activity', async () => {
    if (!browser) throw new Error('no browser');
    const idle = await browser.newContext({ viewport: DESKTOP });
    try {
      const p = await idle.newPage();
      await p.clock.install();
      await p.goto(consoleUrl());
      await p.getByLabel('Admin API key').fill(ADMIN_KEY);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();

      await p.clock.fastForward('14:00');
      expect(await p.getByRole('heading', { name: 'Overview', level: 1 }).count()).toBe(1);
      await p.clock.fastForward('01:10');

      await p.getByText('Signed out after 15 minutes without activity').waitFor();
      expect(await p.evaluate(() => Object.keys(sessionStorage))).toEqual([]);
    } finally {
      await idle.close();
    }
  });
});
