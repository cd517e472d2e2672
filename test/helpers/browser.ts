import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';

/**
 * Headless Chromium for the console's browser tests: Debian's `chromium` package driven by
 * playwright-core (`npx playwright install` downloads nothing here). `.ci/run` installs the
 * package when it is absent; without it these tests fail with the message below, never skip.
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
];

const INSTALL =
  "install Debian's package (apt-get install -y chromium; .ci/run does it when it is absent) or set CHROMIUM_PATH to a Chromium binary";

export function chromiumPath(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!existsSync(given)) {
      throw new Error(
        `CHROMIUM_PATH=${given} does not exist, so the console browser tests cannot run: ${INSTALL}.`,
      );
    }
    return given;
  }
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      `Chromium is not installed, so the console browser tests cannot run: ${INSTALL}.`,
    );
  }
}

/** Chromium, or one error saying which binary failed to start and why (not a timeout per test). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  try {
    return await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, timeout: 60_000 });
  } catch (error) {
    const first = String((error as Error).message).split('\n')[0];
    throw new Error(
      `Chromium at ${executablePath} did not start, so the console browser tests cannot run (${first}): ${INSTALL}.`,
      { cause: error },
    );
  }
}

/**
 * Violations of the console's Content-Security-Policy in any document the page loads, reported
 * from its `securitypolicyviolation` events by a listener installed before the page's scripts.
 */
export async function watchCsp(page: Page): Promise<readonly string[]> {
  const seen: string[] = [];
  await page.exposeFunction('__reportCspViolation', (text: string) => seen.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { __reportCspViolation: (t: string) => void }).__reportCspViolation(
        `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`,
      );
    });
  });
  return seen;
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly string[] }[];
}

/**
 * axe-core's WCAG 2.x A and AA rules (labels, names, contrast, landmarks, ARIA) over the page as
 * it is now. Evaluated through the DevTools protocol, which the page's CSP does not govern.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (ctx: Document, options: unknown) => Promise<{ violations: AxeViolation[] }> };
      }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] },
      resultTypes: ['violations'],
    });
    return result.violations;
  });
  return violations.map(
    (v) =>
      `${v.id} (${v.impact ?? 'n/a'}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
}
