/**
 * The POST gates shared by the early path and the core (http/mcp-gates.ts). The Content-Type gate stands in for
 * the SDK's own check, so it must agree with it on every header a client might send.
 */
import { isJsonContentType as sdkIsJsonContentType } from '@modelcontextprotocol/server';

import { acceptsMcpAnswers, isJsonContentType } from '../../../functions/mcp/http/mcp-gates';

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/json ; charset=utf-8',
  '  application/json',
  'application/json;',
  'application/json;;',
  'application/json; charset="utf-8"',
  'application/jsonx',
  'application/json-patch+json',
  'application/json, text/plain',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  '',
];

it('takes the Content-Type the SDK takes, and refuses what it refuses', () => {
  for (const header of CONTENT_TYPES)
    expect({ header, ours: isJsonContentType(header) }).toEqual({ header, ours: sdkIsJsonContentType(header) });
  expect(isJsonContentType(null)).toBe(false);
  expect(isJsonContentType(undefined)).toBe(false);
});

it('needs an Accept that lists both JSON and an event stream, in any case', () => {
  expect(acceptsMcpAnswers('application/json, text/event-stream')).toBe(true);
  expect(acceptsMcpAnswers('Text/Event-Stream, APPLICATION/JSON')).toBe(true);
  expect(acceptsMcpAnswers('application/json')).toBe(false);
  expect(acceptsMcpAnswers('text/event-stream')).toBe(false);
  expect(acceptsMcpAnswers('*/*')).toBe(false);
  expect(acceptsMcpAnswers(undefined)).toBe(false);
  expect(acceptsMcpAnswers(null)).toBe(false);
});
