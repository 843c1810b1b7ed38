/**
 * Set-up for the E2B wire suites (`test/e2b/`): the built bundle on the E2B backend, its real SDKs talking over
 * HTTP to the local E2B-compatible service (`test/support/e2b-local/`). `npm test` runs them on the Node running the
 * tests; `npm run test:reliability` runs them again on the Node FC runs the function on (22.23.2, of FC's Nodejs22
 * layer, from the deploy tools): jest.reliability.config.js sets WIRE_NODE=fc for that. Node 20.10.0, of the older
 * custom.debian10 runtime, is covered by the boot test (test/deploy/bundle-node.test.ts).
 *
 * With `E2B_WIRE_TARGET=live` (`npm run test:live`, jest.live.config.js) the same suites run against real E2B
 * instead: E2B's cloud, or Alibaba Cloud's service with E2B_DOMAIN; E2B_API_KEY is required, E2B_DOMAIN,
 * E2B_API_URL, E2B_SANDBOX_URL and E2B_TEMPLATE are passed through. Tests that look inside the service (its
 * request log, its faults) are declared with `serviceIt`/`serviceDescribe` and reported as skipped there; the
 * Alibaba suite runs live only against Alibaba Cloud's service.
 */
import { connectClient, type TestClient, type ToolResult } from './clients';
import { NODE_22 } from './deploy-tools';
import { type LocalE2B, startLocalE2B } from './e2b-local';
import { needs } from './needs';
import { findFreePort, startServer, type StartedServer } from './server';

export const WIRE_TOKEN = 'e2b-wire-token-0123456789abcdef';

/** True when the suites run against real E2B (`E2B_WIRE_TARGET=live`). */
export const LIVE = process.env.E2B_WIRE_TARGET === 'live';
/** Settings passed to the server as they are, against real E2B. */
const LIVE_PASS_THROUGH = ['E2B_API_KEY', 'E2B_DOMAIN', 'E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_TEMPLATE'] as const;

/** Whether this run puts the server on FC's Node (WIRE_NODE=fc, the reliability run) instead of the current one. */
const ON_FC_NODE = process.env.WIRE_NODE === 'fc';
/** The local service runs each sandbox under bubblewrap (e2b-local/sandbox-runtime.ts), and FC's Node comes with the
 * deploy tools: without them, the suites are skipped. */
const localService = ON_FC_NODE ? needs('bubblewrap', 'the deploy tools') : needs('bubblewrap');
/** A suite on the wire: the local service's, or real E2B's. */
export const wireDescribe: jest.Describe = LIVE ? describe : localService.describe;
/** A test that needs the local service itself (its files, request log or faults): skipped against real E2B. */
export const serviceIt: jest.It = LIVE ? it.skip : it;
/** A suite that needs the local service itself: skipped against real E2B. */
export const serviceDescribe: jest.Describe = LIVE ? describe.skip : localService.describe;
/** True against Alibaba Cloud's real service (E2B_DOMAIN on aliyuncs.com). */
const LIVE_ON_ALIBABA = LIVE && /aliyuncs\.com$/i.test(process.env.E2B_DOMAIN?.trim() ?? '');
/** A suite for Alibaba Cloud's service: the local one switched to it, or the real one. */
export const alibabaDescribe: jest.Describe = LIVE_ON_ALIBABA ? describe : LIVE ? describe.skip : localService.describe;
/** A test of images returned inline by the interpreter, which Alibaba Cloud's service does not do. */
export const inlineImagesIt: jest.It = LIVE_ON_ALIBABA ? it.skip : it;
/** The domain preview hosts are under: E2B's default, or E2B_DOMAIN against real E2B. */
export const PREVIEW_DOMAIN = (LIVE ? process.env.E2B_DOMAIN?.trim() : undefined) || 'e2b.app';

/** [name, Node binary] of the server: the current Node, or (WIRE_NODE=fc) the Node FC runs the function on. */
export const NODES: Array<[string, string]> = ON_FC_NODE
  ? [['Node 22.23.2 (FC)', NODE_22]]
  : [['the current Node', process.execPath]];

