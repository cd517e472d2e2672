import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonSchemaFiles } from '../functions/outbound/schemas.js';

/**
 * `npm run event-schemas`: the JSON Schema of every budget event, generated from the zod schemas
 * in functions/outbound/schemas.ts, into docs/events/. Deterministic, so
 * test/unit/budget-event-schemas.test.ts can tell when the files are stale.
 */
export const eventSchemasDir = fileURLToPath(new URL('../docs/events/', import.meta.url));

export function generateEventSchemas(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(jsonSchemaFiles()).map(([name, schema]) => [
      name,
      `${JSON.stringify(schema, null, 2)}\n`,
    ]),
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await mkdir(eventSchemasDir, { recursive: true });
  for (const name of await readdir(eventSchemasDir)) {
    if (name.endsWith('.schema.json')) await rm(join(eventSchemasDir, name));
  }
  const files = generateEventSchemas();
  for (const [name, text] of Object.entries(files)) {
    await writeFile(join(eventSchemasDir, name), text);
  }
  console.log(`wrote ${Object.keys(files).length} schemas to docs/events/`);
}
