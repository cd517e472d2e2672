import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundle, functionEntries, kb } from '../../infra/bundles.js';
import { deployDoc, generatedSections, sectionOf } from '../../infra/docs.js';
import { type Synthesized, synth } from '../helpers/synth.js';

const doc = readFileSync(deployDoc, 'utf8');

describe('docs/deploy.md', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });

  it('holds the stacks, outputs and IAM tables as `npm run docs` writes them from the templates', async () => {
    const sections = await generatedSections();

    for (const [name, content] of Object.entries(sections)) {
      expect(sectionOf(doc, name), `section ${name}: run npm run docs`).toBe(content);
    }
  });

  it('lists every bundle at the size `npm run build` makes it (run `npm run build -- --docs`)', async () => {
    const table = sectionOf(doc, 'bundles') ?? '';
    const documented = new Map(
      [...table.matchAll(/^\| (\w+) \| ([\d.]+ kB) \|/gm)].map((m) => [m[1], m[2]]),
    );
    const bundles = await Promise.all(functionEntries().map((f) => bundle(f, false)));

    expect([...documented.keys()].sort()).toEqual(bundles.map((b) => b.name).sort());
    for (const b of bundles) {
      // Within 0.5 kB: a dependency's patch release may move a bundle by a few bytes.
      const size = Number.parseFloat(documented.get(b.name) ?? 'NaN');
      expect(
        Math.abs(size - b.bytes / 1000),
        `${b.name}: ${documented.get(b.name)} vs ${kb(b.bytes)}`,
      ).toBeLessThanOrEqual(0.5);
    }
  });

  it('names only stacks and outputs the templates have, in its commands', () => {
    const stackNames = new Set(s.all.map((stack) => stack.stackName));
    const outputs = new Map(
      s.all.map((stack) => [
        stack.stackName,
        Object.keys(s.template(stack).toJSON().Outputs ?? {}),
      ]),
    );
    const used = [...doc.matchAll(/\bout (BudgetReservations\w+) (\w+)\)/g)];
    const destroyed = [...doc.matchAll(/cdk destroy ((?:BudgetReservations\w+ ?)+)/g)].flatMap(
      (m) => (m[1] ?? '').trim().split(' '),
    );

    expect(used.length).toBeGreaterThan(3);
    for (const [, stack = '', output = ''] of used) {
      expect(outputs.get(stack), `${stack} ${output}`).toContain(output);
    }
    // Tear down names every stack but the data stack, which has its own steps.
    expect(new Set([...destroyed, 'BudgetReservationsData'])).toEqual(stackNames);
    for (const name of stackNames) expect(doc).toContain(`\`${name}\``);
  });
});
