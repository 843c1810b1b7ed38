/**
 * The agent inside one local E2B sandbox (plain JS, run by Node as the first process under bwrap's init in
 * the sandbox's PID and mount namespace, see sandbox-runtime.ts; it calls itself `envd`). It does what needs the
 * sandbox's own view on the service's behalf: starts and signals processes (so their pids, /proc, /home/user and /tmp
 * are the sandbox's), and does the file operations (so paths and symlinks resolve as the sandbox sees them, never on
 * the host), /files transfers among them, a chunk at a time.
 *
 * Protocol (agent-protocol.ts): frames of [u32 header length][u32 payload length][JSON header][payload] on
 * stdin (requests) and stdout (replies and events). Requests carry `id`; replies are `{t:'reply', id, ok}`
 * with `result` or an error (`code`: a Connect code for filesystem calls, `status`: an HTTP status for file
 * transfers). Events: `{t:'out', pid, fd}` + bytes, `{t:'exit', pid, code, signal}` once the process exited
 * and its output pipes closed. When stdin ends (the service went away) the agent exits, and the kernel
 * kills everything left in the namespace with it.
 *
 * Egress: the sandbox has a network namespace of its own with only loopback in it. The agent listens on
 * 127.0.0.1:3128 there (the proxy variables of every process name it) and carries each connection to the
 * service as `conn`, `cdata`, `cack`, `ceof` and `cclose` frames (agent-protocol.ts), which serves it with the
 * server's egress proxy. At most 64 at once; at most 256 KiB unacknowledged each way per connection.
 */
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

process.title = 'envd';
// A stray `kill` or `pkill` in the sandbox must not take the agent down (a SIGKILL still does, as for envd).
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'])
  process.on(signal, () => undefined);

// ---- framing ----

function send(header, payload) {
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(json.length, 0);
  prefix.writeUInt32BE(payload ? payload.length : 0, 4);
  process.stdout.write(Buffer.concat([prefix, json]));
  if (payload && payload.length > 0) process.stdout.write(payload);
}

