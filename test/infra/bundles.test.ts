import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Bundle,
  bundle,
  functionEntries,
  kb,
  targetBytes,
  weightByPackage,
} from '../../infra/bundles.js';

/** The packages (and our own folders) a function's bundle carries. */
const contents = (b: Bundle) => weightByPackage(b.metafile).map(([pkg]) => pkg);
/** The source files a function's bundle carries. */
const files = (b: Bundle) =>
  Object.values(b.metafile.outputs).flatMap((o) => Object.keys(o.inputs));

describe('function bundles (as the stacks build them)', () => {
  let bundles: Bundle[];
  beforeAll(async () => {
    bundles = await Promise.all(functionEntries().map((f) => bundle(f, false)));
  });

  it('carry no X-Ray SDK: tracing is Lambda’s own (docs/decisions.md § Cloud room)', () => {
    for (const b of bundles) {
      expect(contents(b), b.name).not.toContain('aws-xray-sdk-core');
      expect(contents(b), b.name).not.toContain('semver');
      expect(contents(b), b.name).not.toContain('@aws-lambda-powertools/tracer');
      expect(contents(b), b.name).not.toContain('@aws-lambda-powertools/metrics');
      expect(contents(b), b.name).not.toContain('@aws-lambda-powertools/logger');
    }
  });

  it('leave the AWS SDK to the runtime', () => {
    for (const b of bundles) {
      expect(
        contents(b).filter((pkg) => pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/')),
        b.name,
      ).toEqual([]);
    }
  });

  it('bring zod only with request schemas: health checks and not-found answers carry none', () => {
    const plain = bundles.filter((b) => /\/(health|not-found)$/.test(b.entry));

    expect(plain.map((b) => b.name).sort()).toEqual([
      'adminHealth',
      'adminNotFound',
      'runtimeHealth',
      'runtimeNotFound',
    ]);
    for (const b of plain) expect(contents(b), b.name).not.toContain('zod');
  });

  it('parse requests with zod/mini: no bundle carries zod’s classic API (docs/architecture.md)', () => {
    const classic = bundles.filter((b) =>
      files(b).some((f) => f.includes('node_modules/zod/v4/classic/')),
    );

    expect(classic.map((b) => b.name)).toEqual([]);
  });

  it('carry their own route’s facts, not the route table (functions/http/route-facts.ts)', () => {
    // Not-found answers may read the table (a 405 names the methods a known path has).
    const routed = bundles.filter((b) => b.route && !/\/not-found$/.test(b.entry));
    const withTable = routed.filter((b) => files(b).includes('functions/routes.ts'));

    expect(routed.length).toBeGreaterThan(20);
    expect(withTable.map((b) => b.name)).toEqual([]);
  });

  it('stay within their size targets (docs/deploy.md § Bundling)', () => {
    const over = bundles.flatMap((b) => {
      const target = targetBytes(b);
      return target !== undefined && b.bytes > target
        ? [`${b.name} ${kb(b.bytes)} > ${kb(target)}`]
        : [];
    });

    expect(over).toEqual([]);
    expect(bundles.filter((b) => targetBytes(b) !== undefined).length).toBeGreaterThan(20);
  });
});
