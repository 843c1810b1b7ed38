/**
 * A local sandbox's way out, when its policy lets anything out (egress/policy.ts): its network namespace keeps no
 * route out, its supervisor listens on 127.0.0.1:EGRESS_PROXY_PORT inside it, and every process of it finds that
 * listener in the proxy variables that curl, pip, npm, git, Python and Node read. Connections to it are carried
 * to the server's egress proxy (egress/proxy.ts), which judges and makes them.
 */
import type { EgressPolicy } from '../../egress/policy';
import type { SandboxStream } from './supervisor-streams';

/** The port of the supervisor's egress listener, inside the sandbox's own network. */
export const EGRESS_PROXY_PORT = 3128;

/** What a sandbox with egress needs: its policy (shown by sandbox_status) and where its connections go. */
export interface SandboxEgress {
  readonly policy: EgressPolicy;
  /** Takes one connection from inside, carried by the supervisor. */
  serve(stream: SandboxStream): void;
}

/** The variables that point every usual client at the listener; the sandbox's own addresses stay direct. */
export function proxyEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${EGRESS_PROXY_PORT}`;
  const direct = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: direct,
    no_proxy: direct,
    // Node 24 reads the variables above only when asked to.
    NODE_USE_ENV_PROXY: '1',
  };
}
