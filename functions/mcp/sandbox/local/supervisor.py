
import errno, json, os, selectors, signal, socket, struct, subprocess, time

SPAWN, DATA, EOF, SIGNAL, PROBE, SPAWNED, EXIT, PROBED = 1, 2, 3, 4, 5, 6, 7, 8
CONNECT, CONNECTED, ACK, CLOSE, ACCEPTED = 9, 10, 11, 12, 13
HEADER = struct.Struct(">IBIB")
PIPE_DRAIN_S = 1.0
CHUNK = 65536
WINDOW = 262144
CONNECT_S = 10.0
# Connections to the egress listener get keys of their own (the top bit set), apart from the server's.
ACCEPTED_KEY = 0x80000000
MAX_ACCEPTED = 64
EGRESS_PORT = int(os.environ.get("SANDBOX_EGRESS_PORT", "0"))

# fd 3 is where a spawned process finds its channel: /dev/null holds it between spawns, so nothing else is
# opened there, and HOLD puts it back after each.
HOLD = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
if HOLD == 3:
    HOLD = os.dup(3)
else:
    os.dup2(HOLD, 3, inheritable=False)

try:
    with open("/proc/self/comm", "w") as f:
        f.write("sandbox-init")
except OSError:
    pass

os.set_blocking(1, True)
sel = selectors.DefaultSelector()
procs = {}
by_pid = {}
probes = []
streams = {}
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)

def send(kind, pid, fd, payload=b""):
    data = HEADER.pack(len(payload), kind, pid, fd) + payload
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(1, view):]
        except InterruptedError:
            pass

class Proc:
    def __init__(self, key):
        self.key = key
        self.pid = None
        self.readers = {}
        self.writers = {}
        self.pending = {}
        self.closing = set()
        self.status = None
        self.drain_until = None
        # Per output fd: bytes sent to the server and not yet acknowledged; a reader at WINDOW is not watched.
        self.unacked = {}
        self.paused = set()

def watch_reader(proc, fd):
    # Read while the server may take more: at most WINDOW bytes of one fd are on their way unacknowledged.
    stream = proc.readers.get(fd)
    if stream is None:
        return
    if proc.unacked.get(fd, 0) < WINDOW:
        if fd in proc.paused:
            proc.paused.discard(fd)
            sel.register(stream, selectors.EVENT_READ, ("r", proc, fd))
    elif fd not in proc.paused:
        proc.paused.add(fd)
        sel.unregister(stream)

def on_read(proc, fd, stream):
    room = WINDOW - proc.unacked.get(fd, 0)
    if room <= 0:
        return
    try:
        data = os.read(stream, min(CHUNK, room))
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if data:
        proc.unacked[fd] = proc.unacked.get(fd, 0) + len(data)
        send(DATA, proc.key, fd, data)
        watch_reader(proc, fd)
        return
    close_reader(proc, fd)
    maybe_exit(proc)

def close_reader(proc, fd):
    stream = proc.readers.pop(fd, None)
    if stream is None:
        return
    if fd in proc.paused:
        proc.paused.discard(fd)
    else:
        sel.unregister(stream)
    os.close(stream)
    send(EOF, proc.key, fd)

def flush(proc, fd):
    stream = proc.writers.get(fd)
    if stream is None:
        return
    buf = proc.pending.get(fd, b"")
    written = 0
    while buf:
        try:
            n = os.write(stream, buf)
        except BlockingIOError:
            break
        except OSError:
            # Nobody reads it any more: what is left counts as passed on, so the server's writer is not held.
            n = len(buf)
            proc.closing.add(fd)
        buf = buf[n:]
        written += n
    proc.pending[fd] = buf
    if written:
        # The server sends at most WINDOW bytes of one input before this says how many went in.
        send(ACK, proc.key, fd, str(written).encode())
    # A writer's descriptor is only ever watched for writing (the channel's reading side is a dup of its own).
    watching = stream in sel.get_map()
    if buf and not watching:
        sel.register(stream, selectors.EVENT_WRITE, ("w", proc, fd))
    elif not buf and watching:
        sel.unregister(stream)
    if not buf and fd in proc.closing:
        close_writer(proc, fd)

