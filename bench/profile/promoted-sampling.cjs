// Preloaded (`--require`) into a server: on the first SIGUSR2 it starts V8's sampling heap profiler counting the
// objects that outlived a minor GC (promoted to the old space) and died later in a major one, and on the second
// writes what it saw to promoted-<pid>.heapprofile in the working directory. What a request leaves behind for the
// old space is what makes its major GCs frequent (bench/PROFILE.md).
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');

const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: false,
    });
    return;
  }
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err === null) writeFileSync(`promoted-${process.pid}.heapprofile`, JSON.stringify(result.profile));
  });
});
