/**
 * The file route's rules in process (functions/mcp/http/file-route.ts), over a fake sandbox: the answers FC
 * allows (no Content-Length, an inline disposition), what each outcome of reaching the sandbox is answered, the
 * status of each failure, and that the sandbox is held in use until the body was sent.
 */
import { AppError } from '../../../functions/mcp/errors';
import { createFileRoute } from '../../../functions/mcp/http/file-route';
import { createCallShare } from '../../../functions/mcp/sessions/call-share';
import { createFileUrlSigner, type FileGrant } from '../../../functions/mcp/files/file-url-token';
import type { RequestContext } from '../../../functions/mcp/http/context';
import { SILENT_LOGGER } from '../../../functions/mcp/log';
import type { FileSource, Sandbox } from '../../../functions/mcp/sandbox/types';
import type { Reached } from '../../../functions/mcp/sessions/sandbox-access';

const NOW_MS = 1_800_000_000_000;
const signer = createFileUrlSigner('unit-file-route-secret-0123456789abcdef');
const PLACE = { kind: 'handle' as const, key: 'k'.repeat(16), tag: 't'.repeat(12), principal: 'p', issuedAtMs: 0 };
const GRANT: FileGrant = {
  place: PLACE,
  sandboxId: 'sbx-1',
  path: '/home/user/a.bin',
  mode: 'download',
  expiresAtS: NOW_MS / 1000 + 60,
  maxBytes: 10,
};
const BYTES = Buffer.from('0123456789');

interface Harness {
  reach: Reached;
  released: number;
  sent: Array<() => void>;
}

function fakeSandbox(overrides: Partial<Sandbox> = {}): Sandbox {
  const source: FileSource = {
    path: GRANT.path,
    sizeBytes: BYTES.length,
    modifiedAt: new Date(0),
    async *read(start, end) {
      yield BYTES.subarray(start, end + 1);
    },
    close: async () => undefined,
  };
  return {
    info: () => ({ id: 'sbx-1' }),
    openFile: async () => source,
    receiveFile: async () => ({ path: GRANT.path, created: true, bytes: 3 }),
    ...overrides,
  } as unknown as Sandbox;
}

function setUp(
  onFc: boolean,
  sandbox: Sandbox = fakeSandbox(),
  caps: { calls?: number; transfers?: number } = {},
): Harness & { serve: (req: Request) => Promise<Response> } {
  const harness: Harness = {
    reach: { sandbox, signal: new AbortController().signal, release: () => undefined },
    released: 0,
    sent: [],
  };
  const route = createFileRoute({
    signer,
    access: async () => {
      const reached = harness.reach;
      const release = (): void => {
        harness.released += 1;
      };
      return 'sandbox' in reached ? { ...reached, release } : reached;
    },
    now: () => NOW_MS,
    onFc,
    calls: createCallShare(caps.calls ?? 64),
    maxTransfers: caps.transfers ?? 32,
    logger: SILENT_LOGGER,
  });
  const serve = (req: Request): Promise<Response> => {
    const ctx: RequestContext = {
      requestId: 'r',
      path: new URL(req.url).pathname,
      log: {},
      onSent: (done) => harness.sent.push(done),
      bodyStream: async function* () {
        yield Buffer.from('abc');
      },
    };
    return route(req, ctx);
  };
  return Object.assign(harness, { serve });
}

const url = (grant: FileGrant = GRANT): string => `http://x/files/a.bin?t=${signer.sign(grant)}`;

it('answers FC without Content-Length and with an inline disposition; elsewhere with both', async () => {
  const fc = await setUp(true).serve(new Request(url()));
  expect(fc.headers.get('content-length')).toBeNull();
  expect(fc.headers.get('content-disposition')).toMatch(/^inline; filename="a.bin"/);
  expect(Buffer.from(await fc.arrayBuffer())).toEqual(BYTES);
  const plain = await setUp(false).serve(new Request(url()));
  expect(plain.headers.get('content-length')).toBe('10');
  expect(plain.headers.get('content-disposition')).toMatch(/^attachment; filename="a.bin"/);
});

it('holds the sandbox until the answer was sent, and lets it go at once when nothing streams', async () => {
  const harness = setUp(false);
  const res = await harness.serve(new Request(url(), { headers: { range: 'bytes=2-4' } }));
  expect(res.status).toBe(206);
  expect(await res.text()).toBe('234');
  expect(harness.released).toBe(0);
  for (const done of harness.sent) done();
  expect(harness.released).toBe(1);
  const refused = setUp(false);
  expect((await refused.serve(new Request(url(), { method: 'PUT', body: 'x' }))).status).toBe(403);
  const reset = setUp(false, fakeSandbox({ info: () => ({ id: 'sbx-2' }) as ReturnType<Sandbox['info']> }));
  expect((await reset.serve(new Request(url()))).status).toBe(410);
  expect(reset.released).toBe(1);
});

it.each([
  [{ missing: 'ended' } as Reached, 410],
  [{ missing: 'gone' } as Reached, 404],
  [{ refusal: { status: 503, code: 'capacity', message: 'full', setting: 'X' } } as unknown as Reached, 503],
])('answers a sandbox that cannot be reached (%p) with %i', async (reach, status) => {
  const harness = setUp(false);
  harness.reach = reach;
  expect((await harness.serve(new Request(url()))).status).toBe(status);
});

it.each([
  ['too_large', 413],
  ['disk_full', 507],
  ['invalid_input', 403],
  ['not_found', 404],
  ['backend_unreachable', 502],
  ['request_timeout', 408],
] as const)('answers an upload that fails with %s as %i', async (code, status) => {
  const sandbox = fakeSandbox({
    receiveFile: async () => {
      throw new AppError(code, `failed: ${code}`);
    },
  });
  const res = await setUp(false, sandbox).serve(
    new Request(url({ ...GRANT, mode: 'upload' }), { method: 'PUT', body: 'abc' }),
  );
  expect(res.status).toBe(status);
  expect(await res.text()).toBe(`failed: ${code}\n`);
});

it('answers a CORS preflight without looking at the token', async () => {
  const res = await setUp(false).serve(new Request('http://x/files/a.bin', { method: 'OPTIONS' }));
  expect(res.status).toBe(204);
  expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, PUT');
});

it('bounds transfers per credential (429) and per instance (503), each freed once its answer was sent', async () => {
  const perCredential = setUp(false, fakeSandbox(), { calls: 2 });
  const first = await perCredential.serve(new Request(url()));
  await perCredential.serve(new Request(url()));
  const third = await perCredential.serve(new Request(url()));
  expect(third.status).toBe(429);
  expect(third.headers.get('retry-after')).toBe('1');
  expect(await first.text()).toBe('0123456789');
  for (const done of perCredential.sent.splice(0)) done();
  expect((await perCredential.serve(new Request(url()))).status).toBe(200);

  const perInstance = setUp(false, fakeSandbox(), { transfers: 1 });
  expect((await perInstance.serve(new Request(url()))).status).toBe(200);
  const over = await perInstance.serve(new Request(url()));
  expect(over.status).toBe(503);
  expect(await over.text()).toContain('Too many file transfers');
  for (const done of perInstance.sent.splice(0)) done();
  expect((await perInstance.serve(new Request(url()))).status).toBe(200);
});
