/**
 * Preloaded into a client process an interop suite spawns (`node --require <this file> <program>`): every TCP
 * connection (net, http, https, fetch) and every `dns.lookup` the process starts is reported on stderr as a
 * `loopback-only:` line, and one to anything but loopback is refused before it leaves the machine. The suite then
 * checks that the lines name the server under test and nothing else (test/interop/mcp-remote.test.ts). Raw
 * resolver queries (`dns.resolve*`) and UDP are not covered: nothing the clients run here makes them.
 */
'use strict';
const dns = require('node:dns');
const net = require('node:net');

const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|::1|::ffff:127(?:\.\d{1,3}){3})$/i;

function report(kind, target) {
  process.stderr.write(`loopback-only: ${kind} ${target}\n`);
}

/** The host and port of Socket#connect's arguments: (options[, cb]), (port[, host][, cb]), (path[, cb]), or
 * net.connect's normalized list. */
function targetOf(args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first !== null && typeof first === 'object') {
    if (typeof first.path === 'string') return { local: true, target: first.path };
    return { local: false, host: String(first.host ?? 'localhost'), port: first.port };
  }
  if (typeof first === 'string' && Number.isNaN(Number(first))) return { local: true, target: first };
  return { local: false, host: typeof args[1] === 'string' ? args[1] : 'localhost', port: first };
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  const where = targetOf(args);
  if (where.local) return connect.apply(this, args);
  const target = `${where.host}:${where.port}`;
  if (!LOOPBACK.test(where.host)) {
    report('refused', target);
    process.nextTick(() => this.destroy(new Error(`loopback-only: refused a connection to ${target}`)));
    return this;
  }
  report('connect', target);
  return connect.apply(this, args);
};

const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname, ...rest) {
  if (!LOOPBACK.test(String(hostname))) {
    report('refused-lookup', hostname);
    const callback = rest[rest.length - 1];
    const error = Object.assign(new Error(`loopback-only: refused to look up ${hostname}`), { code: 'ENOTFOUND' });
    if (typeof callback === 'function') process.nextTick(callback, error);
    return undefined;
  }
  return lookup.call(this, hostname, ...rest);
};
const promisedLookup = dns.promises.lookup;
dns.promises.lookup = async function guardedPromisedLookup(hostname, ...rest) {
  if (!LOOPBACK.test(String(hostname))) {
    report('refused-lookup', hostname);
    throw Object.assign(new Error(`loopback-only: refused to look up ${hostname}`), { code: 'ENOTFOUND' });
  }
  return promisedLookup.call(this, hostname, ...rest);
};
