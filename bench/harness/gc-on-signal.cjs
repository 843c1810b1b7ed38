// Preloaded into the servers of the memory figures (`node --expose-gc --require`): on SIGUSR2, run a full
// garbage collection and write `process.memoryUsage()` after it to stderr as one marked line, so that
// memory is read without garbage that V8 has not yet collected. `codeBytes` is the part of `heapUsed` that is
// compiled code (V8's code spaces), which grows as V8 compiles more of the server, whatever the server holds. With
// BENCH_HEAP_SNAPSHOT_DIR set and a file SNAPSHOT_REQUEST in it, a heap snapshot is then written there too (after
// the reading), named in `snapshot`, and the request removed (`collectGarbage(server, { snapshot: true })`).
const { existsSync, rmSync } = require('node:fs');
const { join } = require('node:path');
const { getHeapSpaceStatistics, writeHeapSnapshot } = require('node:v8');

const SNAPSHOT_REQUEST = 'snapshot-requested';
let snapshots = 0;

process.on('SIGUSR2', () => {
  global.gc();
  const codeBytes = getHeapSpaceStatistics()
    .filter((space) => space.space_name.startsWith('code_'))
    .reduce((sum, space) => sum + space.space_used_size, 0);
  const report = { ...process.memoryUsage(), codeBytes };
  const dir = process.env.BENCH_HEAP_SNAPSHOT_DIR;
  if (dir && existsSync(join(dir, SNAPSHOT_REQUEST))) {
    rmSync(join(dir, SNAPSHOT_REQUEST));
    report.snapshot = writeHeapSnapshot(join(dir, `bench-${process.pid}-${++snapshots}.heapsnapshot`));
  }
  process.stderr.write(`bench-gc-done ${JSON.stringify(report)}\n`);
});
