/**
 * cgroups.ts against a fake cgroup tree in a temp dir: which version and groups it picks, the files and values
 * it writes, what it removes. The fake behaves as cgroupfs does where it matters: a new group comes with its
 * control files (under v2, those its parent hands down), control files are never created by a write, and a
 * group with a process or a child group in it cannot be removed.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

import { probeCgroups } from '../../../../functions/mcp/sandbox/local/cgroup-probe';
import { type CgroupFs, parentGroupName } from '../../../../functions/mcp/sandbox/local/cgroups';

const LIMITS = { memoryBytes: 128 * 2 ** 20, maxProcesses: 32, cpus: 0.5 };
const ROOT = '/srv/sandboxes';
const NAME = parentGroupName(ROOT);
const SANDBOX = `mcp-sandbox-${'ab'.repeat(16)}`;
const UNLIMITED = '9223372036854771712';

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'cgroups-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

type Hierarchy = { version: 1; controllers: string[] } | { version: 2 };

/** A fake cgroupfs: hierarchies mounted under `tmp`, and the calls cgroups.ts makes on them. */
class FakeCgroupFs implements CgroupFs {
  readonly killed: number[] = [];
  readonly writes: Array<[string, string]> = [];
  /** Writes to these files fail with this code (a busy group's subtree_control, say). */
  readonly refuse = new Map<string, string>();
  /** mkdir fails with this code (no rights). */
  mkdirRefusal: string | undefined;
  private readonly mounts = new Map<string, Hierarchy>();

