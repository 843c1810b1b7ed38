// What a server's JS heap holds for its own data, from a V8 heap snapshot (written by bench/harness/gc-on-signal.cjs
// with BENCH_HEAP_SNAPSHOT_DIR): the self sizes of every node but the engine's own (compiled code and its metadata,
// hidden internals, object shapes), which grow as V8 compiles more of the server whatever the server holds, and
// which the heap's totals cannot tell apart from data.
import { readFileSync, rmSync } from 'node:fs';

/** Node types of a snapshot that are the engine's, not the program's data. */
const ENGINE_TYPES = new Set(['code', 'hidden', 'object shape']);

/** The bytes of data in the snapshot at `path` (objects, arrays, closures, strings, buffers, ...); deletes the file. */
export function readHeapDataBytes(path) {
  try {
    const { snapshot, nodes } = JSON.parse(readFileSync(path, 'utf8'));
    const fields = snapshot.meta.node_fields;
    const types = snapshot.meta.node_types[0];
    const typeAt = fields.indexOf('type');
    const sizeAt = fields.indexOf('self_size');
    let bytes = 0;
    for (let i = 0; i < nodes.length; i += fields.length) {
      if (!ENGINE_TYPES.has(types[nodes[i + typeAt]])) bytes += nodes[i + sizeAt];
    }
    return bytes;
  } finally {
    rmSync(path, { force: true });
  }
}
