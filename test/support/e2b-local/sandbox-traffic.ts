/**
 * Traffic for a sandbox (what E2B's sandbox proxy routes by the `E2b-Sandbox-Id` and `E2b-Sandbox-Port`
 * headers when the SDK is given a `sandboxUrl`): envd on port 49983, the code interpreter on 49999. The proxy's
 * answers are modelled on that proxy's: 502 JSON `{sandboxId, message, code}` for a
 * sandbox that is not running ("The sandbox was not found") and for a port nothing listens on ("The sandbox
 * is running but port is not open"); the SDK reads 502 as a sandbox gone (TimeoutError, SandboxNotFoundError
 * for a command start, `isRunning()` false). A paused sandbox is not running: that proxy, which routes only to
 * running sandboxes, answers it as not found (E2B's newer proxy answers 409 "The sandbox is paused"; this
 * model keeps the answer the SDK reads as a sandbox that is not running). Traffic does not resume it
 * (`autoResume` is not modelled).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { ConnectError, serveConnect, writeUnaryError } from './connect';
import { writeJsonError } from './envd-files';
import type { LocalSandbox, SandboxRegistry } from './sandboxes';

export const ENVD_PORT = 49983;
export const INTERPRETER_PORT = 49999;

const INTERPRETER_PATH = /^\/(execute|contexts)(\/|$)/;

/** Paths that only sandbox traffic uses (told apart from the control plane when the id header is missing). */
export function isSandboxPath(pathname: string): boolean {
  return (
    pathname === '/health' ||
    pathname === '/files' ||
    pathname.startsWith('/process.Process/') ||
    pathname.startsWith('/filesystem.Filesystem/') ||
    INTERPRETER_PATH.test(pathname)
  );
}

function writeProxyError(res: ServerResponse, body: Record<string, unknown>): void {
  const data = Buffer.from(JSON.stringify({ ...body, code: 502 }));
  res.writeHead(502, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': data.length });
  res.end(data);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The port a request is for: its `E2b-Sandbox-Port`, else what its path implies. */
export function portOf(req: IncomingMessage, pathname: string): number {
  const port = Number(header(req, 'e2b-sandbox-port'));
  if (Number.isInteger(port) && port > 0) return port;
  return INTERPRETER_PATH.test(pathname) ? INTERPRETER_PORT : ENVD_PORT;
}

/**
 * The sandbox of a signed `/files` URL that names none: `downloadUrl`/`uploadUrl` are built on the sandbox URL
 * (its host names the sandbox on E2B, not here) and carry no headers, but their signature is made with one
 * sandbox's access token.
 */
export function signerOf(registry: SandboxRegistry, req: IncomingMessage, url: URL): string | undefined {
  if (url.pathname !== '/files' || !url.searchParams.has('signature')) return undefined;
  return registry.all().find((s) => s.files.signedBy(url, req.method))?.id;
}

/** Serves one request for sandbox `sandboxId` (undefined when the request named none). */
export async function serveSandboxTraffic(
  registry: SandboxRegistry,
  sandboxId: string | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  if (sandboxId === undefined) {
    req.resume();
    writeJsonError(res, 400, 'missing E2b-Sandbox-Id header');
    return;
  }
  const sandbox = registry.get(sandboxId);
  const port = portOf(req, url.pathname);
  if (sandbox === undefined || sandbox.state === 'paused') {
    req.resume();
    writeProxyError(res, { sandboxId, message: 'The sandbox was not found' });
    return;
  }
  const listening = port === ENVD_PORT || (port === INTERPRETER_PORT && sandbox.hasInterpreter);
  if (sandbox.envdCut || !listening) {
    req.resume();
    writeProxyError(res, { sandboxId, message: 'The sandbox is running but port is not open', port });
    return;
  }
  sandbox.track(res);
  if (port === INTERPRETER_PORT) await serveInterpreter(sandbox, req, res, url);
  else await serveEnvd(sandbox, req, res, url);
}

async function serveInterpreter(
  sandbox: LocalSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  let interpreter: Awaited<ReturnType<typeof sandbox.interpreterOf>>;
  try {
    interpreter = await sandbox.interpreterOf();
  } catch (err) {
    req.resume();
    const message = `The sandbox is running but port is not open (no local interpreter: ${(err as Error).message})`;
    writeProxyError(res, { sandboxId: sandbox.id, message, port: INTERPRETER_PORT });
    return;
  }
  await interpreter.handle(req, res, url.pathname);
}

/**
 * envd: the access token on everything but `GET /health` and `GET`/`POST /files` (which take a signature instead;
 * any other method on /files needs the token, then gets envd's 405).
 */
async function serveEnvd(sandbox: LocalSandbox, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { pathname } = url;
  const open =
    (req.method === 'GET' && pathname === '/health') ||
    (pathname === '/files' && (req.method === 'GET' || req.method === 'POST'));
  if (!open && sandbox.accessToken !== undefined && header(req, 'x-access-token') !== sandbox.accessToken) {
    req.resume();
    writeJsonError(res, 401, 'unauthorized access, please provide a valid access token or method signing if supported');
    return;
  }
  if (pathname === '/health' && req.method === 'GET') {
    req.resume();
    res.writeHead(204);
    res.end();
    return;
  }
  if (pathname === '/files') return sandbox.files.handle(req, res, url);
  const rpc = /^\/(process\.Process|filesystem\.Filesystem)\/([A-Za-z]+)$/.exec(pathname);
  if (rpc !== null) {
    const service = rpc[1] === 'process.Process' ? sandbox.processes.service : sandbox.filesystem.service;
    return serveConnect(service, rpc[2]!, req, res);
  }
  req.resume();
  if (pathname.startsWith('/process.') || pathname.startsWith('/filesystem.'))
    writeUnaryError(res, new ConnectError('unimplemented', `${pathname} is not implemented`));
  else {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('404 page not found\n');
  }
}
