/**
 * A seeded, repeatable generator of hostile and malformed HTTP requests for the MCP endpoint, and the
 * sender that fires them (node:http for odd but well-framed requests, a raw socket for broken framing).
 *
 * Every case says which statuses the status table (docs/platform-facts.md) allows for it, and what else must hold
 * of the answer (a JSON-RPC answer for its id, a refusal of invalid arguments or escaping paths, no
 * secret in the text). The same seed always yields the same cases, in the same order.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

/** mulberry32: a small, fast 32-bit PRNG; the same seed always yields the same sequence. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Convenience draws over a seeded PRNG. */
export class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  float(): number {
    return this.next();
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i += 1) out[i] = this.int(256);
    return out;
  }
  string(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./'): string {
    let out = '';
    for (let i = 0; i < n; i += 1) out += alphabet[this.int(alphabet.length)];
    return out;
  }
}

/** Live values the cases need (sessions are opened before generation; the cases' shapes depend only on the seed). */
export interface FuzzTargets {
  port: number;
  token: string;
  otherToken: string;
  /** A session of `token` that negotiated 2025-11-25. */
  session: string;
  /** A session of `token` that negotiated 2025-03-26 (batches allowed). */
  session0326: string;
  /** A session of `otherToken`. */
  otherSession: string;
  /** MCP_MAX_BODY_BYTES of the server. */
  maxBodyBytes: number;
}

export interface FuzzExpect {
  /** A 200 answer must carry a JSON-RPC response with this id. */
  responseId?: string | number;
  /** A tool call that must be refused: isError, or a JSON-RPC error other than -32603. */
  refused?: boolean;
  /** Texts that must never appear in the answer (a file outside the sandbox, a secret). */
  mustNotContain?: string[];
  /** A 401 must carry a Bearer challenge. */
  challenge?: boolean;
}

export interface FuzzCase {
  index: number;
  family: string;
  /** What the case does, short enough for a failure list. */
  note: string;
  send: 'http' | 'raw';
  method: string;
  path: string;
  /** For `http`: the headers (latin1 strings; node:http checks them). */
  headers: Record<string, string>;
  body?: Buffer;
  /** For `raw`: the complete request bytes. */
  raw?: Buffer;
  allowed: readonly number[];
  expect: FuzzExpect;
}

/** Names written by path-escape cases; none may appear outside a workspace's home. */
export const ESCAPE_MARKER = 'fuzz-escape-marker';
/** Text of /etc/passwd that must never reach a tool result. */
export const PASSWD_MARKER = 'root:x:0:0';

/** Symlinks (and a directory) the runner creates in the base session's working directory before the cases run. */
export const SANDBOX_SETUP_COMMAND =
  'ln -s /etc link-etc; ln -s / link-root; ln -s ../.. link-up; ln -s /nonexistent dangling; mkdir -p ' +
  'sub/deeper; echo hi > sub/file.txt';

/** Paths that leave the working directory, directly or through the symlinks of SANDBOX_SETUP_COMMAND. */
const ESCAPING_PATHS = [
  '..',
  '../',
  '../x',
  '../../etc/passwd',
  '../../../../../../../../etc/passwd',
  '/etc/passwd',
  '/etc',
  '/proc/self/environ',
  '/proc/1/environ',
  '/home/user/../../etc/passwd',
  '/home/user/../user2/x',
  '/home/userx/secret',
  'sub/../../etc/passwd',
  'sub/deeper/../../../x',
  'a/b/../../../x',
  '/',
  '//etc/passwd',
  '/home',
  '/tmp/x',
  '/root/.bashrc',
  'link-etc/passwd',
  'link-etc',
  'link-root/etc/passwd',
  'link-root',
  'link-up',
  'link-up/x',
  '/home/user/link-etc/shadow',
  `../${ESCAPE_MARKER}`,
  `../../${ESCAPE_MARKER}`,
  `/tmp/${ESCAPE_MARKER}`,
  `/${ESCAPE_MARKER}`,
  `link-root/tmp/${ESCAPE_MARKER}`,
  `link-etc/${ESCAPE_MARKER}`,
  `link-up/${ESCAPE_MARKER}`,
  'dangling',
  `dangling/${ESCAPE_MARKER}`,
] as const;

/** Hostile strings of the right type: they must never cause an internal error. */
const HOSTILE_STRINGS = [
  '',
  ' ',
  '\n',
  '\r\n\r\n',
  '\t',
  '\0',
  'a\0b',
  '\u0000\u0001\u0002\u001f',
  '\ud800',
  '\udfff\ud800',
  '\uffff\ufffe',
  '\u202e\u202dRTL',
  '💥🧨'.repeat(50),
  'Ω≈ç√∫˜µ≤≥÷',
  '$(id)',
  '`id`',
  '${IFS}',
  '; exit 3',
  '&& false ||',
  '| cat /etc/shadow',
  '\'"\\',
  '%s%s%s%n',
  '%00',
  '../'.repeat(30),
  '-'.repeat(5_000),
  'x'.repeat(70_000),
  '{"jsonrpc":"2.0"}',
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  '/dev/zero',
  '/dev/stdin',
  '*',
  '?',
  '~',
  '~root',
  '.',
  '....//....//',
  '\\..\\..\\windows',
  'C:\\Windows\\System32',
  'file:///etc/passwd',
] as const;

/** Values of each wrong type for a field of `type`. */
function wrongValuesFor(type: FieldType): unknown[] {
  const all: unknown[] = [
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    'x',
    '',
    [],
    [1, 'a'],
    {},
    { a: 1 },
    [[[]]],
    { __proto__: null },
  ];
  switch (type) {
    case 'string':
      return all.filter((v) => typeof v !== 'string');
    case 'int':
      return all.filter((v) => !(typeof v === 'number' && Number.isInteger(v)));
    case 'bool':
      return [...all.filter((v) => typeof v !== 'boolean'), 'true', 'false', 1, 0];
    case 'enum':
      return [...all, 'PYTHON', 'python ', 'rm', 'list;', 'SIGSTOP'];
    case 'env':
      return [
        null,
        'A=1',
        ['A=1'],
        5,
        { A: 1 },
        { A: null },
        { A: ['x'] },
        { 'bad-name': 'x' },
        { '1A': 'x' },
        { '': 'x' },
        { A: { b: 1 } },
      ];
  }
}

type FieldType = 'string' | 'int' | 'bool' | 'enum' | 'env';

interface ToolShape {
  /** Valid arguments (harmless: fast, bounded). */
  valid: Record<string, unknown>;
  fields: Record<string, FieldType>;
  /** Fields holding a path (for the path-escape family). */
  pathFields: readonly string[];
  required: readonly string[];
}

/** The tools' argument shapes (docs/protocol.md, "Tools"), with harmless valid values. */
const TOOLS: Record<string, ToolShape> = {
  run_code: {
    valid: { code: '1 + 1', timeout_ms: 3000 },
    fields: { code: 'string', language: 'enum', timeout_ms: 'int', env: 'env' },
    pathFields: [],
    required: ['code'],
  },
  run_command: {
    valid: { command: 'true', timeout_ms: 3000 },
    fields: { command: 'string', cwd: 'string', env: 'env', timeout_ms: 'int', stdin: 'string', background: 'bool' },
    pathFields: ['cwd'],
    required: ['command'],
  },
  read_file: {
    valid: { path: 'sub/file.txt' },
    fields: { path: 'string', offset: 'int', limit: 'int', encoding: 'enum' },
    pathFields: ['path'],
    required: ['path'],
  },
  write_file: {
    valid: { path: 'fuzz/out.txt', content: 'x' },
    fields: { path: 'string', content: 'string', encoding: 'enum' },
    pathFields: ['path'],
    required: ['path', 'content'],
  },
  list_files: {
    valid: { path: 'sub' },
    fields: { path: 'string', depth: 'int', include_hidden: 'bool' },
    pathFields: ['path'],
    required: [],
  },
  edit_file: {
    valid: { path: 'sub/file.txt', old_string: 'hi', new_string: 'hi' },
    fields: { path: 'string', old_string: 'string', new_string: 'string', replace_all: 'bool' },
    pathFields: ['path'],
    required: ['path', 'old_string', 'new_string'],
  },
  sandbox_status: { valid: {}, fields: {}, pathFields: [], required: [] },
  manage_process: {
    valid: { action: 'list' },
    fields: {
      action: 'enum',
      process_id: 'string',
      signal: 'enum',
      input: 'string',
      offset: 'int',
      limit_bytes: 'int',
    },
    pathFields: [],
    required: ['action'],
  },
  get_preview_url: { valid: { port: 8080 }, fields: { port: 'int' }, pathFields: [], required: ['port'] },
};

