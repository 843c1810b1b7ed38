// Figure 11: files in and out through the server (issue 32, item 5). A fresh server of ours (local backend), one
// session and its sandbox, a 200 MB file made there with `head -c … /dev/urandom`, and the two URLs of
// `get_file_url` (functions/mcp/files/file-route.ts serves them: `/files/<name>?t=<token>`). Each run, the bench
// process downloads the file through its URL (undici, the body counted as it arrives) and uploads 200 MB through a
// PUT URL (one generated megabyte sent again and again, streamed), each timed from the request to the answer read
// in full; beside each, the floor on this machine in the same run: `cat` of the same file (the workspace's, on the
// host) into a TCP socket whose other end counts bytes in the bench process, and the bench process sending the same
// body over a TCP socket into `cat > file` in the same directory. The order of ours and cat is swapped every run.
// During each transfer of ours the server's RSS is sampled (VmRSS of /proc/<pid>/status) every RSS_SAMPLE_MS, and
// its peak also read exactly (VmHWM, reset before the transfer through /proc/<pid>/clear_refs where allowed). One
// uncounted run first, whose transfers are also checked byte for byte (sha256).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { Agent, request } from 'undici';

import { median } from '../harness/load.mjs';
import { callTool, openSession } from '../harness/mcp-wire.mjs';
import { startServer } from '../harness/servers.mjs';
import { findBwrap } from './tool-latency.mjs';

/** Each transfer's size: 200 MB (10^6 bytes). */
export const FILE_BYTES = 200_000_000;
/** How often the server's RSS is read during a transfer, in milliseconds. */
export const RSS_SAMPLE_MS = 20;
/** The file made in the sandbox and downloaded; the file each upload of ours replaces; the baseline's upload. */
export const FILE_NAMES = { download: 'big.bin', upload: 'upload.bin', catUpload: 'cat-upload.bin' };
/** The upload body's megabyte, sent FILE_BYTES / 10^6 times. */
const MEGABYTE = randomBytes(1_000_000);

/**
 * Resolves with `{ runs, bytes, download, upload }`, each direction `{ ours: { runs, mbPerS }, cat: { runs,
 * mbPerS }, ratio, rss: { runs, growthMiB (the largest), medianMiB, hwmGrowthMiB (the largest) } }`, every run of a
 * side `{ seconds, bytes, mbPerS }` and of the RSS `{ beforeMiB, peakMiB, growthMiB, hwmGrowthMiB, samples }`; or
 * `{ skipped: reason }` where the sandboxes cannot run so here.
 */
export async function measureFileTransfer({ runs = 3 } = {}) {
  if (findBwrap() === undefined) return { skipped: 'bwrap is not installed' };
  const server = await startServer('ours', { env: { SANDBOX_BACKEND: 'local' } });
  const calls = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  const transfers = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  let sink;
  try {
    const sandbox = await openSandbox(server, calls);
    if (sandbox.skipped !== undefined) return { skipped: sandbox.skipped };
    sink = await startCountingSink();
    const samples = { download: { ours: [], cat: [], rss: [] }, upload: { ours: [], cat: [], rss: [] } };
    const hostFile = join(sandbox.home, FILE_NAMES.download);
    const catUpload = join(sandbox.home, FILE_NAMES.catUpload);
    for (let run = 0; run <= runs; run += 1) {
      // Run 0 is the uncounted one, and the one whose bytes are checked: a sha256 costs time of its own.
      const check = run === 0;
      const order = run % 2 === 0 ? ['ours', 'cat'] : ['cat', 'ours'];
      const got = { download: {}, upload: {} };
      for (const side of order) {
        got.download[side] =
          side === 'ours'
            ? await watchRss(server.pid, () => downloadOurs(sandbox.downloadUrl, transfers, check))
            : await catToSocket(hostFile, sink);
      }
      for (const side of order) {
        got.upload[side] =
          side === 'ours'
            ? await watchRss(server.pid, () => uploadOurs(sandbox.uploadUrl, transfers))
            : await socketToCat(catUpload);
      }
      if (check) {
        await checkBytes(sandbox, got);
        continue;
      }
      for (const direction of ['download', 'upload']) {
        const { ours, cat } = got[direction];
        samples[direction].ours.push(ours.transfer);
        samples[direction].rss.push(ours.rss);
        samples[direction].cat.push(cat);
      }
    }
    return {
      runs,
      bytes: FILE_BYTES,
      download: summarize(samples.download),
      upload: summarize(samples.upload),
    };
  } finally {
    await sink?.close();
    await transfers.close();
    await calls.close();
    await server.stop();
  }
}

/** One direction's medians, ratio and RSS growth from its counted runs. */
function summarize({ ours, cat, rss }) {
  const side = (list) => ({ runs: list, mbPerS: median(list.map((t) => t.mbPerS)) });
  return {
    ours: side(ours),
    cat: side(cat),
    ratio: median(ours.map((t) => t.mbPerS)) / median(cat.map((t) => t.mbPerS)),
    rss: {
      runs: rss,
      growthMiB: Math.max(...rss.map((r) => r.growthMiB)),
      medianMiB: median(rss.map((r) => r.growthMiB)),
      hwmGrowthMiB: Math.max(...rss.map((r) => r.hwmGrowthMiB)),
    },
  };
}

