/** The one byte range of a download (functions/mcp/files/byte-range.ts), against a 1000-byte file. */
import { toRange } from '../../../functions/mcp/files/byte-range';

const SIZE = 1000;

it.each([
  [null, { kind: 'whole' }],
  ['bytes=0-99', { kind: 'part', start: 0, end: 99 }],
  ['bytes=900-', { kind: 'part', start: 900, end: 999 }],
  ['bytes=900-5000', { kind: 'part', start: 900, end: 999 }],
  ['bytes=-10', { kind: 'part', start: 990, end: 999 }],
  ['bytes=-5000', { kind: 'part', start: 0, end: 999 }],
  [' Bytes = 5 - 6 ', { kind: 'part', start: 5, end: 6 }],
  ['bytes=1000-', { kind: 'unsatisfiable' }],
  ['bytes=-0', { kind: 'unsatisfiable' }],
  ['bytes=99999999999999999999-', { kind: 'unsatisfiable' }],
  // Several ranges, another unit, a backwards range or nonsense: the whole file, as the RFC allows.
  ['bytes=0-1,5-6', { kind: 'whole' }],
  ['items=0-1', { kind: 'whole' }],
  ['bytes=9-1', { kind: 'whole' }],
  ['bytes=-', { kind: 'whole' }],
  ['garbage', { kind: 'whole' }],
])('%p → %p', (header, expected) => {
  expect(toRange(header, SIZE)).toEqual(expected);
});

it('has no part of an empty file', () => {
  expect(toRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
  expect(toRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
});
