/**
 * What the server needs to know of its authorization server, found from the issuer alone: RFC 8414 metadata
 * (`/.well-known/oauth-authorization-server` inserted before the issuer's path), then OpenID Connect discovery
 * (`/.well-known/openid-configuration` appended to it). A document counts only if it names the configured issuer
 * exactly (RFC 8414 §3.3, against a mix-up of issuers) and gives a `jwks_uri` on https, or on http for a loopback
 * issuer as the issuer itself may be.
 */
import { describeError } from '../../errors';

/** The fields of the metadata document this server uses. */
export interface IssuerMetadata {
  readonly issuer: string;
  readonly jwksUri: URL;
  /** `id_token_signing_alg_values_supported`, when the issuer publishes it: the algorithms it signs with. */
  readonly signingAlgorithms: readonly string[] | undefined;
  /** `introspection_endpoint` (RFC 7662), when published, on the same terms as `jwks_uri`. */
  readonly introspectionEndpoint: URL | undefined;
}

/** Why no usable metadata was found; the message names the URLs tried, never a token. */
export class IssuerMetadataError extends Error {
  override readonly name = 'IssuerMetadataError';
}

/** The URLs to try, in order. */
export function metadataUrls(issuer: string): URL[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    new URL(`${url.origin}/.well-known/oauth-authorization-server${path}`),
    new URL(`${url.origin}${path}/.well-known/openid-configuration`),
  ];
}

/** Fetches the issuer's metadata (each URL within `timeoutMs`, no redirects followed). */
export async function fetchIssuerMetadata(
  issuer: string,
  fetchImpl: typeof fetch,
  timeoutMs: number,
): Promise<IssuerMetadata> {
  const failures: string[] = [];
  for (const url of metadataUrls(issuer)) {
    try {
      const res = await fetchImpl(url, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status !== 200) {
        failures.push(`${url.href}: HTTP ${res.status}`);
        await res.body?.cancel();
        continue;
      }
      return toMetadata(issuer, (await res.json()) as unknown);
    } catch (err: unknown) {
      if (err instanceof IssuerMetadataError) throw new IssuerMetadataError(`${url.href}: ${err.message}`);
      failures.push(`${url.href}: ${describeError(err)}`);
    }
  }
  throw new IssuerMetadataError(`no metadata for issuer ${issuer} (${failures.join('; ')})`);
}

function toMetadata(issuer: string, doc: unknown): IssuerMetadata {
  if (typeof doc !== 'object' || doc === null) throw new IssuerMetadataError('the document is not a JSON object');
  const fields = doc as Record<string, unknown>;
  if (fields.issuer !== issuer)
    throw new IssuerMetadataError(`the document names issuer ${JSON.stringify(fields.issuer)}, not ${issuer}`);
  if (typeof fields.jwks_uri !== 'string') throw new IssuerMetadataError('the document has no jwks_uri');
  const jwksUri = endpointUrl(issuer, 'jwks_uri', fields.jwks_uri);
  const introspectionEndpoint =
    typeof fields.introspection_endpoint === 'string'
      ? endpointUrl(issuer, 'introspection_endpoint', fields.introspection_endpoint)
      : undefined;
  const algs = fields.id_token_signing_alg_values_supported;
  const signingAlgorithms =
    Array.isArray(algs) && algs.every((alg) => typeof alg === 'string') ? (algs as string[]) : undefined;
  return { issuer, jwksUri, signingAlgorithms, introspectionEndpoint };
}

/** An endpoint of the metadata: https, or http on the host of an http (loopback) issuer. */
function endpointUrl(issuer: string, field: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new IssuerMetadataError(`${field} is not a URL: ${value}`);
  }
  const issuerUrl = new URL(issuer);
  if (
    url.protocol !== 'https:' &&
    !(issuerUrl.protocol === 'http:' && url.protocol === 'http:' && url.hostname === issuerUrl.hostname)
  ) {
    throw new IssuerMetadataError(`${field} must use https: ${url.href}`);
  }
  return url;
}
