import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { clientTypesFile, clientTypesText } from '../../infra/client-types.js';

// Issue 30 § 1 and 4: the typed client's types are generated from the committed OpenAPI
// documents (which test/unit/openapi.test.ts keeps fresh against the zod schemas); a change of a
// document without `npm run openapi` fails here, so the CLI and the console never compile
// against an API the servers no longer speak.

describe.each(['runtime', 'admin'] as const)('client/generated/%s.ts', (server) => {
  it('is what openapi-typescript makes of the committed document (`npm run openapi` refreshes it)', async () => {
    const committed = await readFile(clientTypesFile(server), 'utf8');

    const generated = await clientTypesText(server);

    expect(committed).toBe(generated);
  });
});
