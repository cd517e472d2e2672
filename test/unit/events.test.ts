import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { routeEntries } from '../../functions/routes.js';
import { eventsDir, generateEvents } from '../../infra/generate-events.js';

describe('events/ fixtures', () => {
  it('hold exactly what `npm run events` generates (run it after changing routes.ts)', async () => {
    const expected = generateEvents();

    const names = (await readdir(eventsDir)).filter((name) => name.endsWith('.json')).sort();
    const files = await Promise.all(names.map((name) => readFile(join(eventsDir, name), 'utf8')));

    expect(names).toEqual(Object.keys(expected).sort());
    names.forEach((name, i) => {
      expect(files[i], `events/${name}`).toBe(expected[name]);
    });
  });

  it('give every route one event carrying its route key and path parameters', () => {
    const files = generateEvents();

    for (const [id, route] of routeEntries()) {
      const event = JSON.parse(files[`${id}.json`] ?? '{}');
      const params = [...route.path.matchAll(/\{([a-z_]+)\+?\}/g)].map((m) => m[1]);
      expect(event.routeKey, id).toBe(
        route.path === '$default' ? '$default' : `${route.method} ${route.path}`,
      );
      expect(Object.keys(event.pathParameters ?? {}), id).toEqual(params);
      expect(event.requestContext.http.path, id).toBe(event.rawPath);
    }
    expect(JSON.parse(files['sweeper.json'] ?? '{}')['detail-type']).toBe('Scheduled Event');
  });
});
