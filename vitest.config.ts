import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure code, no network) and `integration` (real sockets against
// DynamoDB Local, started once for the whole run by the global setup).
export default defineConfig({
  test: {
    // Node 20 is supported by the pinned SDK; its notice about future versions is noise here.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
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
