/**
 * The local sandbox's resource limits: their settings (LOCAL_SANDBOX_MEMORY_MB, LOCAL_SANDBOX_MAX_PROCESSES,
 * LOCAL_SANDBOX_CPUS), what holds each where no cgroup does, and the launcher's wrapper that puts a process in
 * its sandbox's groups before it runs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadConfig } from '../../../../functions/mcp/config';
import { ConfigError } from '../../../../functions/mcp/errors';
import { type CgroupPlacement, SandboxCgroups } from '../../../../functions/mcp/sandbox/local/cgroups';
import { DEFAULT_PROCESS_LIMITS, ENTER_CGROUPS_SCRIPT } from '../../../../functions/mcp/sandbox/local/launch';
import { findProgram } from '../../../../functions/mcp/sandbox/local/find-program';
import { heldLimits, limitSettings, processLimitsFor } from '../../../../functions/mcp/sandbox/local/resource-limits';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('the limit settings', () => {
  it('default to 1 GiB of memory, 512 processes and 1 CPU', () => {
    expect(loadConfig({}).local).toMatchObject({ memoryMb: 1024, maxProcesses: 512, cpus: 1 });
  });

  it('take whole MiB, a whole process count, and a CPU share with decimals', () => {
    const local = loadConfig({
      LOCAL_SANDBOX_MEMORY_MB: '128',
      LOCAL_SANDBOX_MAX_PROCESSES: '32',
      LOCAL_SANDBOX_CPUS: '0.25',
    }).local;
    expect(local).toMatchObject({ memoryMb: 128, maxProcesses: 32, cpus: 0.25 });
    expect(limitSettings(local, { ...DEFAULT_PROCESS_LIMITS, maxProcesses: 32 })).toEqual({
      memoryBytes: 128 * 2 ** 20,
      maxProcesses: 32,
      cpus: 0.25,
    });
  });

  it('refuse values that are not numbers, or out of range, naming each', () => {
    const problems = problemsOf({
      LOCAL_SANDBOX_MEMORY_MB: '1.5',
      LOCAL_SANDBOX_MAX_PROCESSES: '2',
      LOCAL_SANDBOX_CPUS: 'half',
    }).join('\n');
    expect(problems).toContain('LOCAL_SANDBOX_MEMORY_MB must be an integer from 16 to 4194304 (got "1.5")');
    expect(problems).toContain('LOCAL_SANDBOX_MAX_PROCESSES must be an integer from 8 to 4194304 (got "2")');
    expect(problems).toContain(
      'LOCAL_SANDBOX_CPUS must be a number of CPUs from 0.01 to 1024, decimals allowed (got "half")',
    );
    for (const cpus of ['0', '0.001', '-1', '2000', '1e3'])
      expect(problemsOf({ LOCAL_SANDBOX_CPUS: cpus }).join()).toContain('LOCAL_SANDBOX_CPUS');
  });
});

describe('what holds each limit', () => {
  const settings = { memoryBytes: 2 ** 30, maxProcesses: 512, cpus: 1 };
  const v1 = (controllers: CgroupPlacement['controllers']): SandboxCgroups =>
    new SandboxCgroups([{ version: 1, parent: '/sys/fs/cgroup/x/p', controllers }], settings);

  it('a cgroup where there is one', () => {
    expect(heldLimits(settings, v1(['memory', 'pids', 'cpu']), { prlimit: true, ownUsers: true }, true)).toEqual({
      memory: { value: 2 ** 30, enforcedBy: 'cgroup v1' },
      processes: { value: 512, enforcedBy: 'cgroup v1' },
      cpu: { value: 1, enforcedBy: 'cgroup v1' },
    });
  });

  it('else rlimits: memory per process (RLIMIT_DATA), processes only with a user of its own; CPU nothing', () => {
    expect(heldLimits(settings, undefined, { prlimit: true, ownUsers: true }, true)).toEqual({
      memory: { value: 2 ** 30, enforcedBy: 'rlimit' },
      processes: { value: 512, enforcedBy: 'rlimit' },
      cpu: { value: null, enforcedBy: 'none' },
    });
    expect(heldLimits(settings, undefined, { prlimit: true, ownUsers: false }, true).processes).toEqual({
      value: null,
      enforcedBy: 'none',
    });
    expect(heldLimits(settings, undefined, { prlimit: false, ownUsers: true }, true).memory).toEqual({
      value: null,
      enforcedBy: 'none',
    });
    expect(processLimitsFor(DEFAULT_PROCESS_LIMITS, settings, undefined).maxDataBytes).toBe(2 ** 30);
    expect(processLimitsFor(DEFAULT_PROCESS_LIMITS, settings, v1(['pids'])).maxDataBytes).toBe(2 ** 30);
    expect(processLimitsFor(DEFAULT_PROCESS_LIMITS, settings, v1(['memory'])).maxDataBytes).toBeUndefined();
  });

  it('says "probing" until the start-up probe is done', () => {
    expect(heldLimits(settings, undefined, { prlimit: true, ownUsers: false }, false).cpu).toEqual({
      value: null,
      enforcedBy: 'probing',
    });
  });
});

describe('the launcher’s wrapper, which enters a sandbox’s groups', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'enter-cgroups-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes its own pid to each group, then becomes the command (same pid)', () => {
    const files = [join(dir, 'a'), join(dir, 'b')];
    for (const file of files) writeFileSync(file, '');
    const run = spawnSync(
      '/bin/sh',
      [
        '-c',
        ENTER_CGROUPS_SCRIPT,
        'sh',
        ...files,
        '--',
        '/bin/sh',
        '-c',
        'echo $$; echo "$1"',
        'inner',
        'arg with spaces',
      ],
      { encoding: 'utf8' },
    );
    expect(run.status).toBe(0);
    const [pid, arg] = run.stdout.split('\n');
    expect(arg).toBe('arg with spaces');
    for (const file of files) expect(readFileSync(file, 'utf8').trim()).toBe(pid);
  });

  it('runs nothing when a group cannot be entered (exit 125)', () => {
    const ran = join(dir, 'ran');
    const run = spawnSync(
      '/bin/sh',
      ['-c', ENTER_CGROUPS_SCRIPT, 'sh', join(dir, 'missing', 'cgroup.procs'), '--', '/bin/sh', '-c', `touch ${ran}`],
      { encoding: 'utf8' },
    );
    expect(run.status).toBe(125);
    expect(run.stderr).toContain('sandbox: cannot enter');
    expect(() => readFileSync(ran)).toThrow();
  });
});

describe('the memory rlimit where no cgroup holds memory (RLIMIT_DATA at the default 1 GiB)', () => {
  const prlimit = findProgram('prlimit');
  const java = findProgram('java');
  const javac = findProgram('javac');
  const node = findProgram('node');
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rlimit-data-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const underLimit = (program: string, ...args: string[]) =>
    spawnSync(prlimit ?? 'prlimit', [`--data=${2 ** 30}`, '--', program, ...args], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
    });

  // RLIMIT_AS at 1 GiB would break Java (it reserves ~1 GiB of compressed class space alone); RLIMIT_DATA counts
  // only memory written to, so runtimes that reserve address space still start.
  (prlimit !== undefined && java !== undefined && javac !== undefined ? it : it.skip)(
    'lets Java 17 compile and run (javac, java, the single-file launcher)',
    () => {
      writeFileSync(
        join(dir, 'Main.java'),
        'public class Main { public static void main(String[] a) { byte[] b = new byte[64 << 20]; ' +
          'System.out.println("java " + b.length); } }',
      );
      expect(underLimit(javac ?? 'javac', '-d', '.', 'Main.java')).toMatchObject({ status: 0 });
      expect(existsSync(join(dir, 'Main.class'))).toBe(true);
      expect(underLimit(java ?? 'java', '-cp', '.', 'Main')).toMatchObject({ status: 0, stdout: `java ${64 << 20}\n` });
      expect(underLimit(java ?? 'java', 'Main.java')).toMatchObject({ status: 0, stdout: `java ${64 << 20}\n` });
    },
    400_000,
  );

  (prlimit !== undefined && node !== undefined ? it : it.skip)(
    'lets Node run, and stops an allocation beyond it',
    () => {
      expect(underLimit(node ?? 'node', '-e', 'console.log(Buffer.alloc(64 << 20, 1).length)')).toMatchObject({
        status: 0,
        stdout: `${64 << 20}\n`,
      });
      expect(underLimit(node ?? 'node', '-e', 'Buffer.alloc(2 * 2 ** 30, 1)').status).not.toBe(0);
    },
  );
});
