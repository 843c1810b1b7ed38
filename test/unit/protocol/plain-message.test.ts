/** The JSON-RPC 2.0 envelope checks (functions/mcp/protocol/plain-message.ts). */
import {
  hasMethod,
  isJsonRpcEnvelope,
  jsonRpcIdOf,
  readPlainMessage,
} from '../../../functions/mcp/protocol/plain-message';

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

describe('isJsonRpcEnvelope', () => {
  it('takes one JSON-RPC 2.0 message object, or a non-empty batch of them', () => {
    expect(isJsonRpcEnvelope(ping)).toBe(true);
    expect(isJsonRpcEnvelope({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
    expect(isJsonRpcEnvelope([ping, { jsonrpc: '2.0', method: 'notifications/initialized' }])).toBe(true);
  });

  it('refuses other versions, empty batches, batches with a stray member, and non-objects', () => {
    for (const body of [
      { ...ping, jsonrpc: '1.0' },
      { id: 1, method: 'ping' },
      [],
      [ping, 'ping'],
      [ping, [ping]],
      null,
      'ping',
      7,
    ]) {
      expect({ body, envelope: isJsonRpcEnvelope(body) }).toEqual({ body, envelope: false });
    }
  });
});

describe('jsonRpcIdOf', () => {
  it('is the string or number id of a single message', () => {
    expect(jsonRpcIdOf(ping)).toBe(1);
    expect(jsonRpcIdOf({ ...ping, id: 'a' })).toBe('a');
  });

  it('is null for a notification, a batch, an id of another type, and a non-object', () => {
    for (const body of [
      { jsonrpc: '2.0', method: 'x' },
      [ping],
      { ...ping, id: null },
      { ...ping, id: { n: 1 } },
      null,
      'x',
    ]) {
      expect(jsonRpcIdOf(body)).toBeNull();
    }
  });
});

describe('hasMethod', () => {
  it('is true for a single message calling the method, never for a batch', () => {
    expect(hasMethod({ jsonrpc: '2.0', id: 1, method: 'initialize' }, 'initialize')).toBe(true);
    expect(hasMethod(ping, 'initialize')).toBe(false);
    expect(hasMethod([{ jsonrpc: '2.0', id: 1, method: 'initialize' }], 'initialize')).toBe(false);
    expect(hasMethod(null, 'initialize')).toBe(false);
  });
});

describe('readPlainMessage', () => {
  it('reads a plain request and refuses extra members, fractional ids and array params', () => {
    expect(readPlainMessage(ping)).toBe(ping);
    expect(readPlainMessage({ ...ping, extra: 1 })).toBeUndefined();
    expect(readPlainMessage({ ...ping, id: 1.5 })).toBeUndefined();
    expect(readPlainMessage({ ...ping, params: [] })).toBeUndefined();
  });
});
