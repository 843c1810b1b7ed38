/**
 * `/health` lists every protocol revision the server serves and by which transport (protocol/versions.ts),
 * and every revision it lists for HTTP is served on `/mcp`. (stdio's list is negotiated by test/e2e/stdio.test.ts.)
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { createHarness, HARNESS_TOKEN, HARNESS_URL } from '../support/harness';
import { initializeBody } from '../support/http';
import { messagesOf } from '../support/raw-session';

interface ProtocolReport {
  supported: string[];
  preferred: string;
  transports: { http: string[]; stdio: string[] };
}

it('lists every revision served, by transport: 2026-07-28 over HTTP, 2024-11-05 over stdio', async () => {
  const h = createHarness();
  const health = (await (await h.fetch('http://127.0.0.1:9000/health')).json()) as { protocol: ProtocolReport };
  expect(health.protocol).toEqual({
    supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
    preferred: '2025-11-25',
    transports: {
      http: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
      stdio: ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
    },
  });
  await h.close();
});

it('serves on /mcp every revision /health lists for HTTP', async () => {
  const h = createHarness();
  const health = (await (await h.fetch('http://127.0.0.1:9000/health')).json()) as { protocol: ProtocolReport };
  for (const version of health.protocol.transports.http) {
    if (version >= '2026-07-28') {
      // No initialize in this era: the official client discovers the server at the pinned revision.
      const client = new Client(
        { name: 'health-check', version: '1.0.0' },
        { capabilities: {}, versionNegotiation: { mode: { pin: version } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(HARNESS_URL), {
          fetch: h.fetch,
          requestInit: { headers: { Authorization: `Bearer ${HARNESS_TOKEN}` } },
        }),
      );
      expect({ version, negotiated: client.getNegotiatedProtocolVersion() }).toEqual({ version, negotiated: version });
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } else {
      const res = await h.post(initializeBody(version));
      expect({
        version,
        answered: (messagesOf(res)[0]?.result as { protocolVersion?: string } | undefined)?.protocolVersion,
      }).toEqual({ version, answered: version });
    }
  }
  await h.close();
});