let chunks = [];
let buffered = 0;
function onInput(chunk) {
  chunks.push(chunk);
  buffered += chunk.length;
  for (;;) {
    if (buffered < 8) return;
    if (chunks[0].length < 8) chunks = [Buffer.concat(chunks)];
    const headerLength = chunks[0].readUInt32BE(0);
    const total = 8 + headerLength + chunks[0].readUInt32BE(4);
    if (buffered < total) return;
    if (chunks[0].length < total) chunks = [Buffer.concat(chunks)];
    const bytes = chunks[0].subarray(0, total);
    if (chunks[0].length === total) chunks.shift();
    else chunks[0] = chunks[0].subarray(total);
    buffered -= total;
    handle(JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')), bytes.subarray(8 + headerLength));
  }
}

function reply(id, result, payload) {
  send({ t: 'reply', id, ok: true, result }, payload);
}

function fail(id, error) {
  send({
    t: 'reply',
    id,
    ok: false,
    code: error.code || 'internal',
    status: error.status || 500,
    message: error.message,
  });
}

class OpError extends Error {
  constructor(code, status, message) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

// ---- errors in the words envd (Go) uses ----

const ERRNO_TEXT = {
  ENOENT: 'no such file or directory',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'file exists',
  ELOOP: 'too many levels of symbolic links',
  ENOTEMPTY: 'directory not empty',
  EXDEV: 'invalid cross-device link',
  ENOSPC: 'no space left on device',
  ENAMETOOLONG: 'file name too long',
  EBUSY: 'device or resource busy',
};

function goError(err, filePath = err.path) {
  const text = ERRNO_TEXT[err.code];
  if (!text) return err.message;
  return filePath ? `${err.syscall} ${filePath}: ${text}` : `${err.syscall}: ${text}`;
}

// ---- processes ----

const children = new Map();

function spawnProcess(id, msg) {
  const commandLine = [msg.cmd, ...msg.args].join(' ');
  try {
    fs.statSync(msg.cwd);
  } catch {
    throw new OpError('invalid_argument', 400, `cwd '${msg.cwd}' does not exist`);
  }
  let child;
  try {
    // A session of its own: a command's `kill 0` or `kill -- -$$` reaches its own group, not the agent.
    child = spawn(msg.cmd, msg.args, {
      cwd: msg.cwd,
      env: msg.env,
      stdio: [msg.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
  } catch (err) {
    throw new OpError('invalid_argument', 400, `error starting process '${commandLine}': ${goError(err)}`);
  }
  if (child.pid === undefined) {
    child.once('error', (err) =>
      fail(id, new OpError('invalid_argument', 400, `error starting process '${commandLine}': ${goError(err)}`)),
    );
    return;
  }
  const pid = child.pid;
  const record = { child, stdin: child.stdin, cancelOutput: false };
  children.set(pid, record);
  child.on('error', () => undefined);
  if (child.stdin) child.stdin.on('error', () => undefined);
  child.stdout.on('data', (data) => send({ t: 'out', pid, fd: 1 }, data));
  child.stderr.on('data', (data) => send({ t: 'out', pid, fd: 2 }, data));
  child.on('exit', () => {
    // After SIGKILL or SIGTERM from the service envd stops waiting for the output pipes (a child the process
    // left behind may hold them open); otherwise the end waits until every writer closed them.
    if (record.cancelOutput) {
      child.stdout.destroy();
      child.stderr.destroy();
    }
  });
  child.on('close', (code, signal) => {
    children.delete(pid);
    send({ t: 'exit', pid, code, signal });
  });
  reply(id, { pid });
}

function childOf(pid) {
  const record = children.get(pid);
  if (!record) throw new OpError('not_found', 404, `process with pid ${pid} not found`);
  return record;
}

function writeStdin(id, msg, payload) {
  const record = childOf(msg.pid);
  if (!record.stdin || record.stdin.destroyed || record.stdin.writableEnded) {
    throw new OpError('internal', 500, 'error writing to stdin: stdin not enabled or closed');
  }
  record.stdin.write(payload, (err) => {
    if (err) fail(id, new OpError('internal', 500, `error writing to stdin of process '${msg.pid}': ${goError(err)}`));
    else reply(id, {});
  });
}

function closeStdin(id, msg) {
  const record = childOf(msg.pid);
  if (record.stdin && !record.stdin.writableEnded) record.stdin.end();
  record.stdin = null;
  reply(id, {});
}

function signalProcess(id, msg) {
  const record = childOf(msg.pid);
  if (msg.signal === 'SIGKILL' || msg.signal === 'SIGTERM') record.cancelOutput = true;
  if (record.child.exitCode !== null || record.child.signalCode !== null) {
    if (record.cancelOutput) {
      record.child.stdout.destroy();
      record.child.stderr.destroy();
    }
    throw new OpError('internal', 500, 'error sending signal: os: process already finished');
  }
  if (!record.child.kill(msg.signal))
    throw new OpError('internal', 500, `error sending signal: could not signal ${msg.pid}`);
  reply(id, {});
}

// ---- filesystem ----

let owners;
function nameTables() {
  if (!owners) {
    const table = (file) => {
      const names = new Map();
      try {
        for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
          const parts = line.split(':');
          if (parts.length > 2 && !names.has(Number(parts[2]))) names.set(Number(parts[2]), parts[0]);
        }
      } catch {
        // no table: numeric ids
      }
      return names;
    };
    owners = { users: table('/etc/passwd'), groups: table('/etc/group') };
  }
  return owners;
}

/** Go's os.FileMode.String(). */
function modeString(stat) {
  let kind = '';
  if (stat.isDirectory()) kind += 'd';
  if (stat.isSymbolicLink()) kind += 'L';
  if (stat.isBlockDevice()) kind += 'D';
  if (stat.isCharacterDevice()) kind += 'Dc';
  if (stat.isFIFO()) kind += 'p';
  if (stat.isSocket()) kind += 'S';
  if (stat.mode & 0o4000) kind += 'u';
  if (stat.mode & 0o2000) kind += 'g';
  if (stat.mode & 0o1000) kind += 't';
  if (kind === '') kind = '-';
  const rwx = 'rwxrwxrwx';
  let perm = '';
  for (let i = 0; i < 9; i++) perm += stat.mode & (1 << (8 - i)) ? rwx[i] : '-';
  return kind + perm;
}

function fileType(stat) {
  if (stat.isFile()) return 'FILE_TYPE_FILE';
  if (stat.isDirectory()) return 'FILE_TYPE_DIRECTORY';
  if (stat.isSymbolicLink()) return 'FILE_TYPE_SYMLINK';
  return 'FILE_TYPE_UNSPECIFIED';
}

/** envd's EntryInfo of `p` (not following a final symlink, but typed as its target). */
function entryInfo(p) {
  let stat;
  try {
    stat = fs.lstatSync(p);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR')
      throw new OpError('not_found', 404, `file not found: ${goError(err)}`);
    throw new OpError('internal', 500, `error getting file info: ${goError(err)}`);
  }
  const entry = {
    name: path.basename(p),
    type: fileType(stat),
    path: p,
    size: String(stat.size),
    mode: stat.mode & 0o777,
    permissions: modeString(stat),
    owner: nameTables().users.get(stat.uid) ?? String(stat.uid),
    group: nameTables().groups.get(stat.gid) ?? String(stat.gid),
    modifiedTime: new Date(stat.mtimeMs).toISOString(),
  };
  if (stat.isSymbolicLink()) {
    let target = p;
    try {
      target = fs.realpathSync(p);
    } catch {
      // unresolvable: the link's own path, as envd reports it
    }
    entry.symlinkTarget = target;
    try {
      const targetStat = fs.statSync(target);
      entry.type = fileType(targetStat);
      entry.mode = targetStat.mode & 0o777;
    } catch {
      entry.type = 'FILE_TYPE_UNSPECIFIED';
      entry.mode = 0;
    }
  }
  return entry;
}

/** envd's EnsureDirs: creates the missing directories of `dir`, failing on a component that is a file. */
function ensureDirs(dir) {
  const parts = [];
  for (let p = dir; p !== '/' && p !== '.'; p = path.dirname(p)) parts.unshift(p);
  for (const p of parts) {
    let stat;
    try {
      stat = fs.statSync(p);
    } catch (err) {
      if (err.code !== 'ENOENT') throw new Error(`failed to stat directory: ${goError(err)}`);
      try {
        fs.mkdirSync(p, 0o755);
      } catch (mkdirErr) {
        if (mkdirErr.code !== 'EEXIST') throw new Error(`failed to create directory: ${goError(mkdirErr)}`);
      }
      continue;
    }
    if (!stat.isDirectory()) throw new Error(`path is a file: ${p}`);
  }
}

function byteOrder(a, b) {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function listDir(msg) {
  let resolved;
  try {
    resolved = fs.realpathSync(msg.path);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR')
      throw new OpError('not_found', 404, `path not found: ${goError(err)}`);
    if (err.code === 'ELOOP')
      throw new OpError('failed_precondition', 400, `cyclic symlink or chain >255 links at "${msg.path}"`);
    throw new OpError('internal', 500, `error resolving symlink: ${goError(err)}`);
  }
  if (!fs.statSync(resolved).isDirectory())
    throw new OpError('invalid_argument', 400, `path is not a directory: ${resolved}`);
  const entries = [];
  const walk = (dir, rel, depth) => {
    let names;
    try {
      names = fs.readdirSync(dir).sort(byteOrder);
    } catch (err) {
      throw new OpError('internal', 500, `error reading directory ${resolved}: ${goError(err)}`);
    }
    for (const name of names) {
      const full = path.join(dir, name);
      const relPath = rel === '' ? name : `${rel}/${name}`;
      let entry;
      try {
        entry = entryInfo(full);
      } catch (err) {
        if (err.code === 'not_found') continue;
        throw err;
      }
      entry.path = path.join(msg.path, relPath);
      entries.push(entry);
      let isDir = false;
      try {
        isDir = fs.lstatSync(full).isDirectory();
      } catch {
        // gone meanwhile
      }
      if (isDir && depth < msg.depth) walk(full, relPath, depth + 1);
    }
  };
  walk(resolved, '', 1);
  return { entries };
}

function makeDir(msg) {
  let stat;
  try {
    stat = fs.statSync(msg.path);
  } catch (err) {
    if (err.code !== 'ENOENT') throw new OpError('internal', 500, `error getting file info: ${goError(err)}`);
  }
  if (stat && stat.isDirectory()) throw new OpError('already_exists', 409, `directory already exists: ${msg.path}`);
  if (stat) throw new OpError('invalid_argument', 400, `path already exists but it is not a directory: ${msg.path}`);
  try {
    ensureDirs(msg.path);
  } catch (err) {
    throw new OpError('internal', 500, err.message);
  }
  return { entry: entryInfo(msg.path) };
}

function move(msg) {
  try {
    ensureDirs(path.dirname(msg.destination));
  } catch (err) {
    throw new OpError('internal', 500, err.message);
  }
  try {
    fs.renameSync(msg.source, msg.destination);
  } catch (err) {
    if (err.code === 'ENOENT') throw new OpError('not_found', 404, `source file not found: ${goError(err)}`);
    if (err.code !== 'EXDEV') throw new OpError('internal', 500, `error renaming: ${goError(err)}`);
    // /home/user and /tmp are separate mounts here (one disk in E2B's VM): copy, then remove.
    try {
      fs.cpSync(msg.source, msg.destination, { recursive: true, verbatimSymlinks: true, force: true });
      fs.rmSync(msg.source, { recursive: true, force: true });
    } catch (copyErr) {
      throw new OpError('internal', 500, `error renaming: ${goError(copyErr)}`);
    }
  }
  return { entry: entryInfo(msg.destination) };
}

function remove(msg) {
  try {
    fs.rmSync(msg.path, { recursive: true, force: true });
  } catch (err) {
    throw new OpError('internal', 500, `error removing file or directory: ${goError(err)}`);
  }
  return {};
}

// ---- file transfers (/files) ----

/**
 * Files open for a transfer, by handle (agent-transfers.ts on the service's side): `openRead`/`openWrite` open one,
 * `read` answers up to `length` bytes at `offset` (at most TRANSFER_CHUNK_BYTES), `write` appends its payload,
 * `close` closes it once no read or write on it is under way. The service keeps a chunk or two in flight, so
 * neither side holds a whole file.
 */
const transfers = new Map();
let nextTransfer = 1;
const TRANSFER_CHUNK_BYTES = 4 * 1024 * 1024;

function transferOf(msg) {
  const transfer = transfers.get(msg.handle);
  if (!transfer) throw new OpError('internal', 500, `file handle ${msg.handle} is not open`);
  return transfer;
}

function openTransfer(filePath, fd) {
  const handle = nextTransfer++;
  transfers.set(handle, { path: filePath, fd, busy: 0, closing: false });
  return handle;
}

/** envd's GetFiles up to the open: stat (404, 400 for a directory), then open. */
function openRead(msg) {
  let stat;
  try {
    stat = fs.statSync(msg.path);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR')
      throw new OpError('not_found', 404, `path '${msg.path}' does not exist`);
    throw new OpError('internal', 500, `error checking if path exists '${msg.path}': ${goError(err)}`);
  }
  if (stat.isDirectory()) throw new OpError('invalid_argument', 400, `path '${msg.path}' is a directory`);
  let fd;
  try {
    fd = fs.openSync(msg.path, 'r');
  } catch (err) {
    throw new OpError('internal', 500, `error opening file '${msg.path}': ${goError(err)}`);
  }
  // The size of what was opened (ServeContent seeks to its end), the time of what was stat'ed (envd's stat).
  const { size } = fs.fstatSync(fd);
  return { handle: openTransfer(msg.path, fd), size, modifiedMs: stat.mtimeMs };
}

/** Up to `length` bytes at `offset` (fewer at the end of the file). */
function readChunk(id, msg) {
  const transfer = transferOf(msg);
  const buffer = Buffer.allocUnsafe(Math.max(0, Math.min(Number(msg.length) || 0, TRANSFER_CHUNK_BYTES)));
  transfer.busy++;
  fs.read(transfer.fd, buffer, 0, buffer.length, msg.offset, (err, bytesRead) => {
    settle(transfer);
    if (err) fail(id, new OpError('internal', 500, `error reading file: ${goError(err, transfer.path)}`));
    else reply(id, { bytes: bytesRead }, buffer.subarray(0, bytesRead));
  });
}

/** envd's processFile up to the copy: parent directories, not a directory, then O_WRONLY|O_CREATE|O_TRUNC. */
function openWrite(msg) {
  try {
    ensureDirs(path.dirname(msg.path));
  } catch (err) {
    throw new OpError('internal', 500, `error ensuring directories: ${err.message}`);
  }
  let stat;
  try {
    stat = fs.statSync(msg.path);
  } catch (err) {
    if (err.code !== 'ENOENT') throw new OpError('internal', 500, `error getting file info: ${goError(err)}`);
  }
  if (stat && stat.isDirectory()) throw new OpError('invalid_argument', 400, `path is a directory: ${msg.path}`);
  let fd;
  try {
    fd = fs.openSync(msg.path, 'w', 0o666);
  } catch (err) {
    if (err.code === 'ENOSPC')
      throw new OpError('resource_exhausted', 507, `not enough inodes available: ${goError(err)}`);
    throw new OpError('internal', 500, `error opening file: ${goError(err)}`);
  }
  return { handle: openTransfer(msg.path, fd) };
}

/** Writes all of `payload` at the end of what this transfer wrote; a full disk is `no_space` (507). */
function writeChunk(id, msg, payload) {
  const transfer = transferOf(msg);
  const done = (err) => {
    settle(transfer);
    if (!err) reply(id, {});
    else if (err.code === 'ENOSPC') fail(id, new OpError('no_space', 507, 'not enough disk space available'));
    else fail(id, new OpError('internal', 500, `error writing file: ${goError(err, transfer.path)}`));
  };
  const writeFrom = (offset) => {
    if (offset >= payload.length) return done();
    fs.write(transfer.fd, payload, offset, payload.length - offset, null, (err, written) => {
      if (err) done(err);
      else writeFrom(offset + written);
    });
  };
  transfer.busy++;
  writeFrom(0);
}

/** An operation on `transfer` ended; a close asked for meanwhile happens now (never under a read or write). */
function settle(transfer) {
  transfer.busy--;
  if (transfer.closing && transfer.busy === 0) fs.close(transfer.fd, () => undefined);
}

function closeTransfer(msg) {
  const transfer = transfers.get(msg.handle);
  transfers.delete(msg.handle);
  if (!transfer) return {};
  transfer.closing = true;
  if (transfer.busy === 0) fs.close(transfer.fd, () => undefined);
  return {};
}

// ---- egress connections ----

const EGRESS_PORT = 3128;
const MAX_CONNECTIONS = 64;
const CONNECTION_CHUNK_BYTES = 64 * 1024;
const CONNECTION_WINDOW_BYTES = 256 * 1024;

/** Open connections by key: the socket and the bytes sent to the service that it has not acknowledged. */
const connections = new Map();
let nextConnection = 1;

function acceptConnection(socket) {
  socket.on('error', () => undefined);
  if (connections.size >= MAX_CONNECTIONS) {
    socket.destroy();
    return;
  }
  const key = nextConnection++;
  const connection = { socket, unacked: 0 };
  connections.set(key, connection);
  send({ t: 'conn', key });
  socket.on('data', (data) => {
    for (let offset = 0; offset < data.length; offset += CONNECTION_CHUNK_BYTES)
      send({ t: 'cdata', key }, data.subarray(offset, offset + CONNECTION_CHUNK_BYTES));
    connection.unacked += data.length;
    if (connection.unacked >= CONNECTION_WINDOW_BYTES) socket.pause();
  });
  socket.on('end', () => {
    if (connections.get(key) === connection) send({ t: 'ceof', key });
  });
  socket.on('close', () => {
    if (connections.get(key) !== connection) return;
    connections.delete(key);
    send({ t: 'cclose', key });
  });
}

/** A connection frame from the service; false when `msg` is not one. */
function connectionFrame(msg, payload) {
  if (!['cdata', 'cack', 'ceof', 'cclose'].includes(msg.t)) return false;
  const connection = connections.get(msg.key);
  if (!connection) return true;
  const { socket } = connection;
  switch (msg.t) {
    case 'cdata': {
      const length = payload.length;
      socket.write(payload, (err) => {
        if (!err) send({ t: 'cack', key: msg.key, n: length });
      });
      break;
    }
    case 'cack':
      connection.unacked = Math.max(0, connection.unacked - (Number(msg.n) || 0));
      if (connection.unacked < CONNECTION_WINDOW_BYTES) socket.resume();
      break;
    case 'ceof':
      socket.end();
      break;
    case 'cclose':
      connections.delete(msg.key);
      socket.destroy();
      break;
  }
  return true;
}

function listenForEgress(then) {
  const server = net.createServer({ allowHalfOpen: true }, acceptConnection);
  server.maxConnections = MAX_CONNECTIONS;
  server.once('error', (err) => {
    // Without the listener the sandbox has no way out; it runs on (the service sees no `conn`).
    process.stderr.write(`envd: egress listener on 127.0.0.1:${EGRESS_PORT}: ${err.message}\n`);
    then();
  });
  server.listen(EGRESS_PORT, '127.0.0.1', then);
}

// ---- dispatch ----

function handle(msg, payload) {
  if (connectionFrame(msg, payload)) return;
  const id = msg.id;
  try {
    switch (msg.t) {
      case 'spawn':
        return spawnProcess(id, msg);
      case 'stdin':
        return writeStdin(id, msg, payload);
      case 'closeStdin':
        return closeStdin(id, msg);
      case 'signal':
        return signalProcess(id, msg);
      case 'stat':
        return reply(id, { entry: entryInfo(msg.path) });
      case 'listDir':
        return reply(id, listDir(msg));
      case 'makeDir':
        return reply(id, makeDir(msg));
      case 'move':
        return reply(id, move(msg));
      case 'remove':
        return reply(id, remove(msg));
      case 'openRead':
        return reply(id, openRead(msg));
      case 'read':
        return readChunk(id, msg);
      case 'openWrite':
        return reply(id, openWrite(msg));
      case 'write':
        return writeChunk(id, msg, payload);
      case 'close':
        return reply(id, closeTransfer(msg));
      default:
        throw new OpError('unimplemented', 501, `unknown request ${msg.t}`);
    }
  } catch (err) {
    fail(
      id,
      err instanceof OpError ? err : new OpError('internal', 500, err && err.message ? err.message : String(err)),
    );
  }
}

function shutdown() {
  for (const { child } of children.values()) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exit(0);
}

process.stdout.on('error', shutdown);
process.stdin.on('data', onInput);
process.stdin.on('end', shutdown);
process.stdin.on('error', shutdown);
listenForEgress(() => send({ t: 'ready' }));
