/**
 * The Python side of a sandbox's supervisor (supervisor.ts): one process per sandbox, started once inside the
 * sandbox (its cgroups, rlimits, user and namespaces), that starts every later process of the sandbox with a
 * fork and an exec. So the sandbox's processes share one network (a server started in the background is
 * reachable from the next command), and a command costs one fork instead of a launcher chain and a new
 * bubblewrap. Python 3.7 and its standard library only (FC's custom.debian10 image).
 *
 * Frames both ways on stdin/stdout: a 10-byte header (payload length u32, kind u8, process id u32, fd u8, big
 * endian), then the payload. In: SPAWN (JSON {argv, cwd, env, stdin, channel}), DATA (bytes for the process's
 * fd 0 or 3), EOF (close that fd), SIGNAL (a signal number, to the process's group), PROBE (a TCP port). Out:
 * SPAWNED (JSON {pid} or {error, message}), DATA and EOF (its fd 1, 2 or 3), EXIT (JSON {code, signal}, sent
 * once the process exited and its output was read, or PIPE_DRAIN_S after), PROBED ("1" when something accepts).
 *
 * Streams (a preview's forwarded connections, preview-forwarder.ts): CONNECT (a TCP port) opens a socket to
 * 127.0.0.1 there, in the sandbox's own network, answered by CONNECTED (empty, or an errno name). Then DATA and
 * EOF (fd 0) go both ways, ACK (a byte count) says how many bytes the other side passed on, and CLOSE ends the
 * stream at once. No more than WINDOW bytes a side has not acknowledged are ever sent, each way; the socket is
 * not read while that many are out, so a slow reader on the host holds the sandbox's sender, not memory.
 * See supervisor-frames.ts for the kinds and the window.
 *
 * The program is supervisor.py beside this file, imported as its text (esbuild's `text` loader in build.mjs;
 * test/support/text-transform.js under jest), so that it is edited and checked as Python.
 */
import source from './supervisor.py';

export const SUPERVISOR_SOURCE: string = source;
