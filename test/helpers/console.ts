import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A folder of this test file's own for the operator console's build (infra/build-console.ts),
 * known before the stack starts: the stack reads CONSOLE_DIR once, and test files build at the
 * same time, so none shares console/dist.
 */
export const consoleTestDir = (): string => mkdtempSync(join(tmpdir(), 'console-'));