def close_writer(proc, fd):
    stream = proc.writers.pop(fd)
    proc.pending.pop(fd, None)
    if stream in sel.get_map():
        sel.unregister(stream)
    if fd == 3:
        # The channel is a socket the process also writes to: only this direction ends.
        try:
            socket.socket(fileno=os.dup(stream)).shutdown(socket.SHUT_WR)
        except OSError:
            pass
    os.close(stream)

def spawn(key, spec):
    proc = Proc(key)
    theirs = []
    try:
        if spec.get("stdin"):
            r, w = os.pipe()
            theirs.append(r)
            proc.writers[0] = w
            stdin = r
        else:
            stdin = subprocess.DEVNULL
        outs = []
        for fd in (1, 2):
            r, w = os.pipe()
            theirs.append(w)
            outs.append(w)
            proc.readers[fd] = r
        if spec.get("channel"):
            mine, other = socket.socketpair()
            theirs.append(other.detach())
            # Two descriptors of one socket: the selector watches reading and writing apart.
            proc.readers[3] = mine.detach()
            proc.writers[3] = os.dup(proc.readers[3])
            # The child finds it on fd 3 (held by /dev/null between spawns, so nothing else takes it).
            os.dup2(theirs[-1], 3)
        try:
            # Errors starting the program (not found, a bad cwd) come back here as OSError.
            child = subprocess.Popen(spec["argv"], stdin=stdin, stdout=outs[0], stderr=outs[1], cwd=spec["cwd"],
                                     env=spec["env"], start_new_session=True,
                                     pass_fds=(3,) if spec.get("channel") else (), close_fds=True)
        finally:
            if spec.get("channel"):
                os.dup2(HOLD, 3, inheritable=False)
            for stream in theirs:
                os.close(stream)
    except OSError as e:
        for stream in set(proc.readers.values()) | set(proc.writers.values()):
            os.close(stream)
        failure = {"error": errno.errorcode.get(e.errno, "EIO"), "message": e.strerror or str(e)}
        send(SPAWNED, key, 0, json.dumps(failure).encode())
        return
    # Reaped below with waitpid, not by the Popen object.
    child.returncode = 0
    proc.pid = child.pid
    procs[key] = proc
    by_pid[proc.pid] = proc
    for fd, stream in proc.readers.items():
        os.set_blocking(stream, False)
        sel.register(stream, selectors.EVENT_READ, ("r", proc, fd))
    for stream in proc.writers.values():
        os.set_blocking(stream, False)
    send(SPAWNED, key, 0, json.dumps({"pid": proc.pid}).encode())

def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        proc = by_pid.pop(pid, None)
        if proc is None:
            continue
        proc.status = status
        # Whatever the process left behind in its group goes with it.
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        proc.drain_until = time.monotonic() + PIPE_DRAIN_S
        maybe_exit(proc)

def maybe_exit(proc, force=False):
    if proc.status is None or (proc.readers and not force):
        return
    for fd in list(proc.readers):
        close_reader(proc, fd)
    for fd in list(proc.writers):
        close_writer(proc, fd)
    status = proc.status
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else None
    procs.pop(proc.key, None)
    send(EXIT, proc.key, 0, json.dumps({"code": code, "signal": sig}).encode())