/**
 * The session, its sandbox (checked to run under bwrap), the 200 MB file in it and its sha256, where its workspace
 * lies on the host, and the two URLs. Resolves with `{ home, downloadUrl, uploadUrl, sha256, run(command) }`, or
 * with `{ skipped }`.
 */
async function openSandbox(server, agent) {
  const sessionId = await openSession(server.url, agent);
  const call = async (name, args) => (await callTool(server.url, sessionId, name, args, agent)).structuredContent;
  const run = async (command) => {
    const out = (await call('run_command', { command, timeout_ms: 120_000 })) ?? {};
    if (out.exit_code !== 0) throw new Error(`\`${command}\` exited ${out.exit_code}: ${out.stderr?.slice(0, 300)}`);
    return out.stdout;
  };
  await run(`head -c ${FILE_BYTES} /dev/urandom > ${FILE_NAMES.download}`);
  const status = (await call('sandbox_status', {})) ?? {};
  if (status.isolation !== 'bwrap') return { skipped: `our sandboxes run with isolation ${status.isolation}` };
  const sha256 = (await run(`sha256sum ${FILE_NAMES.download}`)).split(' ')[0];
  const home = findWorkspaceHome(server.sandboxRoot, FILE_NAMES.download);
  if (home === undefined) throw new Error(`no workspace under ${server.sandboxRoot} holds ${FILE_NAMES.download}`);
  const hour = 3600;
  const download = await call('get_file_url', { path: FILE_NAMES.download, mode: 'download', expires_s: hour });
  const upload = await call('get_file_url', { path: FILE_NAMES.upload, mode: 'upload', expires_s: hour });
  if (download.method !== 'GET' || download.max_bytes !== FILE_BYTES || upload.method !== 'PUT')
    throw new Error(`get_file_url answered ${JSON.stringify(download)} and ${JSON.stringify(upload)}`);
  return { home, downloadUrl: download.url, uploadUrl: upload.url, sha256, run };
}

/** The host directory (`<root>/<workspace>/home`) that holds a file named `name`, as test/support/processes.ts. */
function findWorkspaceHome(sandboxRoot, name) {
  for (const dir of readdirSync(sandboxRoot)) {
    const home = join(sandboxRoot, dir, 'home');
    try {
      if (readdirSync(home).includes(name)) return home;
    } catch {
      // not a workspace
    }
  }
  return undefined;
}

/** Every transfer of run 0 checked: the downloads' and uploads' bytes, by sha256 or, for cat's, by size. */
async function checkBytes(sandbox, got) {
  const { ours: down, cat: catDown } = got.download;
  if (down.transfer.sha256 !== sandbox.sha256)
    throw new Error(`the download's sha256 ${down.transfer.sha256} is not the file's ${sandbox.sha256}`);
  if (catDown.bytes !== FILE_BYTES) throw new Error(`cat's socket carried ${catDown.bytes} bytes`);
  const uploaded = (await sandbox.run(`sha256sum ${FILE_NAMES.upload}`)).split(' ')[0];
  if (uploaded !== uploadSha256()) throw new Error(`the uploaded file's sha256 ${uploaded} is not the body's`);
  const catUp = statSync(join(sandbox.home, FILE_NAMES.catUpload)).size;
  if (catUp !== FILE_BYTES) throw new Error(`cat wrote ${catUp} bytes from its socket`);
}

/** The sha256 of the upload body: MEGABYTE over and over. */
function uploadSha256() {
  const hash = createHash('sha256');
  for (let i = 0; i < FILE_BYTES / MEGABYTE.length; i += 1) hash.update(MEGABYTE);
  return hash.digest('hex');
}

const toTransfer = (bytes, startMs, extra = {}) => {
  const seconds = (performance.now() - startMs) / 1000;
  return { seconds, bytes, mbPerS: bytes / seconds / 1e6, ...extra };
};

/** GET of the download URL, the body counted (and hashed, with `hash`) as it arrives. */
async function downloadOurs(url, dispatcher, hash) {
  const digest = hash ? createHash('sha256') : undefined;
  const start = performance.now();
  const res = await request(url, { dispatcher });
  if (res.statusCode !== 200) throw new Error(`the download answered ${res.statusCode}: ${await res.body.text()}`);
  let bytes = 0;
  for await (const chunk of res.body) {
    bytes += chunk.length;
    digest?.update(chunk);
  }
  if (bytes !== FILE_BYTES) throw new Error(`the download carried ${bytes} bytes, not ${FILE_BYTES}`);
  return toTransfer(bytes, start, digest === undefined ? {} : { sha256: digest.digest('hex') });
}

