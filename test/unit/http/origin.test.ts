import { isHostAllowed, isOriginAllowed, toHostName, type OriginPolicy } from '../../../functions/mcp/http/origin';

const loopback: OriginPolicy = { allowedOrigins: undefined, allowedHosts: undefined, loopbackOnly: true };
const public_: OriginPolicy = { allowedOrigins: undefined, allowedHosts: undefined, loopbackOnly: false };

describe('origin and host checks', () => {
  it('strips ports and lower-cases host names, IPv6 included', () => {
    expect(toHostName('LocalHost:9000')).toBe('localhost');
    expect(toHostName('[::1]:9000')).toBe('[::1]');
    expect(toHostName('127.0.0.1')).toBe('127.0.0.1');
  });

  it('accepts only loopback Host values when listening on loopback', () => {
    expect(isHostAllowed('127.0.0.1:9000', loopback)).toBe(true);
    expect(isHostAllowed('localhost', loopback)).toBe(true);
    expect(isHostAllowed('evil.example.com', loopback)).toBe(false);
    expect(isHostAllowed(null, loopback)).toBe(false);
    expect(isHostAllowed('abc.cn-hangzhou.fcapp.run', public_)).toBe(true);
  });

  it('uses MCP_ALLOWED_HOSTS when set', () => {
    const policy = { ...public_, allowedHosts: ['mcp.example.com'] };
    expect(isHostAllowed('mcp.example.com:443', policy)).toBe(true);
    expect(isHostAllowed('other.example.com', policy)).toBe(false);
  });

  it('allows loopback origins by default and configured origins exactly', () => {
    expect(isOriginAllowed('http://localhost:6274', loopback)).toBe(true);
    expect(isOriginAllowed('http://127.0.0.1:3000', public_)).toBe(true);
    expect(isOriginAllowed('http://evil.example.com', loopback)).toBe(false);
    expect(isOriginAllowed('null', loopback)).toBe(false);
    const policy = { ...public_, allowedOrigins: ['https://app.example.com'] };
    expect(isOriginAllowed('https://app.example.com', policy)).toBe(true);
    expect(isOriginAllowed('https://app.example.com.evil.net', policy)).toBe(false);
    expect(isOriginAllowed('https://anything', { ...public_, allowedOrigins: ['*'] })).toBe(true);
  });
});
