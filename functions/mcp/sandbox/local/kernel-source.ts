/**
 * The Python side of the stateful `run_code` kernel. It talks to the server over fd 3 (a socket pair):
 * requests `{"id", "code", "timeout_s"}` and `{"interrupt": true}` in, JSON frames out. User output goes
 * to the ordinary stdout/stderr pipes; a marker line on each closes an execution's output.
 *
 * The program is kernel.py beside this file, imported as its text (esbuild's `text` loader in build.mjs;
 * test/support/text-transform.js under jest), so that it is edited and checked as Python.
 */
import source from './kernel.py';

export const KERNEL_SOURCE: string = source;
