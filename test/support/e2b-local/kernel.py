"""
The Python kernel of the local E2B code interpreter (test/support/e2b-local/interpreter.ts), one process per
context, started as `python3 kernel.py ipykernel_launcher <context-id>`: the word ipykernel_launcher is there
so that `pgrep -f ipykernel_launcher` finds it, as it finds Jupyter's kernels on E2B. Standard library only.

Protocol, JSON lines (ASCII) on the descriptors the kernel was started with:
  in  (stdin)  {"t": "init", "cwd"} once, then {"t": "execute", "id", "code", "env_vars"}
  out (stdout) {"t": "ready", "cwd"}, then per execution {"t": "start", "id", "execution_count"},
               {"t": "stream", "id", "name", "text", "timestamp"}, {"t": "display", "id", "data", "main"},
               {"t": "error", "id", "ename", "evalue", "traceback"} and last {"t": "done", "id"}
User code never reaches those descriptors: fd 0 becomes /dev/null, fds 1 and 2 become pipes whose bytes
(print, os.system, C extensions alike) are forwarded as stdout/stderr, and only a writer thread writes
protocol lines. SIGINT raises KeyboardInterrupt while user code runs and is ignored
otherwise (an interrupt that lands in the kernel's own code is deferred to the next safe point).
"""
import signal

STATE = {"busy": False, "pending": False, "redeliver": False, "async": 0, "exec_id": None, "count": 1}
KERNEL_FILE = (lambda: 0).__code__.co_filename
CELL_PREFIX = "Cell In["


def _in_user_code(frame):
    # The nearest frame that is either a cell's or this file's decides whose code the signal interrupted.
    while frame is not None:
        name = frame.f_code.co_filename
        if name == KERNEL_FILE:
            return False
        if name.startswith(CELL_PREFIX):
            return True
        frame = frame.f_back
    return True


def _on_sigint(_signum, frame):
    if not STATE["busy"]:
        STATE["pending"] = False
        return
    if STATE["async"] or _in_user_code(frame):
        STATE["pending"] = False
        raise KeyboardInterrupt
    # The kernel's own code was running: signal again shortly, for when user code (a sleep, say) runs again.
    STATE["pending"] = True
    if not STATE["redeliver"]:
        STATE["redeliver"] = True
        # The timer's thread starts with SIGINT blocked, as every helper thread runs: a process-directed SIGINT
        # it took instead of the main thread would leave the main thread's sleep running.
        unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            threading.Timer(0.02, _redeliver).start()  # imported below, long before any execution
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)


def _redeliver():
    STATE["redeliver"] = False
    if STATE["busy"] and STATE["pending"]:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


signal.signal(signal.SIGINT, _on_sigint)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

import ast  # noqa: E402
import base64  # noqa: E402
import builtins  # noqa: E402
import codecs  # noqa: E402
import datetime  # noqa: E402
import inspect  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import tokenize  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

CHUNK = 65536  # characters per stream message, and the buffered size that flushes at once
FLUSH_INTERVAL = 0.2  # seconds output waits to be coalesced, as ipykernel's OutStream does
SYNC_MARK = b"\x00e2b-local-kernel-sync\x00"
SYNC_TIMEOUT = 2.0
BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")
REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/pdf", "_repr_pdf_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
)


def _block_sigint():
    # Helper threads never take SIGINT, so it reaches the main thread and wakes its blocking calls.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _check_interrupt():
    if STATE["pending"]:
        STATE["pending"] = False
        raise KeyboardInterrupt


def _json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return repr(value)


class Channel:
    """Protocol lines out. Callers only enqueue whole lines, so an interrupt never leaves half a line."""

    def __init__(self, fd):
        self._fd = fd
        self._queue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="kernel-writer", daemon=True).start()

    def send(self, message):
        self._queue.put((json.dumps(message, default=_json_default) + "\n").encode("ascii"))

    def _run(self):
        _block_sigint()
        while True:
            view = memoryview(self._queue.get())
            try:
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError:
                os._exit(0)  # the server is gone