def probe(key, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        sock.close()
        send(PROBED, key, 0, b"0")
        return
    entry = [key, sock, time.monotonic() + 1.0]
    probes.append(entry)
    sel.register(sock, selectors.EVENT_WRITE, ("p", entry, 0))

def probe_done(entry, ok):
    probes.remove(entry)
    sel.unregister(entry[1])
    entry[1].close()
    send(PROBED, entry[0], 0, b"1" if ok else b"0")

class Stream:
    def __init__(self, key, sock):
        self.key = key
        self.sock = sock
        # Until connected: when to give up.
        self.deadline = time.monotonic() + CONNECT_S
        # From the server, not yet written to the socket (at most WINDOW: the server keeps to it).
        self.pending = bytearray()
        # Sent to the server, not yet acknowledged.
        self.unacked = 0
        self.eof_in = False
        self.eof_out = False
        self.shut = False
        self.mask = 0

def errname(code):
    return errno.errorcode.get(code, "EIO").encode()

def connect(key, port):
    if key in streams or key in procs:
        return
    if not 0 < port < 65536:
        send(CONNECTED, key, 0, b"EINVAL")
        return
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError as e:
        send(CONNECTED, key, 0, errname(e.errno))
        return
    sock.setblocking(False)
    code = sock.connect_ex(("127.0.0.1", port))
    if code not in (0, errno.EINPROGRESS):
        sock.close()
        send(CONNECTED, key, 0, errname(code))
        return
    s = Stream(key, sock)
    streams[key] = s
    watch(s)

def watch(s):
    # Written to while connecting or holding bytes; read while the server may take more.
    mask = 0
    if s.deadline is not None or s.pending:
        mask |= selectors.EVENT_WRITE
    if s.deadline is None and not s.eof_out and s.unacked < WINDOW:
        mask |= selectors.EVENT_READ
    if mask == s.mask:
        return
    if not s.mask:
        sel.register(s.sock, mask, ("s", s, 0))
    elif not mask:
        sel.unregister(s.sock)
    else:
        sel.modify(s.sock, mask, ("s", s, 0))
    s.mask = mask

def drop(s):
    streams.pop(s.key, None)
    if s.mask:
        sel.unregister(s.sock)
        s.mask = 0
    s.sock.close()

def abort(s):
    drop(s)
    send(CLOSE, s.key, 0)

def settle(s):
    if s.key not in streams:
        return
    if s.eof_out and s.shut:
        drop(s)
    else:
        watch(s)

def on_stream(s, events):
    if s.deadline is not None:
        code = s.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            drop(s)
            send(CONNECTED, s.key, 0, errname(code))
            return
        s.deadline = None
        send(CONNECTED, s.key, 0)
        stream_flush(s)
        return
    if events & selectors.EVENT_WRITE:
        stream_flush(s)
    if events & selectors.EVENT_READ and streams.get(s.key) is s:
        stream_read(s)

def stream_flush(s):
    if s.pending:
        try:
            n = s.sock.send(s.pending)
        except BlockingIOError:
            n = 0
        except OSError:
            abort(s)
            return
        if n:
            del s.pending[:n]
            send(ACK, s.key, 0, str(n).encode())
    if not s.pending and s.eof_in and not s.shut:
        s.shut = True
        try:
            s.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    settle(s)

def stream_read(s):
    try:
        data = s.sock.recv(min(CHUNK, WINDOW - s.unacked))
    except BlockingIOError:
        return
    except OSError:
        abort(s)
        return
    if data:
        s.unacked += len(data)
        send(DATA, s.key, 0, data)
    else:
        s.eof_out = True
        send(EOF, s.key, 0)
    settle(s)

def on_stream_frame(s, kind, payload):
    if kind == DATA and not s.eof_in:
        s.pending += payload
        if s.deadline is None:
            stream_flush(s)
    elif kind == EOF:
        s.eof_in = True
        if s.deadline is None:
            stream_flush(s)
    elif kind == ACK:
        s.unacked = max(0, s.unacked - int(payload))
        watch(s)
    elif kind == CLOSE:
        drop(s)

def listen_egress():
    # The sandbox's way out: connections here are carried to the server, which judges and makes them.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", EGRESS_PORT))
    sock.listen(128)
    sock.setblocking(False)
    sel.register(sock, selectors.EVENT_READ, ("a", sock, 0))

next_accepted = 0

def accept_egress(listener):
    global next_accepted
    try:
        sock, _ = listener.accept()
    except OSError:
        return
    if sum(1 for key in streams if key & ACCEPTED_KEY) >= MAX_ACCEPTED:
        sock.close()
        return
    next_accepted = (next_accepted + 1) % ACCEPTED_KEY
    key = ACCEPTED_KEY | next_accepted
    if key in streams:
        sock.close()
        return
    sock.setblocking(False)
    s = Stream(key, sock)
    s.deadline = None
    streams[key] = s
    send(ACCEPTED, key, 0)
    watch(s)

def handle(kind, key, fd, payload):
    try:
        dispatch(kind, key, fd, payload)
    except (ValueError, KeyError, TypeError) as e:
        if kind == SPAWN:
            send(SPAWNED, key, 0, json.dumps({"error": "EINVAL", "message": str(e)}).encode())

def dispatch(kind, key, fd, payload):
    stream = streams.get(key)
    if stream is not None and kind in (DATA, EOF, ACK, CLOSE):
        on_stream_frame(stream, kind, payload)
        return
    proc = procs.get(key)
    if kind == SPAWN:
        if proc is None:
            spawn(key, json.loads(payload.decode()))
    elif kind == DATA and proc is not None:
        if fd in proc.writers and fd not in proc.closing:
            proc.pending[fd] = proc.pending.get(fd, b"") + payload
            flush(proc, fd)
        else:
            # The process reads no more there: dropped, and said so, so that the server's writer goes on.
            send(ACK, proc.key, fd, str(len(payload)).encode())
    elif kind == EOF and proc is not None and fd in proc.writers:
        proc.closing.add(fd)
        flush(proc, fd)
    elif kind == ACK and proc is not None and fd in proc.readers:
        proc.unacked[fd] = max(0, proc.unacked.get(fd, 0) - int(payload))
        watch_reader(proc, fd)
        # Output still moving after the exit: the wait for the rest of it starts again.
        if proc.drain_until is not None:
            proc.drain_until = time.monotonic() + PIPE_DRAIN_S
    elif kind == SIGNAL and proc is not None and proc.pid is not None:
        try:
            os.killpg(proc.pid, int(payload))
        except (OSError, ValueError):
            pass
    elif kind == PROBE:
        probe(key, int(payload))
    elif kind == CONNECT:
        connect(key, int(payload))

os.set_blocking(0, False)
sel.register(0, selectors.EVENT_READ, ("in", None, 0))
sel.register(wake_r, selectors.EVENT_READ, ("wake", None, 0))
if EGRESS_PORT:
    listen_egress()
buf = b""
send(SPAWNED, 0, 0, b'{"ready":true}')
while True:
    now = time.monotonic()
    deadlines = [p.drain_until for p in procs.values() if p.drain_until is not None] + [e[2] for e in probes]
    deadlines += [s.deadline for s in streams.values() if s.deadline is not None]
    timeout = max(0.0, min(deadlines) - now) if deadlines else None
    for key, events in sel.select(timeout):
        role, proc, fd = key.data
        if role == "in":
            try:
                chunk = os.read(0, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                os._exit(0)
            buf += chunk
            while len(buf) >= HEADER.size:
                size, kind, pid, fd_ = HEADER.unpack_from(buf)
                if len(buf) < HEADER.size + size:
                    break
                payload = buf[HEADER.size:HEADER.size + size]
                buf = buf[HEADER.size + size:]
                handle(kind, pid, fd_, payload)
        elif role == "wake":
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            reap()
        elif role == "r":
            on_read(proc, fd, key.fileobj)
        elif role == "w":
            flush(proc, fd)
        elif role == "a":
            accept_egress(proc)
        elif role == "p":
            probe_done(proc, proc[1].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
        elif role == "s":
            # Dropped by an earlier event of this round (a CLOSE from the server): its socket is gone.
            if streams.get(proc.key) is proc:
                on_stream(proc, events)
    now = time.monotonic()
    for p in list(procs.values()):
        if p.drain_until is not None and now >= p.drain_until:
            maybe_exit(p, True)
    for e in list(probes):
        if now >= e[2]:
            probe_done(e, False)
    for s in list(streams.values()):
        if s.deadline is not None and now >= s.deadline:
            drop(s)
            send(CONNECTED, s.key, 0, b"ETIMEDOUT")
