/**
 * Jest for `npm run test:live`: the E2B wire suites (test/e2b/) against real E2B instead of the local service
 * (E2B's cloud, or Alibaba Cloud's with E2B_DOMAIN), plus test/live/. Needs E2B_API_KEY; without it only
 * test/live/ runs, and says it was skipped. See test/support/e2b-wire.ts for what runs where.
 */
const base = require('./jest.config.js');

// The wire suites read this (test/support/e2b-wire.ts); jest's workers inherit the environment.
process.env.E2B_WIRE_TARGET = 'live';
const hasKey = Boolean(process.env.E2B_API_KEY?.trim());
if (!hasKey) console.warn('E2B live suites skipped: E2B_API_KEY is not set');

// The service's own tests (local-service, interpreter) and the scripted faults (control-plane) need the local service.
const WIRE_SUITES = ['commands', 'files', 'run-code', 'background', 'lifecycle', 'alibaba'];

module.exports = {
  ...base,
  testMatch: [
    '<rootDir>/test/live/**/*.test.ts',
    ...(hasKey ? WIRE_SUITES.map((name) => `<rootDir>/test/e2b/${name}.test.ts`) : []),
  ],
  testTimeout: 300_000,
  maxWorkers: 1,
};