class Streams:
    """Buffered stdout/stderr text, sent as the current execution's stream messages."""

    def __init__(self, channel):
        self._channel = channel
        self._lock = threading.RLock()  # reentrant: a user's signal handler may print mid-write
        self._parts = []
        self._size = 0
        self._wake = threading.Event()
        threading.Thread(target=self._run, name="kernel-flusher", daemon=True).start()

    def append(self, name, text):
        with self._lock:
            self._parts.append((name, text))
            self._size += len(text)
            full = self._size >= CHUNK
        if full:
            self.flush()
        else:
            self._wake.set()

    def flush(self):
        with self._lock:
            parts, self._parts, self._size = self._parts, [], 0
            exec_id = STATE["exec_id"]
            if exec_id is None:
                return  # output after its execution ended is dropped, as E2B's server drops it
            merged = {}  # one message per stream per flush, as ipykernel's separate stdout/stderr buffers give
            for name, text in parts:
                merged.setdefault(name, []).append(text)
            stamp = datetime.datetime.now(datetime.timezone.utc).isoformat()
            for name, texts in merged.items():
                text = "".join(texts)
                for start in range(0, len(text), CHUNK):
                    piece = text[start:start + CHUNK]
                    self._channel.send({"t": "stream", "id": exec_id, "name": name, "text": piece, "timestamp": stamp})

    def _run(self):
        _block_sigint()
        while True:
            self._wake.wait()
            time.sleep(FLUSH_INTERVAL)
            self._wake.clear()
            self.flush()


class OutStream(io.TextIOBase):
    """sys.stdout / sys.stderr: text is written to the forwarded fd itself, so that it keeps its place among
    what subprocesses write there; flush() sends what has been written so far at once."""

    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, name, fd, watcher, streams):
        super().__init__()
        self.name = name
        self._fd = fd
        self._watcher = watcher
        self._streams = streams

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        view = memoryview(s.encode("utf-8", "backslashreplace"))
        while view:
            view = view[os.write(self._fd, view):]
        return len(s)

    def flush(self):
        self._watcher.sync()
        self._streams.flush()


class FdWatcher:
    """Makes `fd` a pipe and forwards what is written to it (subprocesses, C code) as the stream `name`."""

    def __init__(self, fd, name, streams):
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        self._fd = fd
        self._read_end = read_end
        self._name = name
        self._streams = streams
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._cond = threading.Condition()
        self._marks = 0
        threading.Thread(target=self._run, name="kernel-fd-%d" % fd, daemon=True).start()

    def sync(self):
        """Waits until everything written to the fd before now has been read (a mark goes through the pipe)."""
        with self._cond:
            target = self._marks + 1
        try:
            os.write(self._fd, SYNC_MARK)
        except OSError:
            return  # user code closed or replaced the fd
        deadline = time.monotonic() + SYNC_TIMEOUT
        with self._cond:
            while self._marks < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def _emit(self, data):
        text = self._decoder.decode(data)
        if text:
            self._streams.append(self._name, text)

    def _run(self):
        _block_sigint()
        pending = b""
        while True:
            try:
                chunk = os.read(self._read_end, 65536)
            except OSError:
                return
            if not chunk:
                return
            data = pending + chunk
            while True:
                at = data.find(SYNC_MARK)
                if at < 0:
                    break
                self._emit(data[:at])
                data = data[at + len(SYNC_MARK):]
                with self._cond:
                    self._marks += 1
                    self._cond.notify_all()
            keep = 0
            for size in range(min(len(SYNC_MARK) - 1, len(data)), 0, -1):
                if data.endswith(SYNC_MARK[:size]):
                    keep = size
                    break
            pending = data[len(data) - keep:] if keep else b""
            self._emit(data[:len(data) - keep])


class StdinNotImplementedError(NotImplementedError):
    """As ipykernel raises when code asks for input and the client allows none (E2B never does)."""


def _no_input(prompt=""):
    raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")


