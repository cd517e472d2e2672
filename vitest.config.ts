import { defineConfig } from 'vitest/config';

// Node 20 is supported by the pinned SDK; its notice about future versions is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

// Three projects: `unit` (pure code, no network, seconds), `infra` (CDK template tests: one
// in-process synth, CPU-heavy) and `integration` (real sockets against DynamoDB Local, started
// once for the whole run by the global setup). `vitest run` runs all three.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'infra',
          sequence: { groupOrder: 2 },
          include: ['test/infra/**/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          // After the unit project; two files at a time share the one DynamoDB Local.
          sequence: { groupOrder: 1 },
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
          maxWorkers: 2,
        },
      },
    ],
  },
});
