import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUDGET_EVENT_TYPES } from '../../functions/domain/budget-events.js';
import { eventSchemasDir, generateEventSchemas } from '../../infra/generate-event-schemas.js';

describe('docs/events/ JSON Schemas', () => {
  it('hold exactly what `npm run event-schemas` generates from the zod schemas', async () => {
    const expected = generateEventSchemas();

    const names = (await readdir(eventSchemasDir)).filter((n) => n.endsWith('.schema.json')).sort();
    const files = await Promise.all(names.map((n) => readFile(join(eventSchemasDir, n), 'utf8')));

    expect(names).toEqual(Object.keys(expected).sort());
    names.forEach((name, i) => {
      expect(files[i], `docs/events/${name}`).toBe(expected[name]);
    });
  });

  it('publish one closed envelope per event type, with its type fixed', () => {
    const files = generateEventSchemas();

    for (const type of BUDGET_EVENT_TYPES) {
      const schema = JSON.parse(files[`${type}.schema.json`] ?? '{}');
      expect(schema.additionalProperties, type).toBe(false);
      expect(schema.properties.event_type.const, type).toBe(type);
      expect(schema.required, type).toEqual(
        expect.arrayContaining(['event_id', 'event_type', 'category', 'timestamp', 'tenant_id']),
      );
    }
  });
});
