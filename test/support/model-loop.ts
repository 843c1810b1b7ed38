/**
 * A model-like loop: on the 2026-07-28 lane each call passes the handle it read from the previous result's first
 * text line ("sandbox: <handle>"), as a model reading the text would, and nothing else carries state; on a 2025
 * revision the session carries it. Python state and files must survive every call.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

export interface ModelLoopOutcome {
  /** The distinct handles the loop saw (one, when the sandbox was kept). */
  handles: Set<string>;
  /** Python's counter after the loop's increments, as the last run_code printed it. */
  counter: string;
  /** The lines the loop appended to a file, read back at the end. */
  notes: string;
  /** How many increments and appends the loop made. */
  increments: number;
  appends: number;
}

/**
 * Runs `calls` calls (alternating run_code and run_command) against the server at `url`, then reads back: in the
 * `modern` era pinned to 2026-07-28 (handles), in the `legacy` era on the newest 2025 revision (one session).
 */
export async function runModelLoop(
  url: string,
  token: string,
  era: 'modern' | 'legacy' = 'modern',
  calls = 20,
): Promise<ModelLoopOutcome> {
  const modern = era === 'modern';
  const client = new Client(
    { name: 'model-loop', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: modern ? { pin: '2026-07-28' } : 'legacy' } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  const handles = new Set<string>();
  let handle: string | undefined;
  const call = async (name: string, args: Record<string, unknown>): Promise<Result> => {
    const result = (await client.callTool({
      name,
      arguments: handle === undefined ? args : { ...args, sandbox: handle },
    })) as Result;
    if (result.isError === true) throw new Error(`${name} failed: ${result.content.map((c) => c.text).join('\n')}`);
    const firstLine = result.content[0]?.text?.split('\n')[0] ?? '';
    const read = /^sandbox: (\S+)$/.exec(firstLine)?.[1];
    if (!modern) {
      if (read !== undefined || result.structuredContent?.sandbox !== undefined)
        throw new Error(`a 2025-era result carries a sandbox handle: ${firstLine}`);
      return result;
    }
    if (read === undefined || read !== result.structuredContent?.sandbox)
      throw new Error(`no handle on the first line of ${name}'s result: ${firstLine}`);
    handle = read;
    handles.add(read);
    return result;
  };
  let increments = 0;
  let appends = 0;
  try {
    await call('run_code', { code: 'n = 0' });
    for (let i = 1; i < calls - 1; i++) {
      if (i % 2 === 1) {
        await call('run_code', { code: 'n += 1' });
        increments += 1;
      } else {
        await call('run_command', { command: `echo line-${i} >> notes.txt` });
        appends += 1;
      }
    }
    const last = await call('run_code', { code: 'n' });
    const counter = String((last.structuredContent?.results as Array<{ text?: string }> | undefined)?.[0]?.text);
    const notes = String((await call('read_file', { path: 'notes.txt' })).structuredContent?.content);
    return { handles, counter, notes, increments, appends };
  } finally {
    await client.close();
  }
}

/** The notes a loop of `appends` appends leaves: line-2, line-4, … */
export function expectedNotes(appends: number): string {
  return Array.from({ length: appends }, (_, i) => `line-${2 * (i + 1)}\n`).join('');
}

/** A 2026-07-28 client that carries state as a model does: the handle each result's first line names. */
export interface ModelLikeClient {
  /** Calls a tool with the handle the last result named (none at first), and keeps the one this result names. */
  call(name: string, args?: Record<string, unknown>): Promise<Result>;
  /** The handle the last result named. */
  readonly handle: string | undefined;
  close(): Promise<void>;
}

/** Connects a model-like 2026-07-28 client to `url`. */
export async function connectModelLike(url: string, token: string): Promise<ModelLikeClient> {
  const client = new Client(
    { name: 'model-like', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  let handle: string | undefined;
  return {
    get handle() {
      return handle;
    },
    async call(name, args = {}) {
      const result = (await client.callTool({
        name,
        arguments: handle === undefined ? args : { ...args, sandbox: handle },
      })) as Result;
      handle = /^sandbox: (\S+)$/.exec(result.content[0]?.text?.split('\n')[0] ?? '')?.[1] ?? handle;
      return result;
    },
    close: () => client.close(),
  };
}
