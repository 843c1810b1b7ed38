/**
 * A jest reporter that ends the run with one plain line naming what was skipped for want of something the
 * machine lacks, and how to get it (the tags needs.ts puts in skipped tests' names; requirements.js). Nothing
 * is printed when nothing was skipped so.
 */
const { REQUIREMENTS, SKIP_TAG } = require('./requirements');

class SkipReporter {
  onRunComplete(_contexts, results) {
    const counts = new Map();
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if (test.status !== 'pending') continue;
        const needed = SKIP_TAG.exec(test.fullName)?.[1];
        if (needed !== undefined) counts.set(needed, (counts.get(needed) ?? 0) + 1);
      }
    }
    if (counts.size === 0) return;
    const parts = [...counts].map(([needed, count]) => {
      const installs = [
        ...new Set(
          needed
            .split(' and ')
            .map((name) => REQUIREMENTS[name]?.install)
            .filter(Boolean),
        ),
      ];
      return `${count} ${count === 1 ? 'needs' : 'need'} ${needed} (${installs.join('; ')})`;
    });
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    // Jest prints its summary after the reporters' onRunComplete: this line goes last, as the process ends.
    process.once('exit', () =>
      process.stderr.write(
        `Skipped ${total} ${total === 1 ? 'test' : 'tests'} this machine cannot run: ${parts.join(', ')}.\n`,
      ),
    );
  }
}

module.exports = SkipReporter;