/** PUT of FILE_BYTES to the upload URL, from MEGABYTE over and over; done when the answer is read. */
async function uploadOurs(url, dispatcher) {
  async function* body() {
    for (let i = 0; i < FILE_BYTES / MEGABYTE.length; i += 1) yield MEGABYTE;
  }
  const start = performance.now();
  const res = await request(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(FILE_BYTES) },
    body: body(),
    dispatcher,
  });
  const text = await res.body.text();
  if (res.statusCode !== 201 && res.statusCode !== 200)
    throw new Error(`the upload answered ${res.statusCode}: ${text}`);
  const { bytes } = JSON.parse(text);
  if (bytes !== FILE_BYTES) throw new Error(`the upload wrote ${bytes} bytes, not ${FILE_BYTES}`);
  return toTransfer(bytes, start);
}

/**
 * Runs `transfer()` while sampling the server's RSS; resolves with `{ transfer, rss }`, the RSS in MiB: before, the
 * highest sample, their difference, and the exact peak's (VmHWM) difference where it could be reset (else NaN).
 */
async function watchRss(pid, transfer) {
  const read = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readStatus(pid))?.[1]) / 1024;
  const before = read('VmRSS');
  let hwmReset = true;
  try {
    // 5 resets the peak RSS to the current one (proc(5), Linux 4.0).
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    hwmReset = false;
  }
  let peak = before;
  let samples = 0;
  const sample = () => {
    peak = Math.max(peak, read('VmRSS'));
    samples += 1;
  };
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  try {
    const result = await transfer();
    sample();
    const hwm = hwmReset ? read('VmHWM') : Number.NaN;
    return {
      transfer: result,
      rss: { beforeMiB: before, peakMiB: peak, growthMiB: peak - before, hwmGrowthMiB: hwm - before, samples },
    };
  } finally {
    clearInterval(timer);
  }
}

function readStatus(pid) {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * A node:net server on loopback that counts what each connection sends; `expect()` resolves with the next
 * connection's `{ bytes, atMs }`, `atMs` when FILE_BYTES had arrived (or at its end, if fewer did).
 */
function startCountingSink() {
  let waiting;
  const server = createServer((socket) => {
    const done = waiting;
    waiting = undefined;
    let bytes = 0;
    let atMs;
    socket.on('data', (chunk) => {
      bytes += chunk.length;
      if (bytes >= FILE_BYTES && atMs === undefined) atMs = performance.now();
    });
    socket.on('error', () => undefined);
    socket.on('end', () => {
      socket.destroy();
      done?.({ bytes, atMs: atMs ?? performance.now() });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve({
        port: server.address().port,
        expect: () =>
          new Promise((next) => {
            waiting = next;
          }),
        close: () => new Promise((closed) => server.close(() => closed())),
      });
    });
  });
}

/** `cat file` with its stdout a TCP socket to the sink; done when the sink counted FILE_BYTES. */
async function catToSocket(file, sink) {
  const received = sink.expect();
  const start = performance.now();
  const socket = connect(sink.port, '127.0.0.1');
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const exited = exitOf(spawn('cat', [file], { stdio: ['ignore', socket, 'pipe'] }), 'cat');
  try {
    await exited;
  } finally {
    // The child had its own copy of the socket; closing ours ends the connection.
    socket.destroy();
  }
  const { bytes, atMs } = await received;
  const seconds = (atMs - start) / 1000;
  return { seconds, bytes, mbPerS: bytes / seconds / 1e6 };
}

/**
 * FILE_BYTES from the bench process over a TCP socket into `cat > file` (the accepted socket its stdin, never read
 * here), MEGABYTE over and over as the upload of ours; done when cat exited. The file is removed first.
 */
async function socketToCat(file) {
  rmSync(file, { force: true });
  const server = createServer({ pauseOnConnect: true });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const start = performance.now();
    const accepted = new Promise((resolve) => server.once('connection', resolve));
    const client = connect(server.address().port, '127.0.0.1');
    client.on('error', () => undefined);
    const inbound = await accepted;
    const out = openSync(file, 'w');
    let exited;
    try {
      exited = exitOf(spawn('cat', [], { stdio: [inbound, out, 'pipe'] }), 'cat > file');
    } finally {
      closeSync(out);
    }
    try {
      await Promise.all([sendBody(client), exited]);
    } finally {
      inbound.destroy();
      client.destroy();
    }
    return toTransfer(statSync(file).size, start);
  } finally {
    await new Promise((closed) => server.close(() => closed()));
  }
}

/** Writes MEGABYTE to `socket` until FILE_BYTES went, minding its buffer, then ends it. */
async function sendBody(socket) {
  for (let i = 0; i < FILE_BYTES / MEGABYTE.length; i += 1) {
    if (!socket.write(MEGABYTE)) await new Promise((resolve) => socket.once('drain', resolve));
  }
  await new Promise((resolve) => socket.end(resolve));
}

/** Resolves when `child` exited 0; rejects with its stderr otherwise. */
function exitOf(child, label) {
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-1000);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${label} exited ${code}: ${stderr.slice(0, 300)}`)),
    );
  });
}
