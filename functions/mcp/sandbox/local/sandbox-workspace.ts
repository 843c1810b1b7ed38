/**
 * One open sandbox's workspace: its files, through the walkers that no sandbox process can race (files.ts); the
 * last-used marker every instance sharing the root reads; and its end, deleted with its disk or let go.
 */
import { stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { Clock } from '../../clock';
import type {
  FileSource,
  ListFilesRequest,
  ListFilesResult,
  ReadFileResult,
  ReceivedFile,
  ReceiveFileRequest,
} from '../types';
import { openWorkspaceFile, receiveWorkspaceFile } from './file-streams';
import { listWorkspaceFiles, readWorkspaceFile, writeWorkspaceFile } from './files';
import { removeWorkspace, type Workspace } from './workspace';

export class SandboxWorkspace {
  /** When this instance last marked the sandbox used (undefined: not yet, e.g. just re-attached). */
  private touchedMs: number | undefined;

  /** When this instance last marked the sandbox used, if it did. */
  get lastTouchMs(): number | undefined {
    return this.touchedMs;
  }

  constructor(
    readonly workspace: Workspace,
    private readonly clock: Clock,
  ) {}

  readFile(path: string, maxBytes: number): Promise<ReadFileResult> {
    return readWorkspaceFile(this.workspace, path, maxBytes);
  }

  writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
    return writeWorkspaceFile(this.workspace, path, data);
  }

  listFiles(req: ListFilesRequest): Promise<ListFilesResult> {
    return listWorkspaceFiles(this.workspace, req);
  }

  openFile(path: string): Promise<FileSource> {
    return openWorkspaceFile(this.workspace, path);
  }

  receiveFile(req: ReceiveFileRequest): Promise<ReceivedFile> {
    return receiveWorkspaceFile(this.workspace, req);
  }

  /** Marks the sandbox used now, for every instance that shares the workspace root. */
  touch(): void {
    this.touchedMs = this.clock.now();
    const now = new Date(this.touchedMs);
    // Dated by the clock even when first written (the sweep compares it with the clock: workspace-sweep.ts).
    void utimes(this.usedMarker, now, now).catch(() =>
      writeFile(this.usedMarker, '')
        .then(() => utimes(this.usedMarker, now, now))
        .catch(() => undefined),
    );
  }

  /** The marker's time when another instance (sharing the workspace root) touched it after this one did. */
  lastUseElsewhereMs(): Promise<number | undefined> {
    return stat(this.usedMarker).then(
      (info) => (this.touchedMs === undefined || info.mtimeMs > this.touchedMs + 1 ? info.mtimeMs : undefined),
      () => undefined,
    );
  }

  /** Deletes the workspace, its disk image with it. Once nothing runs in it. */
  remove(): Promise<void> {
    return removeWorkspace(this.workspace);
  }

  /**
   * Lets go of its disk image, once nothing runs in it: the last holder unmounts it and frees its loop device,
   * and the next open mounts it again.
   */
  async release(): Promise<void> {
    await this.workspace.disk?.release();
  }

  private get usedMarker(): string {
    return join(this.workspace.dir, 'last-used');
  }
}
