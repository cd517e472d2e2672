import { defineConfig } from 'vitest/config';

// Node 20 is supported by the pinned SDK; its notice about future versions is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

// DynamoDB Local's JVM (the shared one and those the process tests start): a test run lives for
// two minutes, so the client compiler alone (C1) and the serial collector beat the default
// tiered C2 warm-up on 2 cores: `npm test` 146 → 123 s, Java CPU 150 → 107 s. `npm start` and
// `npm run bench` keep the JVM defaults, which sustain 30–60 % more transactions once warm
// (docs/decisions.md, "DynamoDB Local's JVM in tests"). An explicit JAVA_TOOL_OPTIONS wins.
process.env.JAVA_TOOL_OPTIONS ??= '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

// Three projects: `unit` (pure code, no network, seconds), `infra` (CDK template tests: one
// in-process synth, CPU-heavy) and `integration` (real sockets against DynamoDB Local, which the
// global setup starts once for the run; the console's browser tests too, on that same DynamoDB
// Local rather than a second JVM). `vitest run` runs all three.
//
// One group of two workers for all of them (2 cores): integration is the long pole and keeps
// both workers busy, and the short unit and infra files (scheduled last, shortest first) fill
// the gaps at the end. Ordering the projects one after another (unit, then integration, then
// infra) leaves a core idle during each single-worker phase. At most two integration files
// share the one DynamoDB Local at a time.
const group = { sequence: { groupOrder: 0 }, maxWorkers: 2, environment: 'node' } as const;

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], ...group } },
      {
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          ...group,
        },
      },
      {
        test: {
          name: 'integration',
          // test/browser: the console in headless Chromium against the same stack (issue 16).
          include: ['test/integration/**/*.test.ts', 'test/browser/**/*.test.ts'],
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
          ...group,
        },
      },
    ],
  },
});
