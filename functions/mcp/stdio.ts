/**
 * The stdio entry: the same tools for local clients that speak stdio only. One connection, one
 * sandbox, killed when stdin closes. Lines that are not JSON-RPC get a JSON-RPC error; serving goes on.
 */
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';

import { parseJSONRPCMessage } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

import { loadConfig, type Config } from './config';
import { installCrashGuards } from './crash-guard';
import { describeError } from './errors';
import { toErrorAnswer } from './http/refusals';
import { createLogger, createStreamSink } from './log';
import { jsonRpcIdOf } from './protocol/plain-message';
import { createProtocolServer } from './protocol/server-factory';
import { createSessionResources } from './resources/file-resources';
import { SESSION_SANDBOX } from './resources/sandbox-uris';
import { STDIO_INSTRUCTIONS } from './protocol/server-identity';
import { STDIO_PROTOCOL_VERSIONS } from './protocol/versions';
import { createSandboxProvider } from './sandbox/create-provider';
import { createLazySandbox } from './sandbox/lazy-sandbox';
import { installStackMaps } from './stack-maps';
import { createToolCatalog, HTTP_ONLY_TOOLS } from './tools/registry';
import { toToolContext } from './tools/tool';

/** Answers a line that is not a JSON-RPC message; returns true when the line may go to the SDK. */
function screenLine(line: string, write: (text: string) => void): boolean {
  if (line.trim() === '') return false;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    write(`${toErrorAnswer({ kind: 'line_not_json' }).body}\n`);
    return false;
  }
  try {
    parseJSONRPCMessage(value);
    return true;
  } catch {
    write(`${toErrorAnswer({ kind: 'line_not_json_rpc' }, jsonRpcIdOf(value)).body}\n`);
    return false;
  }
}

async function main(): Promise<void> {
  // Logged stacks name functions/…/*.ts through the maps beside the bundle (read only when a stack is formatted).
  installStackMaps(__filename);
  let config: Config;
  try {
    config = loadConfig({
      ...process.env,
      MCP_AUTH: 'none',
      MCP_AUTH_TOKENS: undefined,
      MCP_AUTH_TOKEN_FILE: undefined,
      HOST: '127.0.0.1',
    });
  } catch (err: unknown) {
    process.stderr.write(`${describeError(err)}\n`);
    process.exitCode = 1;
    return;
  }
  // stdout carries the protocol: logs go to stderr.
  const logger = createLogger(createStreamSink(process.stderr), config.logLevel);
  installCrashGuards(logger);
  const { provider } = createSandboxProvider(config, logger);
  const sandbox = createLazySandbox(provider, {
    sessionKey: `stdio-${randomBytes(16).toString('hex')}`,
    principal: 'stdio',
  });
  const startedMs = Date.now();
  // One connection, one sandbox: no owner whose other sandboxes a call could open.
  const catalog = createToolCatalog(logger, undefined, { omit: HTTP_ONLY_TOOLS });
  const server = createProtocolServer({
    tools: catalog.list,
    resources: createSessionResources("this connection's sandbox", async (_ctx, use) => use(await sandbox.existing())),
    versions: STDIO_PROTOCOL_VERSIONS,
    instructions: STDIO_INSTRUCTIONS,
    call: (name, args, ctx) =>
      catalog.call(
        name,
        args,
        toToolContext(ctx, {
          sandbox,
          sandboxRef: SESSION_SANDBOX,
          backend: () => provider.status(),
          // One connection, one sandbox: it lasts as long as the process.
          expiresAt: () => new Date(startedMs + 365 * 24 * 3600 * 1000),
          toolTimeoutMaxMs: config.toolTimeoutMaxS * 1000,
        }),
      ),
  });

  const input = new PassThrough();
  const write = (text: string): void => void process.stdout.write(text);
  createInterface({ input: process.stdin, crlfDelay: Infinity })
    .on('line', (line) => {
      if (screenLine(line, write)) input.write(`${line}\n`);
    })
    .on('close', () => input.end());

  let closing = false;
  const shutdown = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    await sandbox.kill().catch(() => undefined);
    await logger.flush();
    process.exit(0);
  };
  const transport = new StdioServerTransport(input, process.stdout);
  transport.onclose = () => void shutdown();
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  await server.connect(transport);
  logger.info('serving MCP over stdio', { versions: STDIO_PROTOCOL_VERSIONS.join(',') });
}

void main();