export interface Wire {
  /** The local service (throws against real E2B: such tests are `serviceIt`). */
  readonly e2b: LocalE2B;
  readonly server: StartedServer;
  /** The server's environment (another instance of the same deployment starts with it). */
  readonly env: Readonly<Record<string, string>>;
  /** A v2 client with the suite's token. */
  connect(): Promise<TestClient>;
  /** Stops the server (keeping the service) and starts another instance of the same deployment on its port. */
  restartServer(): Promise<void>;
  stop(): Promise<void>;
}

export interface WireOptions {
  /** Extra server environment. */
  env?: Record<string, string>;
  flavor?: 'e2b' | 'alibaba';
  /** What the local service offers of sandbox persistence (its `pause` option). @default 'memory' */
  pause?: 'memory' | 'files' | 'none';
}

/** Starts the service and a server on `node` pointed at it. */
export async function startWire(node: string, options: WireOptions = {}): Promise<Wire> {
  const e2b = LIVE ? undefined : await startLocalE2B({ flavor: options.flavor, pause: options.pause });
  const env = {
    SANDBOX_BACKEND: 'e2b',
    ...(e2b === undefined ? liveEnv() : e2b.env()),
    MCP_AUTH_TOKENS: WIRE_TOKEN,
    MCP_SESSION_SECRET: 'e2b-wire-session-secret-0123456789abcdef',
    E2B_MAX_CREATES_PER_S: '50',
    ...options.env,
  };
  // One port for the deployment: a client keeps talking to it across a restart.
  const port = await findFreePort();
  let server = await startServer({ node, env, port });
  const clients: TestClient[] = [];
  return {
    get e2b() {
      if (e2b === undefined) throw new Error('this test looks inside the local E2B service: declare it with serviceIt');
      return e2b;
    },
    get server() {
      return server;
    },
    env,
    async connect() {
      const client = await connectClient('v2', server.url, { token: WIRE_TOKEN });
      clients.push(client);
      return client;
    },
    async restartServer() {
      await server.stop();
      server = await startServer({ node, env, port });
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await server.stop();
      await e2b?.stop();
    },
  };
}

/** The server's E2B settings against real E2B, from this process's environment. */
function liveEnv(): Record<string, string> {
  if (!process.env.E2B_API_KEY?.trim())
    throw new Error('E2B_WIRE_TARGET=live needs E2B_API_KEY (and E2B_DOMAIN for Alibaba Cloud)');
  const env: Record<string, string> = {};
  for (const name of LIVE_PASS_THROUGH) {
    const value = process.env[name]?.trim();
    if (value) env[name] = value;
  }
  return env;
}

/** A suite's wire and one client on it, started before its tests and stopped after them. */
export interface SuiteWire {
  readonly wire: Wire;
  readonly client: TestClient;
}

/** Registers `beforeAll`/`afterAll` for a suite that shares one wire and one connected client. */
export function suiteWire(node: string, options: WireOptions = {}): SuiteWire {
  let wire: Wire | undefined;
  let client: TestClient | undefined;
  beforeAll(async () => {
    wire = await startWire(node, options);
    client = await wire.connect();
  });
  afterAll(() => wire?.stop());
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the suite wire is not started (use it inside a test)');
    return value;
  };
  return {
    get wire() {
      return started(wire);
    },
    get client() {
      return started(client);
    },
  };
}

/** The structured result of a tool call that must have succeeded. */
export function ok<T = Record<string, unknown>>(result: ToolResult): T {
  if (result.isError === true)
    throw new Error(`the tool failed: ${result.content.map((c) => c.text ?? '').join('\n')}`);
  return result.structuredContent as T;
}

/** The text of a tool call that must have failed. */
export function failure(result: ToolResult): string {
  const text = result.content.map((c) => c.text ?? '').join('\n');
  if (result.isError !== true) throw new Error(`the tool succeeded, expected a failure: ${text}`);
  return text;
}