const ACCEPT = 'application/json, text/event-stream';

/** Builds the cases of one run. */
export function generateCases(seed: number, count: number, t: FuzzTargets): FuzzCase[] {
  const rng = new Rng(seed);
  const cases: FuzzCase[] = [];
  let nextId = 1;

  const auth = { authorization: `Bearer ${t.token}` };
  const inSession = (session = t.session, version = '2025-11-25'): Record<string, string> => ({
    ...auth,
    'content-type': 'application/json',
    accept: ACCEPT,
    'mcp-session-id': session,
    'mcp-protocol-version': version,
  });
  const noSession = (): Record<string, string> => ({ ...auth, 'content-type': 'application/json', accept: ACCEPT });
  const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
  const rpc = (method: string, params?: unknown, id: unknown = nextId++): Record<string, unknown> => ({
    jsonrpc: '2.0',
    id,
    method,
    ...(params !== undefined && { params }),
  });
  const post = (
    family: string,
    note: string,
    headers: Record<string, string>,
    body: Buffer,
    allowed: readonly number[],
    expect: FuzzExpect = {},
  ): FuzzCase => ({
    index: cases.length,
    family,
    note,
    send: 'http',
    method: 'POST',
    path: '/mcp',
    headers,
    body,
    allowed,
    expect,
  });
  const raw = (family: string, note: string, bytes: Buffer, allowed: readonly number[]): FuzzCase => ({
    index: cases.length,
    family,
    note,
    send: 'raw',
    method: 'RAW',
    path: '/mcp',
    headers: {},
    raw: bytes,
    allowed,
    expect: {},
  });
  const head = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;
  const hostLine = `Host: 127.0.0.1:${t.port}`;

  /** A tools/call in the base session; `expect` decides what the answer must show. */
  const toolCall = (family: string, note: string, name: unknown, args: unknown, expect: FuzzExpect = {}): FuzzCase => {
    const id = nextId++;
    return post(family, note, inSession(), json(rpc('tools/call', { name, arguments: args }, id)), [200], {
      responseId: id,
      ...expect,
    });
  };

  const families: Array<[weight: number, family: string, make: () => FuzzCase]> = [
    [6, 'body-garbage', bodyGarbage],
    [6, 'utf8', utf8],
    [7, 'rpc-shape', rpcShape],
    [6, 'method', method],
    [6, 'http-method', httpMethod],
    [10, 'headers', headers],
    [6, 'auth', authCase],
    [5, 'huge', huge],
    [18, 'tool-args', toolArgs],
    [12, 'path-escape', pathEscape],
    [6, 'modern', modern],
    [5, 'batch', batch],
    [4, 'initialize', initialize],
    [3, 'session-ops', sessionOps],
    [5, 'framing', framing],
  ];
  const totalWeight = families.reduce((sum, [w]) => sum + w, 0);

  while (cases.length < count) {
    let roll = rng.int(totalWeight);
    for (const [weight, , make] of families) {
      if (roll < weight) {
        cases.push(make());
        break;
      }
      roll -= weight;
    }
  }
  return cases;

  // ---- families ------------------------------------------------------------------------------------

  function bodyGarbage(): FuzzCase {
    const valid = JSON.stringify(rpc('ping'));
    const kinds: Array<[string, () => Buffer]> = [
      ['random bytes', () => rng.bytes(rng.range(1, 2_000))],
      ['random text', () => Buffer.from(rng.string(rng.range(1, 500), 'abc{}[]":,0123456789 \n\\tnul'))],
      ['truncated JSON', () => Buffer.from(valid.slice(0, rng.range(1, valid.length - 1)))],
      ['trailing garbage', () => Buffer.from(`${valid}${rng.pick(['x', '}', ']', ',', '{}', '\0'])}`)],
      ['empty body', () => Buffer.alloc(0)],
      ['whitespace', () => Buffer.from(' \n\t\r ')],
      [
        'bare value',
        () => Buffer.from(rng.pick(['null', 'true', '123', '"x"', '{}', '[]', '[[]]', '[{}]', '-0', '1e999'])),
      ],
      [
        'JSON5-ish',
        () =>
          Buffer.from(
            rng.pick([
              "{jsonrpc:'2.0',id:1,method:'ping'}",
              '{"jsonrpc":"2.0","id":1,"method":"ping",}',
              '{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
              '/*c*/{"jsonrpc":"2.0"}',
            ]),
          ),
      ],
      ['NUL bytes', () => Buffer.alloc(rng.range(1, 100))],
    ];
    const [note, make] = rng.pick(kinds);
    const headers = rng.chance(0.7) ? inSession() : noSession();
    return post('body-garbage', note, headers, make(), [400]);
  }

  function utf8(): FuzzCase {
    const badBytes = [
      Buffer.from([0xff]),
      Buffer.from([0xfe, 0xff]),
      Buffer.from([0xc0, 0x80]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
      Buffer.from([0x80]),
      Buffer.from([0xe2, 0x82]),
      Buffer.from([0xf4, 0x90, 0x80, 0x80]),
    ];
    const escapes = ['\\ud800', '\\udc00\\ud800', '\\u0000', '\\uffff', '\\u202e', '\\ud83d\\ude00'];
    const where = rng.int(7);
    const marker = 'XMARKX';
    const id = nextId++;
    let template: string;
    let headers = inSession();
    let allowed: readonly number[] = [200, 202, 400];
    switch (where) {
      case 0:
        template = JSON.stringify(rpc('ping', { s: marker }, id));
        break;
      case 1:
        template = JSON.stringify(
          rpc('tools/call', { name: 'write_file', arguments: { path: `u/${marker}.txt`, content: marker } }, id),
        );
        break;
      case 2:
        template = JSON.stringify(rpc('tools/call', { name: 'read_file', arguments: { path: marker } }, id));
        break;
      case 3:
        template = JSON.stringify(
          rpc('tools/call', { name: 'run_command', arguments: { command: `echo ${marker}`, timeout_ms: 3000 } }, id),
        );
        break;
      case 4:
        template = JSON.stringify(rpc(`tools/${marker}`, {}, id));
        break;
      case 5:
        headers = noSession();
        template = JSON.stringify(
          rpc(
            'initialize',
            { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: marker, version: '1' } },
            id,
          ),
        );
        break;
      default:
        // Outside any string: never valid JSON.
        template = `{"jsonrpc":"2.0",${marker}"id":${id},"method":"ping"}`;
        allowed = [400];
    }
    const [before, after] = template.split(marker) as [string, string];
    const useEscape = where !== 6 && rng.chance(0.35);
    const middle = useEscape
      ? Buffer.from(rng.pick(escapes))
      : Buffer.concat([Buffer.from('a'), rng.pick(badBytes), Buffer.from('b')]);
    const body = Buffer.concat([Buffer.from(before), middle, Buffer.from(after)]);
    const expect: FuzzExpect = where === 5 || where === 6 ? {} : { responseId: id };
    return post(
      'utf8',
      `${useEscape ? 'escape' : 'invalid bytes'} in ` +
        [
          'ping params',
          'write_file',
          'read_file path',
          'run_command',
          'method name',
          'initialize clientInfo',
          'JSON structure',
        ][where],
      headers,
      body,
      allowed,
      expect,
    );
  }

  function rpcShape(): FuzzCase {
    const base: Record<string, unknown> = rng.pick([
      rpc('ping'),
      rpc('tools/list'),
      rpc('tools/call', { name: 'sandbox_status', arguments: {} }),
    ]);
    const mutations: Array<[string, () => void]> = [
      ['jsonrpc missing', () => delete base.jsonrpc],
      ['jsonrpc wrong', () => (base.jsonrpc = rng.pick(['1.0', 2, null, '2.0 ', '', ['2.0'], { v: '2.0' }]))],
      [
        'id odd type',
        () =>
          (base.id = rng.pick([
            {},
            [],
            1.5,
            true,
            false,
            null,
            -1,
            2 ** 53 + 1,
            1e300,
            '',
            'x'.repeat(100_000),
            { id: 1 },
          ])),
      ],
      ['method odd', () => (base.method = rng.pick([123, null, '', ' ', {}, [], true, 'ping\0']))],
      ['method missing', () => delete base.method],
      [
        'params odd',
        () =>
          (base.params = rng.pick([
            [],
            'x',
            5,
            null,
            true,
            [1, 2],
            { _meta: 'x' },
            { _meta: { progressToken: {} } },
            { _meta: [] },
            { _meta: null },
          ])),
      ],
      [
        'a response',
        () => {
          delete base.method;
          delete base.params;
          base.result = rng.pick([{}, null, [], 'x']);
        },
      ],
      [
        'an error response',
        () => {
          delete base.method;
          delete base.params;
          base.error = rng.pick([{ code: -32000, message: 'x' }, 'bad', null, { code: 'x' }]);
        },
      ],
      [
        'result and error',
        () => {
          base.result = {};
          base.error = { code: 1, message: 'x' };
        },
      ],
      [
        'a notification',
        () => {
          delete base.id;
        },
      ],
      [
        'extra members',
        () => {
          base[rng.pick(['__proto__', 'constructor', 'extra', 'prototype', ''])] = rng.pick([
            { polluted: true },
            1,
            'x',
            null,
          ]);
        },
      ],
    ];
    const picked = rng.pick(mutations);
    picked[1]();
    if (rng.chance(0.4)) rng.pick(mutations)[1]();
    return post('rpc-shape', picked[0], rng.chance(0.85) ? inSession() : noSession(), json(base), [200, 202, 400]);
  }

  function method(): FuzzCase {
    const names = [
      'initialize',
      'notifications/initialized',
      'notifications/cancelled',
      'notifications/progress',
      'notifications/roots/list_changed',
      'logging/setLevel',
      'resources/list',
      'resources/read',
      'resources/subscribe',
      'prompts/list',
      'prompts/get',
      'completion/complete',
      'sampling/createMessage',
      'roots/list',
      'elicitation/create',
      'tasks/get',
      'tasks/list',
      'server/discover',
      'tools/call',
      'tools/list',
      '$/cancelRequest',
      'rpc.discover',
      '__proto__',
      'constructor',
      'toString',
      'valueOf',
      'hasOwnProperty',
      '__defineGetter__',
      'tools/call/../../x',
      'TOOLS/LIST',
      'tools/list ',
      'm'.repeat(100_000),
      '方法/调用',
    ];
    const name = rng.chance(0.85) ? rng.pick(names) : rng.string(rng.range(1, 40), 'abcdefghijklmnopqrstuvwxyz/_$.');
    const params = rng.pick<unknown>([
      undefined,
      {},
      { level: rng.pick(['debug', 'nonsense', 5]) },
      { requestId: rng.pick([1, 'x', null, {}]), reason: 'fuzz' },
      { uri: 'file:///etc/passwd' },
      { name: 'x', arguments: {} },
      { cursor: rng.pick(['', 'x', 5, {}]) },
      { progressToken: 1, progress: 'x' },
    ]);
    const asNotification = rng.chance(0.25);
    const id = nextId++;
    const message: Record<string, unknown> = {
      jsonrpc: '2.0',
      method: name,
      ...(params !== undefined && { params }),
      ...(!asNotification && { id }),
    };
    return post(
      'method',
      `${asNotification ? 'notification' : 'request'} ${name.slice(0, 40)}`,
      inSession(),
      json(message),
      [200, 202, 400],
      asNotification ? {} : { responseId: id },
    );
  }

  function httpMethod(): FuzzCase {
    const methods = [
      'GET',
      'PUT',
      'PATCH',
      'HEAD',
      'DELETE',
      'OPTIONS',
      'TRACE',
      'PROPFIND',
      'CONNECT',
      'FOO',
      'get',
      'POST',
    ];
    const paths = [
      '/mcp',
      '/mcp/',
      '/MCP',
      '/mcp?x=1',
      '//mcp',
      '/mcp/../mcp',
      '/./mcp',
      '/health',
      '/health?x',
      '/initialize',
      '/pre-stop',
      '/.well-known/oauth-protected-resource',
      '/%zz',
      '/',
      '/mcp%00',
      '/mcp%2f..',
      '/index.js',
      '/../../etc/passwd',
      '*',
    ];
    const m = rng.pick(methods);
    const path = m === 'CONNECT' ? `127.0.0.1:${t.port}` : rng.pick(paths);
    const withSession = rng.chance(0.3);
    const lines = [
      `${m} ${path} HTTP/1.1`,
      hostLine,
      `Authorization: Bearer ${t.token}`,
      `Accept: ${ACCEPT}`,
      'Connection: close',
    ];
    // DELETE with the base session would end it for every later case: only bogus ids are deleted.
    if (withSession)
      lines.push(`Mcp-Session-Id: ${m === 'DELETE' ? 'bogus-session-id' : rng.pick([t.session, 'bogus-session-id'])}`);
    const body = m === 'POST' ? JSON.stringify(rpc('ping')) : '';
    if (m === 'POST') lines.push('Content-Type: application/json', `Content-Length: ${body.length}`);
    const allowed = expectedForRoute(
      m,
      path,
      withSession ? lines.find((l) => l.startsWith('Mcp-Session-Id'))?.slice(16) : undefined,
    );
    return raw(
      'http-method',
      `${m} ${path.slice(0, 40)}${withSession ? ' with session' : ''}`,
      Buffer.from(head(lines) + body, 'latin1'),
      allowed,
    );
  }

  /** What the routes answer (docs/protocol.md, "Errors", and the status table in docs/platform-facts.md), for a
   * request with a valid token and no Origin. */
  function expectedForRoute(m: string, path: string, session: string | undefined): readonly number[] {
    // Node's parser accepts only known methods; an unknown or lower-case token is a 400 before any route.
    if (!['GET', 'PUT', 'PATCH', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'CONNECT', 'POST'].includes(m))
      return [400, 405];
    if (m === 'CONNECT') return [405]; // "other methods: 405 with Allow"
    // Methods a web Request cannot carry (TRACE, PROPFIND): 405 wherever they go, or 404 off the routes.
    const webMethod = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].includes(m);
    if (!webMethod)
      return path === '*'
        ? [400, 404, 405]
        : ['/mcp', '/health', '/initialize', '/pre-stop'].includes(pathOf(path) ?? '')
          ? [405]
          : [404, 405];
    if (path === '*') return [400, 404, 405];
    let pathname: string;
    try {
      // As the server builds it (node-listener.ts): only the path of the request target is read.
      pathname = new URL(`http://localhost${path}`).pathname;
    } catch {
      return [400];
    }
    switch (pathname) {
      case '/mcp':
        if (m === 'OPTIONS') return [204];
        if (m === 'POST') return session === undefined ? [400] : session === t.session ? [200] : [404];
        if (m === 'DELETE') return session === undefined ? [400] : [404];
        return [405];
      case '/health':
        return m === 'GET' || m === 'HEAD' ? [200] : [405];
      case '/initialize':
        return m === 'POST' ? [200] : [405];
      case '/pre-stop':
        return m === 'GET' ? [200] : [405];
      default:
        return [404];
    }
  }

  function pathOf(path: string): string | undefined {
    try {
      return new URL(`http://localhost${path}`).pathname;
    } catch {
      return undefined;
    }
  }

  function headers(): FuzzCase {
    const id = nextId++;
    const body = json(rpc('ping', undefined, id));
    const h = inSession();
    const kinds: Array<() => [string, readonly number[], FuzzExpect?]> = [
      () => {
        h.accept = rng.pick([
          'text/html',
          '*/*',
          'application/json',
          'text/event-stream',
          '',
          'application/*',
          'x'.repeat(4_000),
        ]);
        return [`accept ${h.accept.slice(0, 30)}`, [406]];
      },
      () => {
        // Substring matching takes these for the real types: lenient, and harmless.
        h.accept = 'application/jsonx, text/event-streamx';
        return ['accept application/jsonx, text/event-streamx', [200, 406]];
      },
      () => {
        h.accept = rng.pick([
          'text/event-stream, application/json',
          'APPLICATION/JSON, TEXT/EVENT-STREAM',
          'application/json;q=0.1, text/event-stream;q=0.9, */*',
        ]);
        return [`accept variant ${h.accept.slice(0, 30)}`, [200], { responseId: id }];
      },
      () => {
        const type = rng.pick([
          'text/plain',
          '',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/jsonx',
          'json',
          'text/json',
        ]);
        if (type === '') delete h['content-type'];
        else h['content-type'] = type;
        return [`content-type ${type || 'missing'}`, [415]];
      },
      () => {
        h['content-type'] = rng.pick([
          'application/json; charset=utf-8',
          'Application/JSON',
          'application/json;charset=UTF-8',
        ]);
        return [`content-type variant ${h['content-type']}`, [200], { responseId: id }];
      },
      () => {
        h['content-type'] = rng.string(rng.range(1, 60), 'abcdefghijklmnopqrstuvwxyz/;=+- ');
        return [`content-type random ${h['content-type']}`, [200, 415]];
      },
      () => {
        h['mcp-protocol-version'] = rng.pick([
          '1999-01-01',
          'banana',
          '2024-11-05',
          '2026-07-28',
          '2025-11-2',
          'x'.repeat(1000),
          '\xff\xfe',
        ]);
        return [`mcp-protocol-version ${h['mcp-protocol-version'].slice(0, 20)}`, [400]];
      },
      () => {
        h['mcp-session-id'] = rng.pick([
          '',
          'x',
          'a'.repeat(8_000),
          `${t.session}x`,
          t.session.toUpperCase(),
          `${t.session.split('.')[0]}..`,
          '\xff\xfe\x80',
          t.otherSession,
          'null',
          '../../etc/passwd',
          '%00',
        ]);
        return [`mcp-session-id ${h['mcp-session-id'].slice(0, 20)}`, [400, 404]];
      },
      () => {
        h.origin = rng.pick([
          'http://evil.example.com',
          'null',
          'file://',
          'x',
          'http://localhost.evil.com',
          'http://127.0.0.1.nip.io',
          'https://localhost@evil.com',
          '\xff',
        ]);
        return [`origin ${h.origin}`, [403]];
      },
      () => {
        h.origin = rng.pick(['http://localhost:5173', 'http://127.0.0.1', 'http://[::1]:8080']);
        return [`loopback origin ${h.origin}`, [200], { responseId: id }];
      },
      () => {
        h.host = rng.pick(['evil.example.com', 'localhost.evil.com', '127.0.0.2', '0.0.0.0', 'x'.repeat(300), '[::2]']);
        return [`host ${h.host.slice(0, 30)}`, [403]];
      },
      () => {
        h.host = rng.pick(['localhost', 'LOCALHOST:1', '127.0.0.1:1', '[::1]:9000']);
        return [`loopback host ${h.host}`, [200], { responseId: id }];
      },
      () => {
        for (let i = 0; i < rng.range(10, 300); i += 1) h[`x-fuzz-${i}`] = rng.string(rng.range(0, 40));
        return ['many headers', [200], { responseId: id }];
      },
      () => {
        h[
          rng.pick([
            'x-fc-request-id',
            'x-forwarded-for',
            'mcp-method',
            'mcp-name',
            'last-event-id',
            'x-real-ip',
            'forwarded',
          ])
        ] = rng.pick(['', 'x'.repeat(3_000), '\xff\xfe', '127.0.0.1, 10.0.0.1', '../../etc']);
        return ['odd extra header', [200, 400]];
      },
      () => {
        h['x-huge'] = 'x'.repeat(rng.range(17_000, 40_000));
        return ['header block over 16 KB', [431]];
      },
    ];
    const [note, allowed, expect] = rng.pick(kinds)();
    return post('headers', note, h, body, allowed, expect ?? {});
  }

  function authCase(): FuzzCase {
    const valids = [
      `bearer ${t.token}`,
      `BEARER ${t.token}`,
      `Bearer\t${t.token}`,
      `Bearer  ${t.token}`,
      `Bearer ${t.token} `,
    ];
    const invalids = [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      `Bearer ${t.token}x`,
      `Bearer x${t.token}`,
      `Bearer ${t.token.slice(0, -1)}`,
      `Bearer ${t.token} extra`,
      `Basic ${Buffer.from(`user:${t.token}`).toString('base64')}`,
      `Token ${t.token}`,
      t.token,
      `Bearer ${'a'.repeat(10_000)}`,
      `Bearer \xff\xfe${t.token}`,
      `Bearer ${t.token.toUpperCase()}`,
      'Bearer null',
      'Bearer undefined',
      `Bearer ${t.token},${t.token}`,
    ];
    const valid = rng.chance(0.25);
    const value = valid ? rng.pick(valids) : rng.pick(invalids);
    const session = rng.pick([t.session, 'bogus-session', t.otherSession, undefined]);
    const h: Record<string, string> = {
      'content-type': 'application/json',
      accept: ACCEPT,
      ...(value !== undefined && { authorization: value }),
    };
    if (session !== undefined) Object.assign(h, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const m = rng.pick(['POST', 'POST', 'POST', 'DELETE', 'GET']);
    const id = nextId++;
    let allowed: readonly number[];
    if (!valid) allowed = [401];
    else if (m === 'GET') allowed = [405];
    else if (session === undefined) allowed = [400];
    else if (session === t.session) allowed = m === 'DELETE' ? [] : [200];
    else allowed = [404];
    const c = post(
      'auth',
      `${m} ${valid ? 'valid' : 'bad'} authorization ${JSON.stringify(value?.slice(0, 24) ?? null)} session ` +
        (session === t.session
          ? 'own'
          : session === undefined
            ? 'none'
            : session === t.otherSession
              ? 'foreign'
              : 'bogus'),
      h,
      m === 'POST' ? json(rpc('ping', undefined, id)) : Buffer.alloc(0),
      allowed,
      {
        challenge: !valid,
        ...(valid && m === 'POST' && session === t.session && { responseId: id }),
      },
    );
    // DELETE of the base session would end it: never generated.
    if (m === 'DELETE' && valid && session === t.session)
      return post(
        'auth',
        'valid token ping (instead of deleting the base session)',
        inSession(),
        json(rpc('ping', undefined, id)),
        [200],
        { responseId: id },
      );
    return { ...c, method: m };
  }

  function huge(): FuzzCase {
    const kinds: Array<() => FuzzCase> = [
      () => {
        const size = t.maxBodyBytes + rng.range(1, 300_000);
        const body = Buffer.from(JSON.stringify(rpc('ping', { pad: 'x'.repeat(size) })));
        return post('huge', `body of ${body.length} bytes (over MCP_MAX_BODY_BYTES)`, inSession(), body, [413]);
      },
      () => {
        const id = nextId++;
        return post(
          'huge',
          'ping with a 900 KB string',
          inSession(),
          json(rpc('ping', { pad: 'y'.repeat(900_000) }, id)),
          [200],
          { responseId: id },
        );
      },
      () => {
        const depth = rng.pick([1_000, 10_000, 100_000, 300_000]);
        const open = rng.chance(0.5) ? '[' : '{"a":';
        const close = open === '[' ? ']' : '}';
        const nested = `${open.repeat(depth)}${open === '[' ? '' : '1'}${close.repeat(depth)}`;
        const id = nextId++;
        const where = rng.int(4);
        const body =
          where === 0
            ? `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"n":${nested}}}`
            : where === 1
              ? `{"jsonrpc":"2.0","id":${id},"method":"tools/call",` +
                `"params":{"name":"run_command","arguments":{"command":"true","env":${nested}}}}`
              : where === 2
                ? `{"jsonrpc":"2.0","id":${nested},"method":"ping"}`
                : `{"jsonrpc":"2.0","id":${id},"method":"tools/call",` +
                  `"params":{"name":"sandbox_status","arguments":{},"_meta":{"progressToken":${nested}}}}`;
        return post(
          'huge',
          `nesting depth ${depth} in ${['params', 'tool arguments', 'id', '_meta.progressToken'][where]}`,
          inSession(),
          Buffer.from(body),
          [200, 400, 413],
          where === 2 ? {} : { responseId: id },
        );
      },
      () => {
        const id = nextId++;
        const wide = rng.chance(0.5)
          ? `[${'1,'.repeat(200_000)}1]`
          : `{${Array.from({ length: 40_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`;
        return post(
          'huge',
          'a very wide value in params',
          inSession(),
          Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"w":${wide}}}`),
          [200, 400, 413],
          { responseId: id },
        );
      },
      () => {
        const id = nextId++;
        const number = rng.pick([
          '1e400',
          '-1e400',
          '123456789012345678901234567890',
          '0.0000000000000000000000001',
          '-0',
          '1E+2',
        ]);
        const field = rng.pick(['timeout_ms', 'port', 'depth']);
        const name = field === 'port' ? 'get_preview_url' : field === 'depth' ? 'list_files' : 'run_command';
        const args = field === 'timeout_ms' ? `{"command":"true","timeout_ms":${number}}` : `{"${field}":${number}}`;
        return post(
          'huge',
          `number ${number} as ${field}`,
          inSession(),
          Buffer.from(
            `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`,
          ),
          [200],
          { responseId: id },
        );
      },
      () => {
        const id = nextId++;
        const field = rng.pick(['command', 'path', 'content', 'old_string', 'code', 'stdin']);
        const size = rng.pick([5_000, 140_000, 600_000]);
        const big = rng
          .string(64)
          .repeat(Math.ceil(size / 64))
          .slice(0, size);
        const [name, args]: [string, Record<string, unknown>] =
          field === 'command'
            ? ['run_command', { command: `: ${big}`, timeout_ms: 3000 }]
            : field === 'code'
              ? ['run_code', { code: `# ${big}`, timeout_ms: 3000 }]
              : field === 'stdin'
                ? ['run_command', { command: 'wc -c', stdin: big, timeout_ms: 3000 }]
                : field === 'path'
                  ? ['read_file', { path: big }]
                  : field === 'content'
                    ? ['write_file', { path: 'fuzz/big.txt', content: big }]
                    : ['edit_file', { path: 'sub/file.txt', old_string: big, new_string: 'x' }];
        return post(
          'huge',
          `${size}-byte ${field}`,
          inSession(),
          json(rpc('tools/call', { name, arguments: args }, id)),
          [200],
          { responseId: id },
        );
      },
    ];
    return rng.pick(kinds)();
  }

  function toolArgs(): FuzzCase {
    const names = Object.keys(TOOLS);
    const r = rng.int(100);
    if (r < 6) {
      const name = rng.pick<unknown>([
        'nope',
        '',
        'RUN_COMMAND',
        'run_command ',
        'run-command',
        '__proto__',
        'constructor',
        42,
        null,
        ['run_command'],
        { n: 1 },
        'x'.repeat(5_000),
      ]);
      return toolCall('tool-args', `unknown tool ${JSON.stringify(name).slice(0, 30)}`, name, {}, { refused: true });
    }
    const name = rng.pick(names);
    const shape = TOOLS[name] as ToolShape;
    if (r < 16) {
      const args = rng.pick<unknown>([[], 'x', 1, true, [shape.valid], '{}']);
      return toolCall('tool-args', `${name} with arguments ${JSON.stringify(args).slice(0, 30)}`, name, args, {
        refused: true,
      });
    }
    if (r < 20) {
      const args = rng.pick<unknown>([null, undefined]);
      return toolCall(
        'tool-args',
        `${name} with arguments ${String(args)}`,
        name,
        args,
        shape.required.length > 0 ? { refused: true } : {},
      );
    }
    if (r < 30) {
      const args = {
        ...shape.valid,
        [rng.pick(['colour', 'extra', 'PATH', 'prototype', 'sandbox', 'timeout', 'Command', ''])]: rng.pick([
          1,
          'x',
          null,
          {},
        ]),
      };
      // The 2025 lane has no `sandbox` argument: every unknown key is refused (strict schemas).
      return toolCall('tool-args', `${name} with an unknown argument`, name, args, { refused: true });
    }
    if (r < 36 && shape.required.length > 0) {
      const args: Record<string, unknown> = { ...shape.valid };
      delete args[rng.pick(shape.required)];
      return toolCall('tool-args', `${name} missing a required argument`, name, args, { refused: true });
    }
    const fields = Object.keys(shape.fields);
    if (fields.length === 0) return toolCall('tool-args', `${name} (no arguments)`, name, {});
    const field = rng.pick(fields);
    const type = shape.fields[field] as FieldType;
    if (r < 70) {
      const value = rng.pick(wrongValuesFor(type));
      // Enum fields: a random string might happen to be valid; the listed ones never are.
      return toolCall(
        'tool-args',
        `${name}.${field} = ${JSON.stringify(value)?.slice(0, 30)} (wrong type)`,
        name,
        { ...shape.valid, [field]: value },
        { refused: true },
      );
    }
    // Right type, hostile value: any answer but an internal error (checked for every case).
    const value: unknown =
      type === 'int'
        ? rng.pick([
            0,
            -1,
            1,
            2 ** 31,
            2 ** 31 - 1,
            2 ** 53 - 1,
            -(2 ** 53) + 1,
            65_535,
            65_536,
            1_048_576,
            100_000,
            100_001,
          ])
        : type === 'bool'
          ? rng.chance(0.5)
          : type === 'env'
            ? rng.pick([
                {},
                { PATH: '' },
                { LD_PRELOAD: '/tmp/x.so' },
                { HOME: '/etc' },
                { A: 'x'.repeat(32_768) },
                Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x'])),
                { A: '\0' },
                { BASH_ENV: '/etc/passwd' },
              ])
            : type === 'enum'
              ? rng.pick([
                  'python',
                  'javascript',
                  'bash',
                  'typescript',
                  'r',
                  'java',
                  'utf8',
                  'base64',
                  'auto',
                  'list',
                  'logs',
                  'kill',
                  'write_stdin',
                  'SIGKILL',
                  'SIGTERM',
                  'SIGINT',
                  'SIGHUP',
                ])
              : rng.pick(HOSTILE_STRINGS);
    const args: Record<string, unknown> = { ...shape.valid, [field]: value };
    if ((name === 'run_command' || name === 'run_code') && field !== 'timeout_ms') args.timeout_ms = 3000;
    // A hostile command runs for real (bounded by timeout_ms); background ones would outlive the call.
    if (name === 'run_command' && field === 'background') args.background = false;
    if (name === 'manage_process' && args.action === 'kill' && args.process_id === undefined) args.process_id = 'p999';
    return toolCall('tool-args', `${name}.${field} = ${JSON.stringify(value)?.slice(0, 30)}`, name, args);
  }

  function pathEscape(): FuzzCase {
    const candidates = Object.entries(TOOLS).filter(([, shape]) => shape.pathFields.length > 0);
    const [name, shape] = rng.pick(candidates);
    const field = rng.pick(shape.pathFields);
    const path = rng.pick(ESCAPING_PATHS);
    const args: Record<string, unknown> = { ...shape.valid, [field]: path };
    if (name === 'write_file') args.content = ESCAPE_MARKER;
    if (name === 'edit_file') Object.assign(args, { old_string: 'root', new_string: ESCAPE_MARKER });
    if (name === 'run_command') args.command = `echo ${ESCAPE_MARKER} > ${ESCAPE_MARKER}.txt; pwd`;
    return toolCall('path-escape', `${name}.${field} = ${path}`, name, args, {
      refused: true,
      mustNotContain: [PASSWD_MARKER, t.token, 'MCP_AUTH_TOKENS'],
    });
  }

  function modern(): FuzzCase {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const headersFor = (m: string, name?: string): Record<string, string> => ({
      ...noSession(),
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': m,
      ...(name !== undefined && { 'mcp-name': name }),
    });
    const id = nextId++;
    const kinds: Array<() => FuzzCase> = [
      () =>
        post(
          'modern',
          'valid sandbox_status',
          headersFor('tools/call', 'sandbox_status'),
          json(rpc('tools/call', { name: 'sandbox_status', arguments: {}, _meta: meta }, id)),
          [200],
          { responseId: id },
        ),
      () =>
        post(
          'modern',
          'server/discover',
          headersFor('server/discover'),
          json(rpc('server/discover', { _meta: meta }, id)),
          [200],
          { responseId: id },
        ),
      () => {
        const handle = rng.pick([
          'x',
          '',
          'AAAAAAAAAAAAAAAAAAAAAA.abc.AAAAAAAAAAAAAAAAAAAAAA',
          t.session,
          'a'.repeat(5_000),
          '../../etc',
        ]);
        return post(
          'modern',
          `forged sandbox handle ${handle.slice(0, 20)}`,
          headersFor('tools/call', 'read_file'),
          json(rpc('tools/call', { name: 'read_file', arguments: { path: 'x', sandbox: handle }, _meta: meta }, id)),
          [200],
          { responseId: id, refused: true },
        );
      },
      () => {
        const handle = rng.pick<unknown>([1, null, {}, [], true]);
        return post(
          'modern',
          `sandbox handle of type ${JSON.stringify(handle)}`,
          headersFor('tools/call', 'sandbox_status'),
          json(rpc('tools/call', { name: 'sandbox_status', arguments: { sandbox: handle }, _meta: meta }, id)),
          [200, 400],
          { responseId: id, refused: true },
        );
      },
      () =>
        post(
          'modern',
          'Mcp-Method differs from the body',
          headersFor('tools/list'),
          json(rpc('tools/call', { name: 'sandbox_status', arguments: {}, _meta: meta }, id)),
          [400],
        ),
      () =>
        post(
          'modern',
          'Mcp-Name differs from the body',
          headersFor('tools/call', 'run_command'),
          json(rpc('tools/call', { name: 'sandbox_status', arguments: {}, _meta: meta }, id)),
          [400],
        ),
      () =>
        post(
          'modern',
          'Mcp-Name missing',
          headersFor('tools/call'),
          json(rpc('tools/call', { name: 'sandbox_status', arguments: {}, _meta: meta }, id)),
          [400],
        ),
      () =>
        post(
          'modern',
          'Mcp-Method missing',
          { ...noSession(), 'mcp-protocol-version': '2026-07-28' },
          json(rpc('tools/list', { _meta: meta }, id)),
          [400],
        ),
      () => {
        const version = rng.pick(['2099-01-01', '2026-07-29', 'x', '']);
        const h = headersFor('tools/list');
        h['mcp-protocol-version'] = version;
        return post(
          'modern',
          `unsupported version ${version}`,
          h,
          json(rpc('tools/list', { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': version } }, id)),
          [400],
        );
      },
      () => {
        const bad = rng.pick<unknown>([
          'x',
          1,
          null,
          [],
          { 'io.modelcontextprotocol/protocolVersion': 5 },
          {
            'io.modelcontextprotocol/clientCapabilities': 'x',
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          },
        ]);
        return post(
          'modern',
          `_meta ${JSON.stringify(bad).slice(0, 40)}`,
          headersFor('tools/list'),
          json(rpc('tools/list', { _meta: bad }, id)),
          [200, 400],
        );
      },
      // The SDK's modern transport answers a method it does not serve with HTTP 404 and -32601 (its "ladder" table).
      () =>
        post(
          'modern',
          'unknown method',
          headersFor('nope/nope'),
          json(rpc('nope/nope', { _meta: meta }, id)),
          [200, 400, 404],
        ),
      () =>
        post(
          'modern',
          'initialize in the modern era',
          headersFor('initialize'),
          json(
            rpc(
              'initialize',
              { protocolVersion: '2026-07-28', capabilities: {}, clientInfo: { name: 'x', version: '1' }, _meta: meta },
              id,
            ),
          ),
          [200, 400, 404],
        ),
      () =>
        post(
          'modern',
          'batch in the modern era',
          headersFor('tools/list'),
          json([rpc('tools/list', { _meta: meta }), rpc('tools/list', { _meta: meta })]),
          [400],
        ),
      () => {
        const tool = rng.pick(['read_file', 'list_files', 'write_file']);
        // A modern call without a handle gets a fresh sandbox: only paths that escape on their own (no symlinks there).
        const path = rng.pick(ESCAPING_PATHS.filter((p) => !p.includes('link-') && !p.startsWith('dangling')));
        return post(
          'modern',
          `${tool} escaping ${path}`,
          headersFor('tools/call', tool),
          json(rpc('tools/call', { name: tool, arguments: { path, content: ESCAPE_MARKER }, _meta: meta }, id)),
          [200],
          {
            responseId: id,
            refused: true,
            mustNotContain: [PASSWD_MARKER, t.token],
          },
        );
      },
    ];
    return rng.pick(kinds)();
  }

  function batch(): FuzzCase {
    const in0326 = rng.chance(0.7);
    const h = in0326 ? inSession(t.session0326, '2025-03-26') : inSession();
    const element = (): unknown =>
      rng.pick<() => unknown>([
        () => rpc('ping'),
        () => rpc('tools/list'),
        () => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } }),
        () => ({ jsonrpc: '2.0', id: nextId++, result: {} }),
        () => rpc('tools/call', { name: 'sandbox_status', arguments: {} }),
        () => rpc('nope'),
        () => 5,
        () => null,
        () => [],
        () => ({}),
        () =>
          rpc('initialize', {
            protocolVersion: '2025-03-26',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          }),
      ])();
    const size = rng.pick([0, 1, 2, 5, 20, 100, 101, 2_000]);
    const items = size > 100 ? Array.from({ length: size }, () => rpc('ping')) : Array.from({ length: size }, element);
    const allShaped =
      items.length > 0 &&
      items.every(
        (m) =>
          typeof m === 'object' && m !== null && !Array.isArray(m) && (m as { jsonrpc?: unknown }).jsonrpc === '2.0',
      );
    const hasInitialize = items.some((m) => (m as { method?: unknown } | null)?.method === 'initialize');
    // The SDK caps a batch at 100 messages (400 beyond).
    const allowed: readonly number[] =
      !in0326 || !allShaped || size > 100 ? [400] : hasInitialize ? [200, 400] : [200, 202];
    return post(
      'batch',
      `${size}-element batch in a ${in0326 ? '2025-03-26' : '2025-11-25'} session`,
      h,
      json(items),
      allowed,
    );
  }

  function initialize(): FuzzCase {
    const id = nextId++;
    const params: Record<string, unknown> = {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'fuzz', version: '1' },
    };
    const mutation = rng.int(7);
    let note: string;
    switch (mutation) {
      case 0:
        params.protocolVersion = rng.pick<unknown>([
          '2024-11-05',
          '2026-07-28',
          '1999-01-01',
          '',
          20251125,
          null,
          ['2025-11-25'],
          'x'.repeat(10_000),
        ]);
        note = `protocolVersion ${JSON.stringify(params.protocolVersion).slice(0, 20)}`;
        break;
      case 1:
        delete params.protocolVersion;
        note = 'no protocolVersion';
        break;
      case 2:
        params.capabilities = rng.pick<unknown>([
          null,
          [],
          'x',
          5,
          { roots: 'x' },
          { sampling: null },
          { experimental: { a: { b: {} } } },
        ]);
        note = `capabilities ${JSON.stringify(params.capabilities)}`;
        break;
      case 3:
        params.clientInfo = rng.pick<unknown>([
          undefined,
          null,
          {},
          { name: 5 },
          { name: 'x' },
          { name: 'x'.repeat(100_000), version: '1' },
          'x',
        ]);
        note = `clientInfo ${JSON.stringify(params.clientInfo)?.slice(0, 30)}`;
        break;
      case 4:
        params._meta = rng.pick<unknown>([{ progressToken: {} }, 'x', null]);
        note = `_meta ${JSON.stringify(params._meta)}`;
        break;
      case 5:
        note = 'initialize carrying a bogus session id';
        return post(
          'initialize',
          note,
          { ...noSession(), 'mcp-session-id': 'bogus-session' },
          json(rpc('initialize', params, id)),
          [404],
        );
      default:
        note = 'plain initialize';
    }
    return post('initialize', note, noSession(), json(rpc('initialize', params, id)), [200, 400]);
  }

  /** Broken HTTP framing, sent byte for byte (the client half-closes after the request, as a dying client would). */
  function framing(): FuzzCase {
    const body = JSON.stringify(rpc('ping'));
    const common = [
      hostLine,
      `Authorization: Bearer ${t.token}`,
      'Content-Type: application/json',
      `Accept: ${ACCEPT}`,
      `Mcp-Session-Id: ${t.session}`,
    ];
    const kinds: Array<() => [string, string | Buffer, readonly number[]]> = [
      () => [
        'Content-Length and Transfer-Encoding',
        head(['POST /mcp HTTP/1.1', ...common, `Content-Length: ${body.length}`, 'Transfer-Encoding: chunked']) + body,
        [400],
      ],
      () => [
        'invalid chunk size',
        head(['POST /mcp HTTP/1.1', ...common, 'Transfer-Encoding: chunked']) + `zz\r\n${body}\r\n0\r\n\r\n`,
        [400],
      ],
      () => [
        'unfinished chunked body',
        head(['POST /mcp HTTP/1.1', ...common, 'Transfer-Encoding: chunked']) + `5\r\n${body.slice(0, 5)}\r\n`,
        [400],
      ],
      () => [
        'body shorter than Content-Length',
        head(['POST /mcp HTTP/1.1', ...common, `Content-Length: ${body.length + rng.range(1, 5_000)}`]) + body,
        [400],
      ],
      () => [
        'body longer than Content-Length',
        head(['POST /mcp HTTP/1.1', ...common, `Content-Length: ${rng.range(1, body.length - 1)}`]) + body,
        [400],
      ],
      () => [
        'two different Content-Lengths',
        head([
          'POST /mcp HTTP/1.1',
          ...common,
          `Content-Length: ${body.length}`,
          `Content-Length: ${body.length + 1}`,
        ]) + body,
        [400],
      ],
      () => [
        `Content-Length ${'-1 or huge'}`,
        head([
          'POST /mcp HTTP/1.1',
          ...common,
          `Content-Length: ${rng.pick(['-1', '99999999999999999999', '1e3', '0x10', ' '])}`,
        ]) + body,
        [400],
      ],
      () => [
        'NUL in a header value',
        Buffer.from(
          head(['POST /mcp HTTP/1.1', ...common, 'X-Bad: a\0b', `Content-Length: ${body.length}`]) + body,
          'latin1',
        ),
        [400],
      ],
      () => [
        'a header line without a colon',
        head(['POST /mcp HTTP/1.1', ...common, 'NoColonHere', `Content-Length: ${body.length}`]) + body,
        [400],
      ],
      () => [
        'space before the colon',
        head(['POST /mcp HTTP/1.1', ...common, `Content-Length : ${body.length}`]) + body,
        [400],
      ],
      () => [
        'obsolete line folding',
        head(['POST /mcp HTTP/1.1', ...common, 'X-Folded: a', ' b', `Content-Length: ${body.length}`]) + body,
        [400],
      ],
      () => [
        'latin1 bytes in a header name',
        Buffer.from(
          head(['POST /mcp HTTP/1.1', ...common, 'X-\xff\xfe: x', `Content-Length: ${body.length}`]) + body,
          'latin1',
        ),
        [400],
      ],
      () => [
        'HTTP/1.1 without Host',
        head(['POST /mcp HTTP/1.1', ...common.filter((l) => l !== hostLine), `Content-Length: ${body.length}`]) + body,
        [400],
      ],
      () => [
        'HTTP/1.0 without Host',
        head(['POST /mcp HTTP/1.0', ...common.filter((l) => l !== hostLine), `Content-Length: ${body.length}`]) + body,
        [400, 403],
      ],
      // Node reads it as a request without Host: the Host check refuses it.
      () => ['HTTP/0.9-style request line', 'GET /mcp\r\n\r\n', [400, 403]],
      () => [
        'unknown HTTP version',
        head(['POST /mcp HTTP/3.7', ...common, `Content-Length: ${body.length}`]) + body,
        [400, 505],
      ],
      () => ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', [400]],
      () => [
        'a TLS client hello',
        Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, ...rng.bytes(32)]),
        [400],
      ],
      () => ['random bytes', rng.bytes(rng.range(1, 3_000)), [400]],
      () => [
        'request line over 16 KB',
        head([`GET /mcp?${'q'.repeat(rng.range(17_000, 40_000))} HTTP/1.1`, ...common]),
        [400, 414, 431],
      ],
      () => [
        'two Mcp-Session-Id headers',
        head(['POST /mcp HTTP/1.1', ...common, 'Mcp-Session-Id: bogus', `Content-Length: ${body.length}`]) + body,
        [404],
      ],
      () => [
        'a bad Authorization first, the right one second',
        head([
          'POST /mcp HTTP/1.1',
          ...common.filter((l) => !l.startsWith('Authorization')),
          'Authorization: Bearer nope',
          `Authorization: Bearer ${t.token}`,
          `Content-Length: ${body.length}`,
        ]) + body,
        [401],
      ],
      () => [
        'text/plain first, application/json second',
        head([
          'POST /mcp HTTP/1.1',
          ...common.filter((l) => !l.startsWith('Content-Type')),
          'Content-Type: text/plain',
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
        ]) + body,
        [415],
      ],
      // RFC 9112 §3.2 asks for 400; Node keeps the first Host, which the DNS-rebinding check then sees.
      () => [
        'two Host headers',
        head(['POST /mcp HTTP/1.1', ...common, 'Host: evil.example.com', `Content-Length: ${body.length}`]) + body,
        [200, 400, 403],
      ],
    ];
    const [note, bytes, allowed] = rng.pick(kinds)();
    return raw('framing', note, typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes, allowed);
  }

  function sessionOps(): FuzzCase {
    const kinds: Array<() => FuzzCase> = [
      () => ({
        ...post(
          'session-ops',
          'DELETE a bogus session',
          { ...auth, 'mcp-session-id': rng.pick(['bogus', 'a'.repeat(500), `${t.session}x`]) },
          Buffer.alloc(0),
          [404],
        ),
        method: 'DELETE',
      }),
      () => ({
        ...post(
          'session-ops',
          'DELETE another credential’s session',
          { ...auth, 'mcp-session-id': t.otherSession },
          Buffer.alloc(0),
          [404],
        ),
        method: 'DELETE',
      }),
      () => ({
        ...post(
          'session-ops',
          'DELETE with a wrong token',
          { authorization: `Bearer ${t.token}x`, 'mcp-session-id': t.session },
          Buffer.alloc(0),
          [401],
          { challenge: true },
        ),
        method: 'DELETE',
      }),
      () => ({
        ...post('session-ops', 'DELETE without a session id', { ...auth }, Buffer.alloc(0), [400]),
        method: 'DELETE',
      }),
      () =>
        post(
          'session-ops',
          'the other credential’s session with this token',
          inSession(t.otherSession),
          json(rpc('tools/list')),
          [404],
        ),
      () =>
        post(
          'session-ops',
          'this session with the other credential',
          { ...inSession(), authorization: `Bearer ${t.otherToken}` },
          json(rpc('tools/list')),
          [404],
        ),
    ];
    return rng.pick(kinds)();
  }
}

