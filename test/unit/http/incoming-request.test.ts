/**
 * The Node shell's IncomingRequest (http/node-listener.ts) stands where a web `Request` stood: the same URL, the
 * same headers, and a refusal exactly where a `Request` could not be made.
 */
import type { IncomingMessage } from 'node:http';

import { toIncomingRequest } from '../../../functions/mcp/http/node-listener';

const TARGETS = [
  '/mcp',
  '/mcp?x=1#f',
  '*',
  '//x/y',
  '/a b',
  '/%zz',
  '/a/../b',
  '@evil/x',
  ':@x/y',
  'a:b@c/d',
  '/\u00e9',
];
const HEADERS: Array<IncomingMessage['headers']> = [
  { host: 'localhost', accept: 'application/json, text/event-stream' },
  { host: 'localhost', 'set-cookie': ['a=1', 'b=2'], 'x-empty': '' },
  { host: 'localhost', 'x-bad': 'a\u0000b' },
  { host: 'localhost', 'x-latin': 'caf\u00e9' },
];

function asWebRequest(target: string, headers: IncomingMessage['headers']) {
  const web = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const item of value) web.append(name, item);
    else if (value !== undefined) web.set(name, value);
  }
  const request = new Request(`http://localhost${target}`, { method: 'POST', headers: web });
  return { url: request.url, path: new URL(request.url).pathname, headers: [...request.headers] };
}

it('reads a request as a web Request would, and refuses what cannot be one', () => {
  let refused = 0;
  for (const target of TARGETS) {
    for (const headers of HEADERS) {
      let expected: unknown;
      try {
        expected = asWebRequest(target, headers);
      } catch {
        expected = 'refused';
        refused += 1;
      }
      let actual: unknown;
      try {
        const { request, path } = toIncomingRequest({ method: 'POST', url: target, headers } as IncomingMessage);
        actual = { url: request.url, path, headers: [...request.headers] };
      } catch {
        actual = 'refused';
      }
      expect({ target, headers, actual }).toEqual({ target, headers, actual: expected });
    }
  }
  expect(refused).toBeGreaterThan(5);
});