class Kernel:
    def __init__(self, channel, streams, watchers):
        self.channel = channel
        self.streams = streams
        self.watchers = watchers
        self.initial_env = dict(os.environ)
        self.loop = None
        self._own_module = sys.modules.get("__main__")  # this file's module, kept alive once replaced
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.ns = main.__dict__

    # ---- output -------------------------------------------------------------------------------------------

    def sync_output(self):
        for original in (sys.__stdout__, sys.__stderr__):
            try:
                original.flush()  # what code wrote through them sits in their buffer until then
            except Exception:
                pass
        for watcher in self.watchers:
            watcher.sync()
        self.streams.flush()

    def publish(self, data, main):
        self.sync_output()
        self.channel.send({"t": "display", "id": STATE["exec_id"], "data": data, "main": main})

    def display(self, *objs, **kwargs):
        raw = kwargs.get("raw", False)
        for obj in objs:
            self.publish(dict(obj) if raw and isinstance(obj, dict) else self.format_value(obj), False)
        _check_interrupt()

    def format_value(self, obj):
        """The MIME bundle of `obj`, as IPython's display formatter makes it (its _repr_*_ methods, then repr)."""
        data = {}
        if not isinstance(obj, type):
            bundle = self._call_repr(obj, "_repr_mimebundle_", include=None, exclude=None)
            if isinstance(bundle, tuple):
                bundle = bundle[0]
            if isinstance(bundle, dict):
                data.update((k, v) for k, v in bundle.items() if isinstance(k, str) and v is not None)
            for mime, method in REPR_METHODS:
                if mime not in data:
                    value = self._call_repr(obj, method)
                    if isinstance(value, tuple):
                        value = value[0]
                    if value is not None:
                        data[mime] = value
        for mime in BINARY_MIMES:
            if isinstance(data.get(mime), (bytes, bytearray)):
                data[mime] = base64.b64encode(bytes(data[mime])).decode("ascii")
        if "text/plain" not in data:
            try:
                data["text/plain"] = repr(obj)
            except Exception:
                traceback.print_exc()
        return data

    @staticmethod
    def _call_repr(obj, name, *args, **kwargs):
        try:
            method = getattr(obj, name, None)
        except Exception:
            return None
        if not callable(method):
            return None
        try:
            return method(*args, **kwargs)
        except Exception:
            traceback.print_exc()  # IPython shows a failing formatter on stderr and leaves its format out
            return None

    # ---- running code -------------------------------------------------------------------------------------

    def run_cell(self, code, filename):
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(code):
            last = ast.Expression(tree.body.pop().value)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        self._run(compile(tree, filename, "exec", flags=flags, dont_inherit=True))
        if last is not None:
            value = self._run(compile(last, filename, "eval", flags=flags, dont_inherit=True))
            if value is not None:
                self.ns["_"] = value
                self.publish(self.format_value(value), True)
        _check_interrupt()

    def _run(self, code):
        _check_interrupt()
        if not code.co_flags & inspect.CO_COROUTINE:
            return eval(code, self.ns)
        import asyncio

        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        STATE["async"] += 1
        try:
            task = self.loop.create_task(eval(code, self.ns))
            try:
                return self.loop.run_until_complete(task)
            except BaseException:
                task.cancel()
                try:
                    self.loop.run_until_complete(task)
                except BaseException:
                    pass
                raise
        finally:
            STATE["async"] -= 1

    def execute(self, request):
        exec_id = str(request.get("id"))
        code = request.get("code")
        code = code if isinstance(code, str) else ""
        env = request.get("env_vars") if isinstance(request.get("env_vars"), dict) else {}
        count = STATE["count"]
        blank = not code.strip()
        if not blank:
            STATE["count"] += 1
        self.channel.send({"t": "start", "id": exec_id, "execution_count": count})
        STATE["exec_id"] = exec_id
        filename = "%s%d]" % (CELL_PREFIX, count)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        self._apply_env(env)
        error = None
        try:
            try:
                STATE["pending"] = False
                STATE["async"] = 0
                STATE["busy"] = True
                if not blank:
                    self.run_cell(code, filename)
            finally:
                STATE["busy"] = False
        except BaseException as exc:  # SystemExit and KeyboardInterrupt included, as IPython reports them
            error = exc
        self._restore_env(env)
        self.sync_output()
        if error is not None:
            self.channel.send(dict({"t": "error", "id": exec_id}, **_describe_error(error)))
        STATE["exec_id"] = None
        self.channel.send({"t": "done", "id": exec_id})

    def _apply_env(self, env):
        for key, value in env.items():
            try:
                os.environ[str(key)] = str(value)
            except (ValueError, OSError):
                pass

    def _restore_env(self, env):
        # As E2B does afterwards: each variable back to the sandbox's own value, or unset.
        for key in env:
            key = str(key)
            try:
                if key in self.initial_env:
                    os.environ[key] = self.initial_env[key]
                else:
                    os.environ.pop(key, None)
            except (ValueError, OSError):
                pass