/** What came back for one case. */
export interface FuzzAnswer {
  /** HTTP status; 0 when the connection ended without a status line. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Set when the request failed at the transport level or timed out. */
  transportError?: string;
  durationMs: number;
}

/** Sends one case to 127.0.0.1:`port`; never rejects. */
export function sendCase(port: number, c: FuzzCase, timeoutMs = 30_000): Promise<FuzzAnswer> {
  const started = Date.now();
  return c.send === 'raw'
    ? sendRaw(port, c.raw ?? Buffer.alloc(0), timeoutMs, started)
    : sendHttp(port, c, timeoutMs, started);
}

function sendHttp(port: number, c: FuzzCase, timeoutMs: number, started: number): Promise<FuzzAnswer> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer: Omit<FuzzAnswer, 'durationMs'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...answer, durationMs: Date.now() - started });
    };
    const headers: Record<string, string> = { ...c.headers };
    let req: ReturnType<typeof httpRequest>;
    try {
      req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: c.method,
          path: c.path,
          headers,
          agent: false,
          setHost: headers.host === undefined,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            finish({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', (err) =>
            finish({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
              transportError: `response: ${err.message}`,
            }),
          );
        },
      );
    } catch (err: unknown) {
      // node:http refused the request itself (a header it will not send): the server never saw it.
      resolve({
        status: -1,
        headers: {},
        text: '',
        transportError: `client refused: ${(err as Error).message}`,
        durationMs: 0,
      });
      return;
    }
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: 0, headers: {}, text: '', transportError: `timeout after ${timeoutMs} ms` });
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ status: 0, headers: {}, text: '', transportError: `${err.code ?? ''} ${err.message}` }),
    );
    req.end(c.body);
  });
}

