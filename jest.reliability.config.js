/**
 * Jest for `npm run test:reliability`: what is slow by nature, through the built bundle: load (200 sessions
 * × 50 calls), faults in real time, the large fuzz, and the few checks that must watch a real clock (a
 * timeout really kills, keep-alives really flow). Bounds there are generous: they catch a hang, not a slowdown.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/reliability'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 300_000,
  // Two, one a core: load and the floods are CPU-bound, unlike most of npm test.
  maxWorkers: 2,
};
