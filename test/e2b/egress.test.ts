/**
 * The egress policy tests both backends pass (test/support/egress-suite.ts), on the E2B backend: the built bundle
 * with SANDBOX_BACKEND=e2b creates its sandboxes through the real SDK against the local E2B service, which models
 * E2B's network settings and transform rules (test/support/e2b-local/sandbox-network.ts). What reaches a
 * destination there is what the settings the server sent allow, so these tests check the server's translation of
 * the policy (functions/mcp/egress/e2b-network.ts) end to end.
 */
import { readFileSync } from 'node:fs';

import { type LocalE2B, startLocalE2B } from '../support/e2b-local';
import { describeEgressPolicy } from '../support/egress-suite';
import { needs } from '../support/needs';

needs('bubblewrap', 'network clients').describe('the egress policy on the E2B backend (local E2B service)', () => {
  describeEgressPolicy({
    name: 'e2b',
    enforcedBy: "E2B's egress rules, set when the sandbox is created",
    start: async (resolver, caFile) => {
      const e2b: LocalE2B = await startLocalE2B({ resolver: [resolver], upstreamCa: [readFileSync(caFile, 'utf8')] });
      return { env: { SANDBOX_BACKEND: 'e2b', ...e2b.env() }, stop: () => e2b.stop() };
    },
    // E2B's transform rules are per name, for any port.
    secretHost: (name) => name,
  });
});