function sendRaw(port: number, bytes: Buffer, timeoutMs: number, started: number): Promise<FuzzAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (transportError?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      const [head = ''] = text.split('\r\n\r\n');
      const headers: Record<string, string> = {};
      for (const line of head.split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({
        status,
        headers,
        text,
        durationMs: Date.now() - started,
        ...(status === 0 && { transportError: transportError ?? 'connection ended without an answer' }),
      });
    };
    const timer = setTimeout(() => finish(`timeout after ${timeoutMs} ms`), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (err: NodeJS.ErrnoException) => finish(`${err.code ?? ''} ${err.message}`));
    // Half-close after the request: a server waiting for more (a short body) sees the end instead of hanging.
    socket.end(bytes);
  });
}

/** Every JSON-RPC message in an answer body (one JSON value, or SSE `data:` lines). */
export function messagesIn(answer: FuzzAnswer): Array<Record<string, unknown>> {
  const type = String(answer.headers['content-type'] ?? '');
  try {
    if (type.includes('text/event-stream')) {
      return answer.text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    }
    if (answer.text.trim() === '') return [];
    const value = JSON.parse(answer.text) as unknown;
    return (Array.isArray(value) ? value : [value]) as Array<Record<string, unknown>>;
  } catch {
    return [];
  }
}