def _ends_with_semicolon(code):
    """IPython's rule: a trailing `;` (comments aside) hides the value of the last expression."""
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in skip]
    except (tokenize.TokenError, SyntaxError):
        return False
    return bool(tokens) and tokens[-1].string == ";"


def _describe_error(exc):
    """ename, evalue and a traceback in the layout of IPython's plain (NoColor) one, without the kernel's frames."""
    name = type(exc).__name__
    try:
        value = str(exc)
    except Exception:
        value = "<unprintable %s object>" % name
    if isinstance(exc, SyntaxError) and (exc.filename or "").startswith(CELL_PREFIX):
        return {"ename": name, "evalue": value, "traceback": "".join(traceback.format_exception_only(type(exc), exc))}
    lines = ["-" * 75, name.ljust(42) + "Traceback (most recent call last)"]
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == KERNEL_FILE:
            continue
        lineno = frame.lineno or 0
        if frame.filename.startswith(CELL_PREFIX):
            where = "%s, line %d" % (frame.filename, lineno)
            where += "" if frame.name == "<module>" else ", in %s()" % frame.name
        else:
            where = "File %s:%d, in %s()" % (frame.filename, lineno, frame.name)
        lines.append(where)
        for number in range(max(1, lineno - 2), lineno + 1):
            source = linecache.getline(frame.filename, number).rstrip("\n")
            if number == lineno:
                mark = str(number)
                lines.append("-" * (5 - len(mark)) + "> " + mark + " " + source)
            elif source:
                lines.append(str(number).rjust(7) + " " + source)
        lines.append("")
    lines.extend(line.rstrip("\n") for line in traceback.format_exception_only(type(exc), exc))
    return {"ename": name, "evalue": value, "traceback": "\n".join(lines)}


def _read_requests(fd, inbox):
    _block_sigint()
    with os.fdopen(fd, "rb") as requests:
        for line in requests:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                inbox.put(message)
    os._exit(0)  # stdin closed: the server is gone, and so is this kernel


def main():
    protocol_in, protocol_out, diagnostics = os.dup(0), os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    channel = Channel(protocol_out)
    streams = Streams(channel)
    watchers = [FdWatcher(1, "stdout", streams), FdWatcher(2, "stderr", streams)]
    sys.stdout = OutStream("stdout", 1, watchers[0], streams)
    sys.stderr = OutStream("stderr", 2, watchers[1], streams)
    sys.path[0] = ""  # the working directory, as IPython has it, not this file's directory
    kernel = Kernel(channel, streams, watchers)
    builtins.display = kernel.display
    builtins.input = _no_input
    inbox = queue.Queue()
    threading.Thread(target=_read_requests, args=(protocol_in, inbox), name="kernel-reader", daemon=True).start()

    while True:
        request = inbox.get()
        kind = request.get("t")
        if kind == "init":
            for cwd in (request.get("cwd"), "/home/user"):
                try:
                    os.chdir(str(cwd))
                    break
                except (OSError, TypeError, ValueError):
                    continue  # as on E2B, where a failing `%cd` leaves the kernel in /home/user
            channel.send({"t": "ready", "cwd": os.getcwd()})
        elif kind == "execute":
            try:
                kernel.execute(request)
            except BaseException:  # the kernel's own failure: say so, and keep serving
                STATE["busy"] = False
                os.write(diagnostics, traceback.format_exc().encode("utf-8", "replace"))
                exec_id = str(request.get("id"))
                STATE["exec_id"] = None
                failure = {"ename": "KernelError", "evalue": "the kernel failed", "traceback": ""}
                channel.send({"t": "error", "id": exec_id, **failure})
                channel.send({"t": "done", "id": exec_id})


if __name__ == "__main__":
    main()
