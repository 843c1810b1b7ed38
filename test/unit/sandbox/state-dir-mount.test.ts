/**
 * E2B_STATE_DIR on FC: which mount it lies under (from /proc/self/mountinfo), and the start-up report of one that is
 * on the instance's own disk.
 */
import { mountOf, stateDirProblem } from '../../../functions/mcp/sandbox/state-dir-mount';

/** mountinfo lines as proc(5) writes them: id, parent, dev, root, mount point, options, tags, -, type, source. */
const MOUNTINFO = [
  '21 1 0:20 / / rw,relatime - overlay overlay rw,lowerdir=/a',
  '22 21 0:21 / /proc rw,nosuid - proc proc rw',
  '40 21 0:40 / /mnt/state rw,relatime shared:9 - nfs4 0a1b.cn-hangzhou.nas.aliyuncs.com:/sandbox-mcp rw',
  '41 21 0:41 / /mnt/with\\040space rw - nfs x:/y rw',
].join('\n');

it('finds the longest mount point a directory lies under, and its type', () => {
  expect(mountOf('/mnt/state/e2b', MOUNTINFO)).toEqual({ mountPoint: '/mnt/state', fsType: 'nfs4' });
  expect(mountOf('/mnt/state', MOUNTINFO)).toEqual({ mountPoint: '/mnt/state', fsType: 'nfs4' });
  expect(mountOf('/mnt/stateful', MOUNTINFO)).toEqual({ mountPoint: '/', fsType: 'overlay' });
  expect(mountOf('/mnt/with space/x', MOUNTINFO)).toEqual({ mountPoint: '/mnt/with space', fsType: 'nfs' });
  expect(mountOf('/x', '')).toBeUndefined();
});

it('reports a state directory on the root file system, and nothing for one under a mount', () => {
  expect(stateDirProblem('/mnt/state/e2b', MOUNTINFO)).toBeUndefined();
  expect(stateDirProblem('/tmp/state', MOUNTINFO)).toMatch(
    /^E2B_STATE_DIR=\/tmp\/state is on the instance's own disk \(overlay at \/\), which no other instance sees/,
  );
});
