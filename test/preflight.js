/**
 * Runs before `npm test` and `npm run test:reliability` build anything: says what this machine lacks for the
 * suites (test/support/requirements.js). Locally the tests that need it are skipped, and the run's last line
 * says so again; with CI=true a skip would go unseen, so anything missing fails the run here, in seconds.
 * python3 is needed everywhere: the local backend's every sandbox runs a Python supervisor.
 */
const { REQUIREMENTS, missing } = require('./support/requirements');

const absent = Object.keys(REQUIREMENTS)
  .map((name) => ({ name, why: missing(name), install: REQUIREMENTS[name].install }))
  .filter((found) => found.why !== undefined);
const line = (found) => `  ${found.name}: ${found.why}; to get it: ${found.install}`;
const fatal = process.env.CI === 'true' ? absent : absent.filter((found) => found.name === 'python3');

if (fatal.length > 0) {
  const why =
    process.env.CI === 'true'
      ? 'CI=true, so nothing may be skipped'
      : 'the local sandbox backend runs Python in every sandbox';
  process.stderr.write(`The tests cannot run on this machine (${why}):\n${fatal.map(line).join('\n')}\n`);
  process.exit(1);
}
if (absent.length > 0) {
  process.stderr.write(`Tests that need what this machine lacks will be skipped:\n${absent.map(line).join('\n')}\n`);
}
