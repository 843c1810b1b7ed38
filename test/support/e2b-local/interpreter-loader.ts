/**
 * The code interpreter (the Jupyter-like server on port 49999 of E2B's code-interpreter templates), loaded
 * from interpreter.ts on first use: only code-interpreter sandboxes that run code need it. Its contract:
 * `createInterpreter(spawn, { flavor })` gives a per-sandbox handler of `/execute` and `/contexts...` whose
 * processes run in the sandbox through `spawn`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { SpawnInSandbox } from './sandbox-runtime';

export type Flavor = 'e2b' | 'alibaba';

export interface Interpreter {
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  stop(): Promise<void>;
}

export type CreateInterpreter = (spawn: SpawnInSandbox, options: { flavor: Flavor }) => Interpreter;

let loaded: Promise<CreateInterpreter> | undefined;

/** `createInterpreter` from ./interpreter, loaded once. */
export function loadCreateInterpreter(): Promise<CreateInterpreter> {
  loaded ??= import('./interpreter').then((mod): CreateInterpreter => mod.createInterpreter);
  return loaded;
}