/** What is wrong with an answer to `c`, or `undefined` when it is one the status table allows. */
export function judge(c: FuzzCase, answer: FuzzAnswer): string | undefined {
  if (answer.status === -1) return undefined; // the client would not send it: nothing was tested
  if (answer.transportError !== undefined && answer.status === 0) return `no answer (${answer.transportError})`;
  if (answer.status >= 500) return `HTTP ${answer.status}`;
  if (!c.allowed.includes(answer.status)) return `HTTP ${answer.status}, allowed ${c.allowed.join('/')}`;
  if (/\n\s+at .+:\d+:\d+/.test(answer.text) || answer.text.includes('node:internal'))
    return 'a stack trace in the answer';
  for (const secret of c.expect.mustNotContain ?? []) {
    if (answer.text.includes(secret)) return `the answer contains ${JSON.stringify(secret.slice(0, 20))}`;
  }
  if (
    answer.status === 401 &&
    c.expect.challenge === true &&
    !/^Bearer/i.test(String(answer.headers['www-authenticate'] ?? ''))
  )
    return '401 without a Bearer challenge';
  if (answer.status === 200 && c.expect.responseId !== undefined) {
    const message = messagesIn(answer).find((m) => m.id === c.expect.responseId) as
      | { result?: { isError?: boolean }; error?: { code?: number } }
      | undefined;
    if (message === undefined) return `no JSON-RPC answer for id ${c.expect.responseId}`;
    if (c.expect.refused === true && message.result !== undefined && message.result.isError !== true)
      return 'not refused: a successful result';
  }
  return undefined;
}

/** The JSON-RPC error codes of an answer (for -32603, the generic internal error, counted separately). */
export function errorCodesIn(answer: FuzzAnswer): number[] {
  return messagesIn(answer)
    .map((m) => (m.error as { code?: unknown } | undefined)?.code)
    .filter((code): code is number => typeof code === 'number');
}

/** A one-line description of a case and its answer, for failure lists and regression notes. */
export function describeCase(c: FuzzCase, answer: FuzzAnswer, problem: string): string {
  const sent =
    c.send === 'raw'
      ? (c.raw ?? Buffer.alloc(0)).toString('latin1').slice(0, 160)
      : `${c.method} ${c.path} ${(c.body ?? Buffer.alloc(0)).toString('latin1').slice(0, 160)}`;
  return (
    `#${c.index} [${c.family}] ${c.note} → ${problem}; answer ${answer.status} ` +
    `${answer.text.replace(/\s+/g, ' ').slice(0, 200)} | sent ${JSON.stringify(sent)}`
  );
}
