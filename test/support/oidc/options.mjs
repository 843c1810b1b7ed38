/**
 * The options of the test OpenID provider (provider.mjs), read from JSON and checked: a typo in a test's options
 * fails the provider's start with a clear message instead of running with a default nobody asked for.
 */

/** What a test gets when it says nothing. */
export const DEFAULT_OPTIONS = Object.freeze({
  /** The scopes every resource server accepts (what a consent can grant for a `resource`). */
  scopes: ['mcp:tools'],
  /** Lifetime of the JWT access tokens, in seconds (short in a test of expiry). */
  accessTokenTtlS: 300,
  /** The one account the scripted sign-in logs in: the access token's `sub`. */
  accountId: 'user-1',
  /** The resource indicator used when a client sends none (RFC 8707); none by default: such a request gets no JWT. */
  defaultResource: undefined,
});

const KNOWN = new Set(Object.keys(DEFAULT_OPTIONS));

/** Parses and checks the options JSON (empty or missing: all defaults); throws on anything unexpected. */
export function parseOptions(json) {
  const given = json === undefined || json.trim() === '' ? {} : JSON.parse(json);
  if (given === null || typeof given !== 'object' || Array.isArray(given))
    throw new Error('options must be a JSON object');
  for (const key of Object.keys(given)) {
    if (!KNOWN.has(key)) throw new Error(`unknown option "${key}" (known: ${[...KNOWN].join(', ')})`);
  }
  const options = { ...DEFAULT_OPTIONS, ...given };
  const { scopes, accessTokenTtlS, accountId, defaultResource } = options;
  // A scope is one token of the space-separated `scope` parameter (RFC 6749 section 3.3).
  if (
    !Array.isArray(scopes) ||
    scopes.length === 0 ||
    !scopes.every((s) => typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))
  ) {
    throw new Error('scopes must be a non-empty array of scope tokens (no spaces)');
  }
  if (!Number.isInteger(accessTokenTtlS) || accessTokenTtlS <= 0)
    throw new Error('accessTokenTtlS must be a positive integer');
  if (typeof accountId !== 'string' || accountId === '') throw new Error('accountId must be a non-empty string');
  if (defaultResource !== undefined && (typeof defaultResource !== 'string' || !URL.canParse(defaultResource))) {
    throw new Error('defaultResource must be an absolute URL');
  }
  return options;
}
