/** Connects the official clients, v2 (`@modelcontextprotocol/client`) and v1 (`@modelcontextprotocol/sdk`), as users
 * do. */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import type { ClientFetch } from './http';

/** What the e2e suites use of either client. */
export interface TestClient {
  readonly kind: 'v1' | 'v2';
  readonly sessionId: string | undefined;
  listTools(): Promise<{
    tools: Array<{ name: string; inputSchema: unknown; outputSchema?: unknown; description?: string }>;
  }>;
  callTool(
    name: string,
    args?: Record<string, unknown>,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ToolResult>;
  /** `resources/read`, `resources/list` and `resources/templates/list`, as each client's own methods send them. */
  readResource(uri: string): Promise<{ contents: ResourceContents[] }>;
  listResources(): Promise<{ resources: Array<{ uri: string; name: string; mimeType?: string; size?: number }> }>;
  listResourceTemplates(): Promise<{ resourceTemplates: Array<{ uriTemplate: string; name: string }> }>;
  /** DELETE /mcp, then close. */
  terminate(): Promise<void>;
  close(): Promise<void>;
}

/** One content of a resource read: text or base64 `blob`. */
export interface ResourceContents {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
}

export interface ToolResult {
  content: Array<{
    type: string;
    text?: string;
    data?: string;
    mimeType?: string;
    uri?: string;
    name?: string;
    size?: number;
  }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ConnectOptions {
  token?: string;
  /** Sends the client's requests (the in-process harness's `fetch`). @default the global fetch */
  fetch?: ClientFetch;
}

/** Connects a client of the given kind to `url`. */
export async function connectClient(kind: 'v1' | 'v2', url: string, options: ConnectOptions = {}): Promise<TestClient> {
  const requestInit: RequestInit =
    options.token === undefined ? {} : { headers: { Authorization: `Bearer ${options.token}` } };
  if (kind === 'v2') {
    const client = new ClientV2({ name: 'e2e-v2', version: '1.0.0' });
    const transport = new TransportV2(new URL(url), {
      requestInit,
      ...(options.fetch !== undefined && { fetch: options.fetch }),
    });
    await client.connect(transport);
    return {
      kind,
      get sessionId() {
        return transport.sessionId;
      },
      listTools: () => client.listTools() as ReturnType<TestClient['listTools']>,
      readResource: (uri) => client.readResource({ uri }) as ReturnType<TestClient['readResource']>,
      listResources: () => client.listResources() as ReturnType<TestClient['listResources']>,
      listResourceTemplates: () => client.listResourceTemplates() as ReturnType<TestClient['listResourceTemplates']>,
      callTool: (name, args = {}, opts = {}) =>
        client.callTool(
          { name, arguments: args },
          { signal: opts.signal, timeout: opts.timeoutMs ?? 120_000 },
        ) as Promise<ToolResult>,
      terminate: async () => {
        await transport.terminateSession();
        await client.close();
      },
      close: () => client.close(),
    };
  }
  const client = new ClientV1({ name: 'e2e-v1', version: '1.0.0' });
  const transport = new TransportV1(new URL(url), {
    requestInit,
    ...(options.fetch !== undefined && { fetch: options.fetch }),
  });
  await client.connect(transport);
  return {
    kind,
    get sessionId() {
      return transport.sessionId;
    },
    listTools: () => client.listTools() as ReturnType<TestClient['listTools']>,
    readResource: (uri) => client.readResource({ uri }) as ReturnType<TestClient['readResource']>,
    listResources: () => client.listResources() as ReturnType<TestClient['listResources']>,
    listResourceTemplates: () => client.listResourceTemplates() as ReturnType<TestClient['listResourceTemplates']>,
    callTool: (name, args = {}, opts = {}) =>
      client.callTool({ name, arguments: args }, undefined, {
        signal: opts.signal,
        timeout: opts.timeoutMs ?? 120_000,
      }) as Promise<ToolResult>,
    terminate: async () => {
      await transport.terminateSession();
      await client.close();
    },
    close: () => client.close(),
  };
}

/** The text of a tool result's first text block. */
export function textOf(result: ToolResult): string {
  return result.content.find((c) => c.type === 'text')?.text ?? '';
}

/** A v2 client pinned to 2026-07-28 (no session: every call names its sandbox by handle), with a bearer token. */
export async function connectModern(url: string, token: string, name = 'modern-e2e'): Promise<ClientV2> {
  const client = new ClientV2(
    { name, version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new TransportV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}
