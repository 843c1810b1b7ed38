/**
 * A real OpenID provider for the tests of OAuth sign-in, and the scripted browser that signs in at it.
 *
 * startOidcProvider runs test/support/oidc/provider.mjs (oidc-provider, ESM-only, in a child Node process) on a
 * free loopback port: dynamic registration open to anyone, public clients, PKCE S256, and JWT access tokens whose
 * `aud` is the RFC 8707 `resource` the client sent. completeAuthorization plays the user: it follows an
 * authorization URL through the provider's redirects (its interaction route signs in and consents at once) to
 * the client's redirect_uri, and returns that URL with its `code` and `state`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

import { CookieJar } from './oidc/cookie-jar';

const PROVIDER_SCRIPT = resolve(__dirname, 'oidc/provider.mjs');
/** How long a start may take before it is called failed: bounds a hang on a busy machine, not a speed check. */
const START_TIMEOUT_MS = 20_000;
/** The redirects of one authorization: authorize, login, resume, consent, resume, client; room to spare. */
const MAX_REDIRECTS = 20;
/** The end of the child's stderr kept for error messages. */
const STDERR_KEPT = 16_384;

export interface OidcProviderOptions {
  /** The scopes a resource server accepts: the most a consent grants. @default ['mcp:tools'] */
  scopes?: string[];
  /** Lifetime of the JWT access tokens, in seconds. @default 300 */
  accessTokenTtlS?: number;
  /** The account the scripted sign-in logs in: the tokens' `sub`. @default 'user-1' */
  accountId?: string;
  /** The resource used when an authorization request names none. @default none: such a request gets no JWT */
  defaultResource?: string;
}

export interface StartedOidcProvider {
  /** `http://127.0.0.1:<port>`, no trailing slash: the `iss` of its tokens. */
  readonly issuer: string;
  /** The end of what the provider wrote to stderr (oidc-provider's warnings, failed interactions). */
  stderr(): string;
  stop(): Promise<void>;
}

const running = new Set<StartedOidcProvider>();
// A safety net for a test file that dies before its afterAll: no provider outlives the test process.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** The issuer in the provider's ready line, `{"issuer":"..."}`, if `line` is that line. */
function readyIssuer(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && 'issuer' in parsed && typeof parsed.issuer === 'string')
      return parsed.issuer;
  } catch {
    // not the ready line
  }
  return undefined;
}

/** Starts a provider; resolves once it printed its issuer (rejects with its stderr if it dies or is late). */
export async function startOidcProvider(options: OidcProviderOptions = {}): Promise<StartedOidcProvider> {
  const child = spawn(process.execPath, [PROVIDER_SCRIPT, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEPT);
  });
  let stdout = '';
  let ready = false;
  const issuer = await new Promise<string>((resolveIssuer, reject) => {
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`OpenID provider ${why}\n--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`));
    };
    const timer = setTimeout(() => fail(`did not print its issuer within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    // oidc-provider prints its notices on stdout too: the ready line is the first JSON line with an issuer.
    // The listener stays after the ready line so that the pipe keeps draining; what comes later is not kept.
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (ready) return;
      stdout += chunk;
      for (const line of stdout.split('\n').slice(0, -1)) {
        const found = readyIssuer(line);
        if (found !== undefined) {
          ready = true;
          clearTimeout(timer);
          child.removeListener('close', onClose);
          resolveIssuer(found);
          return;
        }
      }
    });
    // 'close' rather than 'exit': it comes after the pipes are drained, so the message has all of stderr.
    const onClose = (code: number | null, signal: string | null): void =>
      fail(`exited (code ${code}, signal ${signal}) before printing its issuer`);
    child.once('close', onClose);
  });

  const provider: StartedOidcProvider = {
    issuer,
    stderr: () => stderr,
    async stop() {
      running.delete(provider);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(provider);
  return provider;
}

/** Stops every provider still running (for each test file's afterAll). */
export async function stopAllOidcProviders(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Plays the user at the provider: GETs `authorizationUrl` and every redirect after it with plain fetch, carrying
 * the provider's cookies itself, until a redirect leaves the provider's origin (that of `authorizationUrl`), and
 * returns where that redirect points: the client's redirect_uri with `code` and `state`, or with `error`. The
 * redirect_uri is not fetched. Throws when the provider answers without a redirect (an error page, say).
 */
export async function completeAuthorization(authorizationUrl: URL | string): Promise<URL> {
  let url = new URL(authorizationUrl);
  const providerOrigin = url.origin;
  const jar = new CookieJar();
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const cookie = jar.headerFor(url);
    const response = await fetch(url, { redirect: 'manual', headers: cookie === undefined ? {} : { cookie } });
    jar.store(url, response.headers.getSetCookie());
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || location === null) {
      const body = await response.text();
      throw new Error(
        `authorization stopped at ${url.href}: HTTP ${response.status} without a redirect\n${body.slice(0, 2_000)}`,
      );
    }
    await response.body?.cancel();
    const next = new URL(location, url);
    if (next.origin !== providerOrigin) return next;
    url = next;
  }
  throw new Error(`authorization did not leave ${providerOrigin} after ${MAX_REDIRECTS} redirects (last: ${url.href})`);
}
