/**
 * Jest for `npm run test:reliability`: what is slow by nature, through the built bundle: load (200 sessions
 * × 50 calls), faults in real time, the large fuzz, and the few checks that must watch a real clock (a
 * timeout really kills, keep-alives really flow). Bounds there are generous: they catch a hang, not a slowdown.
 * Also the E2B wire suites that run the server on a Node (test/support/e2b-wire.ts NODES) once more, on the Node FC
 * runs the function on: npm test runs them on the current Node.
 */
const base = require('./jest.config');

/** The wire suites that do not depend on the server's Node (the service's own, or pinned to the current Node). */
const NOT_PER_NODE = [
  'egress-model',
  'egress',
  'file-urls-service',
  'file-urls',
  'held-output',
  'interpreter',
  'local-service',
];

module.exports = {
  ...base,
  roots: ['<rootDir>/test/reliability', '<rootDir>/test/e2b'],
  testPathIgnorePatterns: ['/node_modules/', ...NOT_PER_NODE.map((name) => `/test/e2b/${name}\\.test\\.ts$`)],
  // e2b-wire.ts reads it: the server runs on FC's Node (22.23.2, from the deploy tools).
  setupFiles: ['<rootDir>/test/support/wire-on-fc-node.js'],
  testTimeout: 300_000,
  // Two, one a core: load and the floods are CPU-bound, unlike most of npm test.
  maxWorkers: 2,
};