  /** Mounts a hierarchy at `<tmp>/<dir>` and makes its groups `groups` (paths below the mount). */
  mount(dir: string, hierarchy: Hierarchy, groups: string[] = []): string {
    const at = join(tmp, dir);
    mkdirSync(at, { recursive: true });
    this.mounts.set(at, hierarchy);
    this.populate(at, hierarchy);
    if (hierarchy.version === 2) writeFileSync(join(at, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids');
    for (const group of groups) {
      let path = at;
      for (const part of group.split('/').filter(Boolean)) {
        path = join(path, part);
        if (!existsSync(path)) {
          mkdirSync(path);
          this.populate(path, hierarchy);
        }
      }
    }
    return at;
  }

  private hierarchyOf(path: string): Hierarchy {
    for (const [at, hierarchy] of this.mounts) if (path === at || path.startsWith(`${at}/`)) return hierarchy;
    throw new Error(`not in a fake hierarchy: ${path}`);
  }

  /** The control files a new group gets. */
  private populate(dir: string, hierarchy: Hierarchy): void {
    const files: Record<string, string> = { 'cgroup.procs': '' };
    const controllers =
      hierarchy.version === 1
        ? hierarchy.controllers
        : words(readIfThere(join(dirname(dir), 'cgroup.subtree_control')));
    if (hierarchy.version === 2) {
      Object.assign(files, { 'cgroup.controllers': controllers.join(' '), 'cgroup.subtree_control': '' });
    }
    for (const controller of controllers) {
      if (controller === 'memory' && hierarchy.version === 1) {
        Object.assign(files, {
          'memory.limit_in_bytes': UNLIMITED,
          'memory.memsw.limit_in_bytes': UNLIMITED,
          'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 0\n',
        });
      } else if (controller === 'memory') {
        Object.assign(files, {
          'memory.max': 'max',
          'memory.swap.max': 'max',
          'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n',
        });
      } else if (controller === 'pids') {
        Object.assign(files, { 'pids.max': 'max' });
      } else if (controller === 'cpu' && hierarchy.version === 1) {
        Object.assign(files, { 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': '-1' });
      } else if (controller === 'cpu') {
        Object.assign(files, { 'cpu.max': 'max 100000' });
      }
    }
    for (const [name, value] of Object.entries(files)) writeFileSync(join(dir, name), value);
  }

  async mkdir(path: string): Promise<void> {
    if (this.mkdirRefusal !== undefined) throw Object.assign(new Error(this.mkdirRefusal), { code: this.mkdirRefusal });
    mkdirSync(path); // EEXIST, ENOENT as the kernel says them
    this.populate(path, this.hierarchyOf(path));
  }

  async rmdir(path: string): Promise<void> {
    if (!existsSync(path)) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    const busy =
      readIfThere(join(path, 'cgroup.procs')).trim() !== '' ||
      readdirSync(path).some((name) => statSync(join(path, name)).isDirectory());
    if (busy) throw Object.assign(new Error('EBUSY'), { code: 'EBUSY' });
    rmSync(path, { recursive: true });
  }

  async write(path: string, value: string): Promise<void> {
    const refusal = this.refuse.get(path);
    if (refusal !== undefined) throw Object.assign(new Error(refusal), { code: refusal });
    if (!existsSync(path)) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    this.writes.push([path, value]);
    writeFileSync(path, value);
  }

  /** Killing a process takes it out of every group's cgroup.procs. */
  kill(pid: number): void {
    this.killed.push(pid);
    for (const at of this.mounts.keys()) {
      for (const file of findFiles(at, 'cgroup.procs')) {
        writeFileSync(
          file,
          words(readFileSync(file, 'utf8'))
            .filter((p) => p !== String(pid))
            .join('\n'),
        );
      }
    }
  }

  /** The values written to files named `name`, in order. */
  written(name: string): string[] {
    return this.writes.filter(([path]) => basename(path) === name).map(([, value]) => value);
  }
}

function readIfThere(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

function words(text: string): string[] {
  return text
    .split(/\s+/)
    .map((w) => w.replace(/^\+/, ''))
    .filter(Boolean);
}

function findFiles(dir: string, name: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? findFiles(join(dir, entry.name), name) : entry.name === name ? [join(dir, entry.name)] : [],
  );
}

/** A /proc/self/mountinfo line. */
function mountLine(
  id: number,
  mountPoint: string,
  fsType: 'cgroup' | 'cgroup2',
  superOptions: string,
  options = 'rw,nosuid,nodev,noexec,relatime',
): string {
  return (
    `${id} 23 0:${id} / ${mountPoint.replace(/ /g, '\\040')} ${options} shared:${id} - ${fsType} ${fsType} ` +
    `${superOptions}`
  );
}

/** This host's layout: cgroup v1 hierarchies, and a cgroup2 mount that offers only hugetlb; the server's memory group
 * is /process_api/abc. */
function hybridHost(fs: FakeCgroupFs): {
  mountinfo: string;
  selfCgroup: string;
  memory: string;
  pids: string;
  cpu: string;
} {
  const memory = fs.mount('memory', { version: 1, controllers: ['memory'] }, ['process_api/abc']);
  const pids = fs.mount('pids', { version: 1, controllers: ['pids'] });
  const cpu = fs.mount('cpu,cpuacct', { version: 1, controllers: ['cpu', 'cpuacct'] });
  const unified = fs.mount('unified', { version: 2 });
  writeFileSync(join(unified, 'cgroup.controllers'), 'hugetlb');
  const mountinfo = [
    `31 1 0:28 / ${tmp} rw,relatime - tmpfs tmpfs rw,mode=755`,
    mountLine(32, cpu, 'cgroup', 'rw,cpu,cpuacct'),
    mountLine(35, memory, 'cgroup', 'rw,memory'),
    mountLine(36, join(tmp, 'cpuset'), 'cgroup', 'rw,cpuset'),
    mountLine(39, pids, 'cgroup', 'rw,pids'),
    mountLine(41, unified, 'cgroup2', 'rw'),
  ].join('\n');
  const selfCgroup = ['8:pids:/', '4:memory:/process_api/abc', '3:cpuset:/', '1:cpu,cpuacct:/', '0::/'].join('\n');
  return { mountinfo, selfCgroup, memory, pids, cpu };
}

describe('probeCgroups', () => {
  it(
    'uses cgroup v1 when cgroup2 offers none of memory, pids, cpu; the parent goes beneath the server’s own group; ' +
      'nothing is left after the probe',
    async () => {
      const fs = new FakeCgroupFs();
      const host = hybridHost(fs);
      const { cgroups, problems } = await probeCgroups({
        root: ROOT,
        limits: LIMITS,
        mountinfo: host.mountinfo,
        selfCgroup: host.selfCgroup,
        fs,
      });
      expect(cgroups?.placements).toEqual([
        { version: 1, parent: join(host.memory, 'process_api/abc', NAME), controllers: ['memory'] },
        { version: 1, parent: join(host.pids, NAME), controllers: ['pids'] },
        { version: 1, parent: join(host.cpu, NAME), controllers: ['cpu'] },
      ]);
      expect(['memory', 'pids', 'cpu'].map((c) => cgroups?.versionOf(c as 'memory'))).toEqual([1, 1, 1]);
      expect(problems).toEqual([expect.stringContaining('offers none of memory, pids, cpu (it has: hugetlb)')]);
      // The probe made a group under each and wrote its limit, then removed it and the parent.
      expect(fs.written('pids.max')).toEqual(['32']);
      for (const placement of cgroups?.placements ?? []) expect(existsSync(placement.parent)).toBe(false);
    },
  );

  it(
    'sets a sandbox’s v1 limits (memory and memory+swap, pids, CFS quota) and hands the launcher each group’s ' +
      'cgroup.procs',
    async () => {
      const fs = new FakeCgroupFs();
      const host = hybridHost(fs);
      const { cgroups } = await probeCgroups({
        root: ROOT,
        limits: LIMITS,
        mountinfo: host.mountinfo,
        selfCgroup: host.selfCgroup,
        fs,
      });
      const groups = cgroups?.forSandbox(SANDBOX);
      const procs = await groups?.enter();
      const dirs = [
        join(host.memory, 'process_api/abc', NAME, SANDBOX),
        join(host.pids, NAME, SANDBOX),
        join(host.cpu, NAME, SANDBOX),
      ];
      expect(procs).toEqual(dirs.map((dir) => join(dir, 'cgroup.procs')));
      const [memory, pids, cpu] = dirs as [string, string, string];
      expect(readFileSync(join(memory, 'memory.limit_in_bytes'), 'utf8')).toBe(String(128 * 2 ** 20));
      expect(readFileSync(join(memory, 'memory.memsw.limit_in_bytes'), 'utf8')).toBe(String(128 * 2 ** 20));
      expect(readFileSync(join(pids, 'pids.max'), 'utf8')).toBe('32');
      expect(readFileSync(join(cpu, 'cpu.cfs_period_us'), 'utf8')).toBe('100000');
      expect(readFileSync(join(cpu, 'cpu.cfs_quota_us'), 'utf8')).toBe('50000');
      // Entering again writes nothing more: the limits hold.
      const before = fs.writes.length;
      await groups?.enter();
      expect(fs.writes.length).toBe(before);
    },
  );

  it(
    'uses cgroup v2 where it offers the controllers: enables them down to the parent, sets memory.max, no swap, ' +
      'pids.max and cpu.max',
    async () => {
      const fs = new FakeCgroupFs();
      const unified = fs.mount('unified', { version: 2 });
      const mountinfo = mountLine(30, unified, 'cgroup2', 'rw,nsdelegate');
      const { cgroups, problems } = await probeCgroups({
        root: ROOT,
        limits: { ...LIMITS, cpus: 1.5 },
        mountinfo,
        selfCgroup: '0::/\n',
        fs,
      });
      expect(problems).toEqual([]);
      expect(cgroups?.placements).toEqual([
        { version: 2, parent: join(unified, NAME), controllers: ['memory', 'pids', 'cpu'] },
      ]);
      expect(readFileSync(join(unified, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids +cpu');
      const groups = cgroups?.forSandbox(SANDBOX);
      expect(await groups?.enter()).toEqual([join(unified, NAME, SANDBOX, 'cgroup.procs')]);
      const dir = join(unified, NAME, SANDBOX);
      expect(readFileSync(join(unified, NAME, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids +cpu');
      expect(readFileSync(join(dir, 'memory.max'), 'utf8')).toBe(String(128 * 2 ** 20));
      expect(readFileSync(join(dir, 'memory.swap.max'), 'utf8')).toBe('0');
      expect(readFileSync(join(dir, 'pids.max'), 'utf8')).toBe('32');
      expect(readFileSync(join(dir, 'cpu.max'), 'utf8')).toBe('150000 100000');
      expect(await groups?.oomKills()).toBe(0);
      writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 0\n');
      expect(await groups?.oomKills()).toBe(2);
    },
  );

  it(
    'goes to the top of the cgroup2 mount when the server’s own group cannot hand controllers down (it has ' +
      'processes: EBUSY)',
    async () => {
      const fs = new FakeCgroupFs();
      const unified = fs.mount('unified', { version: 2 });
      writeFileSync(join(unified, 'cgroup.subtree_control'), 'memory pids cpu');
      fs.mount('unified', { version: 2 }, ['system.slice/mcp.service']);
      fs.refuse.set(join(unified, 'system.slice/mcp.service/cgroup.subtree_control'), 'EBUSY');
      const mountinfo = mountLine(30, unified, 'cgroup2', 'rw');
      const { cgroups } = await probeCgroups({
        root: ROOT,
        limits: LIMITS,
        mountinfo,
        selfCgroup: '0::/system.slice/mcp.service\n',
        fs,
      });
      expect(cgroups?.placements).toEqual([
        { version: 2, parent: join(unified, NAME), controllers: ['memory', 'pids', 'cpu'] },
      ]);
    },
  );

  it('offers nothing where no cgroup can be written: none mounted, mounted read-only, or no rights', async () => {
    const none = await probeCgroups({
      root: ROOT,
      limits: LIMITS,
      mountinfo: '',
      selfCgroup: '',
      fs: new FakeCgroupFs(),
    });
    expect(none.cgroups).toBeUndefined();
    expect(none.problems).toEqual([
      'memory: no cgroup v1 hierarchy and no cgroup2 mount',
      'pids: no cgroup v1 hierarchy and no cgroup2 mount',
      'cpu: no cgroup v1 hierarchy and no cgroup2 mount',
    ]);

    const readOnly = new FakeCgroupFs();
    const unified = readOnly.mount('unified', { version: 2 });
    const ro = await probeCgroups({
      root: ROOT,
      limits: LIMITS,
      mountinfo: mountLine(30, unified, 'cgroup2', 'rw', 'ro,nosuid'),
      selfCgroup: '0::/\n',
      fs: readOnly,
    });
    expect(ro.cgroups).toBeUndefined();
    expect(ro.problems[0]).toContain('mounted read-only');

    const noRights = new FakeCgroupFs();
    const host = hybridHost(noRights);
    noRights.mkdirRefusal = 'EACCES';
    const refused = await probeCgroups({
      root: ROOT,
      limits: LIMITS,
      mountinfo: host.mountinfo,
      selfCgroup: host.selfCgroup,
      fs: noRights,
    });
    expect(refused.cgroups).toBeUndefined();
    expect(refused.problems.join('\n')).toContain('cannot make a limited group under');
    expect(refused.problems.join('\n')).toContain('EACCES');
  });

  it(
    'removes the empty children an earlier server left at start-up, ' + 'and keeps one that still has processes',
    async () => {
      const fs = new FakeCgroupFs();
      const host = hybridHost(fs);
      const parent = join(host.pids, NAME);
      const stale = `mcp-sandbox-${'11'.repeat(16)}`;
      const live = `mcp-sandbox-${'22'.repeat(16)}`;
      fs.mount('pids', { version: 1, controllers: ['pids'] }, [
        `${NAME}/${stale}`,
        `${NAME}/${live}`,
        `${NAME}/not-ours`,
      ]);
      writeFileSync(join(parent, live, 'cgroup.procs'), '4242\n');
      await probeCgroups({ root: ROOT, limits: LIMITS, mountinfo: host.mountinfo, selfCgroup: host.selfCgroup, fs });
      expect(
        readdirSync(parent)
          .filter((name) => statSync(join(parent, name)).isDirectory())
          .sort(),
      ).toEqual([live, 'not-ours']);
      expect(fs.killed).toEqual([]);
    },
  );

  it('names the parent after the sandbox root, so that servers with other roots never share one', () => {
    expect(parentGroupName('/tmp/a')).toMatch(/^mcp-sandboxes-[0-9a-f]{12}$/);
    expect(parentGroupName('/tmp/a')).not.toBe(parentGroupName('/tmp/b'));
    expect(parentGroupName('/tmp/a')).toBe(parentGroupName('/tmp/a'));
  });
});

describe('a sandbox’s groups', () => {
  async function setUp(): Promise<{
    fs: FakeCgroupFs;
    host: ReturnType<typeof hybridHost>;
    cgroups: NonNullable<Awaited<ReturnType<typeof probeCgroups>>['cgroups']>;
  }> {
    const fs = new FakeCgroupFs();
    const host = hybridHost(fs);
    const { cgroups } = await probeCgroups({
      root: ROOT,
      limits: LIMITS,
      mountinfo: host.mountinfo,
      selfCgroup: host.selfCgroup,
      fs,
    });
    if (cgroups === undefined) throw new Error('no cgroups');
    return { fs, host, cgroups };
  }

  it('counts the kernel’s OOM kills from memory.oom_control (v1)', async () => {
    const { host, cgroups } = await setUp();
    const groups = cgroups.forSandbox(SANDBOX);
    expect(await groups.oomKills()).toBe(0); // not made yet
    await groups.enter();
    writeFileSync(
      join(host.memory, 'process_api/abc', NAME, SANDBOX, 'memory.oom_control'),
      'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n',
    );
    expect(await groups.oomKills()).toBe(3);
  });

  it('kills what is left in its groups, removes them, and the parents with their last child', async () => {
    const { fs, host, cgroups } = await setUp();
    const first = cgroups.forSandbox(SANDBOX);
    const second = cgroups.forSandbox(`mcp-sandbox-${'cd'.repeat(16)}`);
    const procs = await first.enter();
    await second.enter();
    for (const file of procs) writeFileSync(file, '4001\n4002\n');
    expect(await first.remove()).toBe(true);
    // Each once, though it is listed in every hierarchy.
    expect(fs.killed.sort()).toEqual([4001, 4002]);
    for (const file of procs) expect(existsSync(dirname(file))).toBe(false);
    // The second sandbox's groups keep the parents.
    expect(existsSync(join(host.pids, NAME))).toBe(true);
    expect(await second.remove()).toBe(true);
    expect(existsSync(join(host.pids, NAME))).toBe(false);
    expect(existsSync(join(host.memory, 'process_api/abc', NAME))).toBe(false);
    // Removing again is fine.
    expect(await second.remove()).toBe(true);
  });

  it(
    'makes its groups again, with their limits, when they went meanwhile (a stale sweep, the last child of another ' +
      'sandbox)',
    async () => {
      const { fs, host, cgroups } = await setUp();
      const groups = cgroups.forSandbox(SANDBOX);
      await groups.enter();
      await groups.remove();
      expect(existsSync(join(host.pids, NAME))).toBe(false);
      const procs = await groups.enter();
      for (const file of procs) expect(existsSync(file)).toBe(true);
      expect(readFileSync(join(host.pids, NAME, SANDBOX, 'pids.max'), 'utf8')).toBe('32');
      expect(fs.written('pids.max')).toEqual(['32', '32', '32']);
    },
  );

  it('refuses a name that is not a sandbox workspace’s', async () => {
    const { cgroups } = await setUp();
    expect(() => cgroups.forSandbox('../escape')).toThrow('not a sandbox group name');
  });
});
