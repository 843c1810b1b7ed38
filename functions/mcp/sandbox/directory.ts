/**
 * What a tool call may do with its owner's sandboxes besides the one it works in: list them, open one by its name
 * (creating or copying it), name the one it works in, delete one. The tools (open_sandbox, list_sandboxes,
 * name_sandbox, delete_sandbox, sandbox_status) use it through their context; sessions/sandbox-directory.ts makes it
 * for each call, for the era the call comes in (a 2025 session moves to the sandbox it opens; a 2026-07-28 call
 * gets the sandbox's handle back).
 */
import type { CatalogSource, MadeRoom, SandboxSummary } from './catalog';
import type { SleepState } from './records';
import type { SleepMode } from './types';

/** A sandbox in the owner's list. */
export interface ListedSandbox extends SandboxSummary {
  /** The sandbox this call works in. */
  readonly current: boolean;
}

/** What open_sandbox asks for. */
export interface OpenRequest {
  readonly name: string;
  /** E2B: the template of a sandbox it creates. */
  readonly template?: string;
  /** The name of another of the owner's sandboxes to copy (a fork). */
  readonly from?: string;
}

/** How a sandbox was opened. */
export type OpenedHow = 'created' | 'running' | 'woken' | 'forked' | 'replaced';

/** What open_sandbox and name_sandbox did. */
export interface Opened {
  readonly name: string;
  readonly sandboxId: string;
  readonly how: OpenedHow;
  /** What survived its sleep, or that its earlier sandbox was gone (what the model reads first). */
  readonly notice?: string;
  /** Woken: what its sleep kept. */
  readonly woke?: SleepState;
  /** Sleeping sandboxes deleted to make room under the owner's caps. */
  readonly madeRoom?: MadeRoom;
}

/** What delete_sandbox did. */
export interface Deleted {
  readonly name: string;
  readonly sandboxId?: string;
  /** The call was working in it: the next call needs open_sandbox (or, 2026-07-28, the new handle). */
  readonly wasCurrent: boolean;
}

/** The owner's sandboxes, as one call sees and changes them. */
export interface SandboxDirectory {
  /** The name of the sandbox the call works in, if it has one. */
  currentName(): string | undefined;
  /** How sandboxes sleep on this backend, and where they are found again. */
  sleepMode(): SleepMode;
  source(): CatalogSource;
  /** When the sandbox the call works in is deleted unless used (`undefined` when the backend cannot tell). */
  deleteAtMs(): number | undefined;
  list(): Promise<ListedSandbox[]>;
  open(request: OpenRequest): Promise<Opened>;
  /** Gives the sandbox the call works in the name `name` (a copy is made under it, and the call moves there). */
  name(name: string): Promise<Opened>;
  delete(name: string): Promise<Deleted>;
}
