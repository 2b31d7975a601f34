// Jest runs the TypeScript sources as native ES modules: swc strips types (TypeScript 7's
// native compiler has no JS API for ts-jest), `tsc --noEmit` type-checks separately.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2024' }, module: { type: 'es6' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testTimeout: 30000,
  // Three suites at a time on two cores: most of a suite's time is waiting (processes starting,
  // quiet periods, retries), and every suite has Redis databases and MongoDB databases of its own.
  // Measured on this 2-core machine: 2 workers 543 s with the cores 66% busy, 3 workers 401 s at 81%.
  maxWorkers: 3,
  // One redis-server and one MongoDB-wire server for the whole run (TEST_REDIS_URL, TEST_MONGODB_URI).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Unexpected console output fails the test that wrote it.
  setupFilesAfterEnv: ['<rootDir>/test/support/console-guard.ts'],
};
