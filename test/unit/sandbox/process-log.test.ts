import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  extentOf,
  extentOfSegments,
  LOG_SEGMENT_BYTES,
  pageOf,
  segmentRanges,
} from '../../../functions/mcp/sandbox/log-segments';
import { ProcessLog } from '../../../functions/mcp/sandbox/process-log';

const SEG = LOG_SEGMENT_BYTES;

describe('the log segment policy shared by both backends', () => {
  it('drops whole segments once one fills: the tail kept is at least one segment and under two', () => {
    expect(extentOf(0)).toEqual({ totalBytes: 0, droppedBytes: 0 });
    expect(extentOf(SEG - 1)).toEqual({ totalBytes: SEG - 1, droppedBytes: 0 });
    expect(extentOf(SEG)).toEqual({ totalBytes: SEG, droppedBytes: 0 });
    expect(extentOf(2 * SEG - 1)).toEqual({ totalBytes: 2 * SEG - 1, droppedBytes: 0 });
    expect(extentOf(2 * SEG)).toEqual({ totalBytes: 2 * SEG, droppedBytes: SEG });
    expect(extentOf(5 * SEG + 7)).toEqual({ totalBytes: 5 * SEG + 7, droppedBytes: 4 * SEG });
  });

  it('counts from the newest segment found, whatever the order or an empty newest one', () => {
    expect(extentOfSegments([])).toEqual({ totalBytes: 0, droppedBytes: 0 });
    expect(
      extentOfSegments([
        { index: 3, size: 10 },
        { index: 2, size: SEG },
      ]),
    ).toEqual({ totalBytes: 3 * SEG + 10, droppedBytes: 2 * SEG });
    expect(
      extentOfSegments([
        { index: 1, size: SEG },
        { index: 2, size: 0 },
      ]),
    ).toEqual({ totalBytes: 2 * SEG, droppedBytes: SEG });
  });

  it('pages the tail by default and clamps an offset into what is kept', () => {
    const extent = extentOf(2 * SEG + 100);
    expect(pageOf(extent, undefined, 50)).toEqual({ from: 2 * SEG + 50, length: 50 });
    expect(pageOf(extent, 0, 10)).toEqual({ from: SEG, length: 10 });
    expect(pageOf(extent, 3 * SEG, 10)).toEqual({ from: 2 * SEG + 100, length: 0 });
    expect(pageOf(extentOf(5), undefined, 50)).toEqual({ from: 0, length: 5 });
  });

  it('splits a range across segments', () => {
    expect(segmentRanges(SEG - 3, 10)).toEqual([
      { index: 0, start: SEG - 3, length: 3 },
      { index: 1, start: 0, length: 7 },
    ]);
    expect(segmentRanges(5, 0)).toEqual([]);
  });
});

describe('the local process log', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'plog-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the tail in two segments with absolute offsets, and another instance reads what it left', async () => {
    const log = await ProcessLog.create(dir, 'p1');
    const line = Buffer.from('0123456789abcdef'.repeat(64 * 1024)); // 1 MiB
    for (let i = 0; i < 9; i += 1) await log.append(line);
    await log.append(Buffer.from('the end\n'));
    const total = 9 * 1024 * 1024 + 8;
    expect(log.totalBytes).toBe(total);
    expect(readdirSync(dir).sort()).toEqual(['p1.log.1', 'p1.log.2']);

    const tail = await log.read(undefined, 12);
    expect(tail).toEqual({
      text: 'cdefthe end\n',
      offset: total - 12,
      nextOffset: total,
      totalBytes: total,
      droppedBytes: SEG,
    });
    // An offset in the dropped part starts at the oldest byte kept; a page may cross segments.
    expect(await log.read(0, 4)).toMatchObject({ text: '0123', offset: SEG, nextOffset: SEG + 4 });
    expect((await log.read(2 * SEG - 2, 4)).text).toBe('ef01');

    const reopened = await ProcessLog.open(dir, 'p1');
    expect(reopened?.totalBytes).toBe(total);
    expect((await reopened?.read(undefined, 8))?.text).toBe('the end\n');
    expect(await ProcessLog.open(dir, 'p2')).toBeUndefined();
  });
});
