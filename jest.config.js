/**
 * Jest for `npm test`: the fast, deterministic suite (unit, the core in-process, the bundle over HTTP, deploy).
 * TypeScript through SWC; e2e suites start the built bundle (npm test builds it first). What is slow by nature
 * (load, real-time faults, the large fuzz) is jest.reliability.config.js (`npm run test:reliability`).
 */
const swc = [
  '@swc/jest',
  { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
];
// ESM-only packages that CommonJS code under test requires: the E2B SDK's chalk, and jose (the bundle gets them through
// esbuild); the AI SDK's MCP client and what it imports (test/interop/ai-sdk.test.ts).
const ESM_ONLY = ['chalk', 'jose', '@ai-sdk', '@workflow/serde'];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Two E2B wire suites run in test:reliability only (on FC's Node), to keep npm test under 3 minutes: tasks.test.ts
  // (its story is test/e2e/tasks-raw.test.ts's on the local backend, with half a minute of commands) and sleeping.test.ts
  // (half a minute of pauses and resumes across a restart; the rules of sleep are test/core/sleeping-e2b-wire.test.ts's,
  // with the same SDKs and service).
  testPathIgnorePatterns: [
    '/node_modules/',
    '<rootDir>/test/reliability/',
    '<rootDir>/test/e2b/(tasks|sleeping)\\.test\\.ts$',
  ],
  transform: {
    '^.+\\.ts$': swc,
    // The local sandbox's Python programs are imported as their text (build.mjs: esbuild's `text` loader).
    '^.+\\.py$': '<rootDir>/test/support/text-transform.js',
    [`/node_modules/(.+/)?(${ESM_ONLY.join('|')})/.+\\.js$`]: [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(.+/)?(${ESM_ONLY.join('|')})/)`],
  // The AI SDK imports zod's English locale by its ESM file name (zod maps `v4/locales/*` to the same file for
  // require); its CommonJS twin keeps it on the one zod every other module loads.
  moduleNameMapper: { '^zod/v4/locales/en\\.js$': '<rootDir>/node_modules/zod/v4/locales/en.cjs' },
  testTimeout: 60_000,
  // Four workers on two cores: most suites wait on child processes (the bundle, sandboxes, kernels) more than
  // they compute. On this project's 2-core machine (2026-12-06) the suite took 182 s with three workers and 157 s
  // with four, and passed with four beside two CPU-bound processes (228 s).
  maxWorkers: 4,
  // The last line names what was skipped for want of something on this machine (test/support/needs.ts).
  reporters: ['default', '<rootDir>/test/support/skip-reporter.js'],
};
