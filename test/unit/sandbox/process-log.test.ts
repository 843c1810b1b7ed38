import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ProcessLog } from '../../../functions/mcp/sandbox/process-log';

describe('the capped process log', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plog-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps absolute offsets when it drops its oldest half past the cap', async () => {
    const log = new ProcessLog(join(dir, 'p1.log'), 100);
    for (let i = 0; i < 15; i += 1) await log.append(Buffer.from(`line ${String(i).padStart(3, '0')}\n`)); // 9 bytes each
    expect(log.totalBytes).toBe(135);
    const tail = await log.read(undefined, 18);
    expect(tail).toMatchObject({ text: 'line 013\nline 014\n', offset: 117, nextOffset: 135, totalBytes: 135 });
    expect(tail.droppedBytes).toBeGreaterThan(0);
    expect(readFileSync(join(dir, 'p1.log')).length).toBeLessThanOrEqual(100);
    // An offset in the dropped part starts at the oldest byte still kept.
    const fromStart = await log.read(0, 9);
    expect(fromStart.offset).toBe(tail.droppedBytes);
    expect(await log.read(fromStart.offset, 1000)).toMatchObject({ nextOffset: 135 });
  });
});
