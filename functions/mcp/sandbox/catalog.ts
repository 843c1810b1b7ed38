/**
 * The catalog of a backend's sandboxes by owner: what `list_sandboxes`, `open_sandbox` and `delete_sandbox` read
 * and change, and what deletes sandboxes past their retention. The truth lives with the backend: sandbox records in
 * a directory every instance shares (record-catalog.ts: the local root, or E2B_STATE_DIR), or E2B's own listing by
 * metadata (e2b/listing-catalog.ts). Each backend says which.
 */
import { AppError } from '../errors';

/** Where a backend finds its sandboxes again: shared records, E2B's listing, or nowhere beyond this instance. */
export type CatalogSource = 'records' | 'listing' | 'none';

/** A sandbox of an owner, as list_sandboxes shows it. */
export interface SandboxSummary {
  /** The sandbox tag (toSandboxTag of its key). */
  readonly tag: string;
  /** Named sandboxes: the name, and the key their handles are signed for. */
  readonly name?: string;
  readonly key?: string;
  /** The backend's id. */
  readonly sandboxId?: string;
  readonly state: 'running' | 'sleeping';
  readonly createdMs: number;
  readonly lastUsedMs: number;
  /** Bytes of disk its files take, where the backend can tell. */
  readonly diskBytes?: number;
  /** When it is deleted unless used before. */
  readonly deleteAtMs: number;
  /** E2B: its template, and the snapshot a fork was made from (deleted with it). */
  readonly template?: string;
  readonly snapshotId?: string;
}

/** A sandbox that went to make room under an owner's caps, as the result that made it says. */
export interface MadeRoom {
  readonly deleted: readonly SandboxSummary[];
  /** The setting whose cap was reached. */
  readonly setting: string;
}

/** The sandboxes of a backend, by owner. `principal` is always the caller's: one owner never reaches another's. */
export interface SandboxCatalog {
  readonly source: CatalogSource;
  /** The owner's sandboxes, the most recently used first. */
  list(principal: string): Promise<SandboxSummary[]>;
  /** The owner's sandbox named `name`, if any. */
  findNamed(principal: string, name: string): Promise<SandboxSummary | undefined>;
  /** Reserves `name` for the sandbox of `key`: false when another sandbox of the owner holds it. */
  claimName(principal: string, name: string, key: string): Promise<boolean>;
  /** Lets go of a name claimed for `key` whose sandbox was never made. */
  releaseName(principal: string, name: string, key: string): Promise<void>;
  /** Deletes a sandbox that no instance has open here (asleep, or running elsewhere), and forgets it. */
  delete(principal: string, sandbox: SandboxSummary): Promise<void>;
  /**
   * Deletes the owner's least recently used sleeping sandboxes until the caps hold once every sandbox of the owner
   * that runs now, and `adding` about to be made, sleeps too; says which went.
   */
  makeRoom(principal: string, adding: number): Promise<MadeRoom | undefined>;
  /** A 2025 session now works in the named sandbox of `key` (open_sandbox), until `untilMs`. */
  bindSession(
    principal: string,
    sessionKey: string,
    binding: { key: string; name: string; untilMs: number },
  ): Promise<void>;
  /** The named sandbox a session works in, if it chose one. */
  boundSession(principal: string, sessionKey: string): Promise<{ key: string; name: string } | undefined>;
  unbindSession(principal: string, sessionKey: string): Promise<void>;
}

/**
 * The catalog of a backend that cannot find its sandboxes again (E2B without a listing or E2B_STATE_DIR): it holds
 * nothing, and listing or naming sandboxes fails with `reason`, which names the setting that would make it work.
 */
export function createNoCatalog(reason: string): SandboxCatalog {
  const refuse = async (): Promise<never> => {
    throw new AppError('sandbox_error', reason);
  };
  return {
    source: 'none',
    list: refuse,
    findNamed: refuse,
    claimName: refuse,
    releaseName: async () => undefined,
    delete: async () => undefined,
    makeRoom: async () => undefined,
    bindSession: async () => undefined,
    boundSession: async () => undefined,
    unbindSession: async () => undefined,
  };
}
