/**
 * Runs `node scripts/deploy.js …` as a child process, the way an operator does, in a clean environment, and
 * makes a fresh output directory per test.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { parse } from 'yaml';

import type { Fc3Props } from './fc3-rules';

export const ROOT = resolve(__dirname, '../..');
export const DEPLOY_SCRIPT = join(ROOT, 'scripts/deploy.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunCliOptions {
  /** Variables added to a clean environment (PATH, HOME, and the ECS metadata lookup turned off). */
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}

/** Runs the CLI and resolves with its exit code and output (never rejects on a non-zero exit). */
export function runDeployCli(args: readonly string[], options: RunCliOptions = {}): Promise<CliRun> {
  // The credential chain's last links would ask the ECS metadata service (a network address): never from a test.
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    ALIBABA_CLOUD_ECS_METADATA_DISABLED: 'true',
    ...options.env,
  };
  return new Promise((resolveRun, reject) => {
    execFile(
      process.execPath,
      [DEPLOY_SCRIPT, ...args],
      {
        cwd: options.cwd ?? ROOT,
        env,
        timeout: options.timeoutMs ?? 90_000,
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== 'number') return reject(err);
        resolveRun({ code: err === null ? 0 : Number(err.code), stdout, stderr });
      },
    );
  });
}

const madeDirs: string[] = [];

/** A fresh temporary directory, removed after the test file. */
export function makeTempDir(prefix = 'deploy-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

/** Removes the directories made by makeTempDir (call in afterAll). */
export function removeTempDirs(): void {
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Parses a YAML file of the artifact. */
export function readYaml(path: string): Record<string, unknown> {
  const value: unknown = parse(readFileSync(path, 'utf8'));
  if (typeof value !== 'object' || value === null) throw new Error(`${path} is not a YAML mapping`);
  return value as Record<string, unknown>;
}

/** The fc3 props of the `mcp` resource of an s.yaml document (checked by fc3-rules.ts, typed here for reading). */
export function fc3Props(sYaml: Record<string, unknown>): Fc3Props {
  const resources = sYaml.resources;
  const mcp = typeof resources === 'object' && resources !== null && 'mcp' in resources ? resources.mcp : undefined;
  if (
    typeof mcp !== 'object' ||
    mcp === null ||
    !('component' in mcp) ||
    mcp.component !== 'fc3' ||
    !('props' in mcp)
  ) {
    throw new Error('s.yaml has no fc3 resource named mcp');
  }
  return mcp.props as Fc3Props;
}

/** Resolves `${vars.NAME}` strings in the props from the document's `vars`, as `s` does. */
export function resolveVars(props: Fc3Props, sYaml: Record<string, unknown>): Fc3Props {
  const vars = typeof sYaml.vars === 'object' && sYaml.vars !== null ? (sYaml.vars as Record<string, unknown>) : {};
  const text = JSON.stringify(props).replace(/"\$\{vars\.([A-Za-z0-9_]+)\}"/g, (whole, name: string) =>
    name in vars ? JSON.stringify(vars[name]) : whole,
  );
  return JSON.parse(text) as Fc3Props;
}
