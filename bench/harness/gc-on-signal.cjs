// Preloaded into the servers of figure 3 only (`node --expose-gc --require`): on SIGUSR2, run a full
// garbage collection and write `process.memoryUsage()` after it to stderr as one marked line, so that
// memory is read without garbage that V8 has not yet collected.
process.on('SIGUSR2', () => {
  global.gc();
  process.stderr.write(`bench-gc-done ${JSON.stringify(process.memoryUsage())}\n`);
});
