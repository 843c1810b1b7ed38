/** The host's mount table and loop devices as the workspace disks read them (sandbox/local/host-mounts.ts). */
import {
  mountsAt,
  parseMountinfo,
  toLoopDevice,
  unescapeMountField,
} from '../../../../functions/mcp/sandbox/local/host-mounts';

const MOUNTINFO = [
  '27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard',
  '30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k',
  // No optional fields, and a mount point with a space, a tab and a backslash in it.
  '101 27 7:3 / /srv/sandbox\\040root/mcp-sandbox-ab\\011c\\134d rw,nosuid,nodev,relatime - ext4 /dev/loop3 rw',
  // Two optional fields.
  '102 27 7:4 / /srv/root/mcp-sandbox-x rw,nosuid shared:7 master:2 - ext4 /dev/loop4 rw,discard',
  '103 27 7:5 / /srv/root/mcp-sandbox-x rw,nosuid - ext4 /dev/loop5 rw',
  'garbage',
  '',
].join('\n');

describe('mountinfo', () => {
  it(
    'reads mount points, types and sources, ' + 'with the kernel’s octal escapes undone and optional fields skipped',
    () => {
      const mounts = parseMountinfo(MOUNTINFO);
      expect(mounts).toEqual([
        { mountPoint: '/', fsType: 'ext4', source: '/dev/vda' },
        { mountPoint: '/dev/shm', fsType: 'tmpfs', source: 'tmpfs' },
        { mountPoint: '/srv/sandbox root/mcp-sandbox-ab\tc\\d', fsType: 'ext4', source: '/dev/loop3' },
        { mountPoint: '/srv/root/mcp-sandbox-x', fsType: 'ext4', source: '/dev/loop4' },
        { mountPoint: '/srv/root/mcp-sandbox-x', fsType: 'ext4', source: '/dev/loop5' },
      ]);
      expect(unescapeMountField('a\\012b')).toBe('a\nb');
    },
  );

  it('counts the mounts at a path exactly (stacked ones each), not at its prefixes or its children', () => {
    const mounts = parseMountinfo(MOUNTINFO);
    expect(mountsAt(mounts, '/srv/root/mcp-sandbox-x')).toBe(2);
    expect(mountsAt(mounts, '/srv/sandbox root/mcp-sandbox-ab\tc\\d')).toBe(1);
    expect(mountsAt(mounts, '/srv/root')).toBe(0);
    expect(mountsAt(mounts, '/srv/root/mcp-sandbox-x/home')).toBe(0);
  });
});

describe('loop devices', () => {
  it('reads a backing file from sysfs, and tells a deleted one by the suffix the kernel adds', () => {
    expect(toLoopDevice('loop7', '/srv/root/.disks/mcp-sandbox-x.img\n')).toEqual({
      device: '/dev/loop7',
      backingFile: '/srv/root/.disks/mcp-sandbox-x.img',
      deleted: false,
    });
    expect(toLoopDevice('loop159', '/srv/root/.disks/mcp-sandbox-x.img (deleted)\n')).toEqual({
      device: '/dev/loop159',
      backingFile: '/srv/root/.disks/mcp-sandbox-x.img',
      deleted: true,
    });
  });
});
