/**
 * The server's side of forwarded streams (supervisor-streams.ts) over a recording link: the frames it sends,
 * the window both ways, and what it does with frames a supervisor should not send (unknown keys ignored, bytes
 * past the window reported as misbehaviour).
 */
import {
  Kind,
  STREAM_CHUNK_BYTES,
  STREAM_WINDOW_BYTES,
} from '../../../../functions/mcp/sandbox/local/supervisor-frames';
import { type StreamLink, StreamTable } from '../../../../functions/mcp/sandbox/local/supervisor-streams';

interface Sent {
  kind: number;
  key: number;
  fd: number;
  payload: string;
  bytes: number;
}

function recordingLink(): StreamLink & { sent: Sent[]; misbehaviours: number; settles: number; backlog: boolean } {
  const link = {
    sent: [] as Sent[],
    misbehaviours: 0,
    settles: 0,
    backlog: false,
    send(kind: number, key: number, fd: number, payload: Buffer = Buffer.alloc(0)) {
      link.sent.push({
        kind,
        key,
        fd,
        payload: payload.length <= 32 ? payload.toString('latin1') : '',
        bytes: payload.length,
      });
    },
    backlogged: () => link.backlog,
    misbehaved() {
      link.misbehaviours += 1;
    },
    settled() {
      link.settles += 1;
    },
  };
  return link;
}

const events = (stream: NodeJS.EventEmitter): string[] => {
  const seen: string[] = [];
  for (const name of ['connect', 'refused', 'data', 'end', 'drain', 'close']) {
    stream.on(name, (arg: unknown) =>
      seen.push(
        name === 'refused' ? `refused ${String(arg)}` : name === 'data' ? `data ${(arg as Buffer).length}` : name,
      ),
    );
  }
  return seen;
};

it('asks for the port, relays both ways in bounded frames, and ends when both sides ended', () => {
  const link = recordingLink();
  const table = new StreamTable(link);
  const stream = table.open(7, 8000);
  const seen = events(stream);
  expect(link.sent).toEqual([{ kind: Kind.Connect, key: 7, fd: 0, payload: '8000', bytes: 4 }]);
  table.receive(Kind.Connected, 7, Buffer.alloc(0));
  expect(stream.write(Buffer.alloc(STREAM_CHUNK_BYTES + 10))).toBe(true);
  expect(link.sent.slice(1).map((s) => [s.kind, s.bytes])).toEqual([
    [Kind.Data, STREAM_CHUNK_BYTES],
    [Kind.Data, 10],
  ]);
  expect(table.receive(Kind.Data, 7, Buffer.from('hello'))).toBe(true);
  stream.consumed(5);
  expect(link.sent.at(-1)).toMatchObject({ kind: Kind.Ack, key: 7, payload: '5' });
  stream.end();
  expect(link.sent.at(-1)).toMatchObject({ kind: Kind.Eof, key: 7 });
  expect(table.size).toBe(1);
  table.receive(Kind.Eof, 7, Buffer.alloc(0));
  expect(seen).toEqual(['connect', 'data 5', 'end', 'close']);
  expect(table.size).toBe(0);
  expect(link.settles).toBe(1);
});

it('holds writes at the window until the supervisor acknowledges, and while its stdin is backed up', () => {
  const link = recordingLink();
  const table = new StreamTable(link);
  const stream = table.open(1, 80);
  const seen = events(stream);
  table.receive(Kind.Connected, 1, Buffer.alloc(0));
  expect(stream.write(Buffer.alloc(STREAM_WINDOW_BYTES - 1))).toBe(true);
  expect(stream.write(Buffer.alloc(1))).toBe(false);
  table.receive(Kind.Ack, 1, Buffer.from('1'));
  expect(seen).toEqual(['connect', 'drain']);
  link.backlog = true;
  expect(stream.write(Buffer.alloc(0))).toBe(false);
  table.drained();
  expect(seen).toEqual(['connect', 'drain']);
  link.backlog = false;
  table.drained();
  expect(seen).toEqual(['connect', 'drain', 'drain']);
});

it('reports a refusal with its errno name, and an odd one as EIO', () => {
  const link = recordingLink();
  const table = new StreamTable(link);
  const refused = events(table.open(1, 80));
  const odd = events(table.open(2, 80));
  table.receive(Kind.Connected, 1, Buffer.from('ECONNREFUSED'));
  table.receive(Kind.Connected, 2, Buffer.from('<script>'));
  expect(refused).toEqual(['refused ECONNREFUSED', 'close']);
  expect(odd).toEqual(['refused EIO', 'close']);
  expect(table.size).toBe(0);
});

it(
  'ignores frames for keys that are no open stream, ' + 'and passes DATA, EOF and ACK of other keys on to processes',
  () => {
    const link = recordingLink();
    const table = new StreamTable(link);
    const seen = events(table.open(3, 80));
    for (const kind of [Kind.Connected, Kind.Close]) expect(table.receive(kind, 99, Buffer.from('1'))).toBe(true);
    expect(table.receive(Kind.Data, 99, Buffer.from('x'))).toBe(false);
    expect(table.receive(Kind.Eof, 99, Buffer.alloc(0))).toBe(false);
    expect(table.receive(Kind.Ack, 99, Buffer.from('1'))).toBe(false);
    // DATA before the stream is connected is not the supervisor's to send: dropped.
    table.receive(Kind.Data, 3, Buffer.from('early'));
    expect(seen).toEqual([]);
    expect(link.misbehaviours).toBe(0);
  },
);

it('reports a supervisor that sends more than the window without acknowledgement', () => {
  const link = recordingLink();
  const table = new StreamTable(link);
  const stream = table.open(4, 80);
  table.receive(Kind.Connected, 4, Buffer.alloc(0));
  table.receive(Kind.Data, 4, Buffer.alloc(STREAM_WINDOW_BYTES));
  expect(link.misbehaviours).toBe(0);
  stream.consumed(1);
  table.receive(Kind.Data, 4, Buffer.alloc(1));
  expect(link.misbehaviours).toBe(0);
  table.receive(Kind.Data, 4, Buffer.alloc(1));
  expect(link.misbehaviours).toBe(1);
});

it('ends every stream when the supervisor goes: connecting ones as refused (ESRCH)', () => {
  const link = recordingLink();
  const table = new StreamTable(link);
  const connecting = events(table.open(5, 80));
  const open = table.open(6, 80);
  const seen = events(open);
  table.receive(Kind.Connected, 6, Buffer.alloc(0));
  table.endAll();
  expect(connecting).toEqual(['refused ESRCH', 'close']);
  expect(seen).toEqual(['connect', 'close']);
  expect(open.closed).toBe(true);
  // A stream the server ends sends CLOSE; one already over sends nothing more.
  const before = link.sent.length;
  open.destroy();
  expect(link.sent.length).toBe(before);
});
