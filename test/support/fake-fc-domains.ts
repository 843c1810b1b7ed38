/**
 * Custom domains in the fake FC API: GetCustomDomain, CreateCustomDomain and UpdateCustomDomain (a partial update: a
 * certificate left out stays). HTTPS needs a whole certificate, a tlsConfig follows fc3-domain's schema, and a route's
 * qualifier must name a version or alias of its function. The private key is never given back.
 */
import {
  type Answer,
  API_VERSION,
  copy,
  type FcRequest,
  type FcState,
  isObject,
  ok,
  type Resource,
  type RestRoute,
  refuse,
} from './fake-fc-state';
import { checkQualifier } from './fake-fc-versions';

/** fc3-domain's schema: minVersion and maxVersion among these, in this order. */
const TLS_VERSIONS = ['TLSv1.0', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** FC serves HTTPS only with a whole certificate: name, certificate and private key. */
function checkDomainTls(domain: Resource): string | undefined {
  const protocol = String(domain.protocol ?? '');
  if (!['HTTP', 'HTTPS', 'HTTP,HTTPS'].includes(protocol))
    return `protocol must be HTTP, HTTPS or HTTP,HTTPS (got "${protocol}")`;
  const cert = (domain.certConfig ?? undefined) as Resource | undefined;
  if (
    cert !== undefined &&
    !['certName', 'certificate', 'privateKey'].every((field) => typeof cert[field] === 'string' && cert[field] !== '')
  ) {
    return 'certConfig needs certName, certificate and privateKey';
  }
  if (protocol.includes('HTTPS') && cert === undefined) return `protocol ${protocol} needs certConfig`;
  return undefined;
}

/** A tlsConfig: minVersion (and maxVersion, if given) known, min ≤ max, cipherSuites a non-empty list of names. */
function checkTlsConfig(tls: unknown): string | undefined {
  if (tls === undefined || tls === null) return undefined;
  if (!isObject(tls)) return 'tlsConfig must be an object';
  const min = TLS_VERSIONS.indexOf(String(tls.minVersion));
  if (min < 0) return `tlsConfig.minVersion must be one of ${TLS_VERSIONS.join(', ')}`;
  const max = tls.maxVersion === undefined ? TLS_VERSIONS.length - 1 : TLS_VERSIONS.indexOf(String(tls.maxVersion));
  if (max < 0) return `tlsConfig.maxVersion must be one of ${TLS_VERSIONS.join(', ')}`;
  if (min > max) return `tlsConfig.minVersion ${String(tls.minVersion)} is above maxVersion ${String(tls.maxVersion)}`;
  const suites = tls.cipherSuites;
  if (!Array.isArray(suites) || suites.length === 0 || !suites.every((s) => typeof s === 'string' && s !== ''))
    return 'tlsConfig.cipherSuites must be a non-empty list of cipher suite names';
  return undefined;
}

/** Each route's qualifier (LATEST when left out) must name something of its function. */
function checkRoutes(state: FcState, domain: Resource): Answer | undefined {
  const routes = isObject(domain.routeConfig) ? domain.routeConfig.routes : undefined;
  if (!Array.isArray(routes)) return undefined;
  for (const route of routes) {
    const qualifier = isObject(route) ? route.qualifier : undefined;
    if (qualifier === undefined || qualifier === 'LATEST') continue;
    const name = String((route as Resource).functionName ?? '');
    if (!state.functions.has(name))
      return refuse(404, 'FunctionNotFound', `the route to ${name}:${String(qualifier)} names no function`);
    const problem = checkQualifier(state, name, String(qualifier));
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function checkDomain(state: FcState, domain: Resource): Answer | undefined {
  const problem = checkDomainTls(domain) ?? checkTlsConfig(domain.tlsConfig);
  return problem === undefined ? checkRoutes(state, domain) : refuse(400, 'InvalidArgument', problem);
}

/** The fake never gives a private key back: a deploy that needs FC to return one (to re-send it) fails here. */
function withoutPrivateKey(domain: Resource): Resource {
  const cert = domain.certConfig as Resource | undefined;
  if (cert === undefined) return domain;
  const { privateKey: _privateKey, ...rest } = cert;
  return { ...domain, certConfig: rest };
}

function get(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const domain = state.domains.get(name);
  return domain === undefined
    ? refuse(404, 'DomainNameNotFound', `domain '${name}' does not exist`)
    : ok(withoutPrivateKey(domain));
}

function create(state: FcState, req: FcRequest): Answer {
  const domainName = String(req.body.domainName ?? '');
  if (state.domains.has(domainName))
    return refuse(409, 'DomainNameAlreadyExists', `domain '${domainName}' already exists`);
  const domain = {
    protocol: 'HTTP',
    ...req.body,
    accountId: state.accountId,
    createdTime: req.now,
    lastModifiedTime: req.now,
  };
  const problem = checkDomain(state, domain);
  if (problem !== undefined) return problem;
  state.domains.set(domainName, copy(domain));
  return ok(withoutPrivateKey(domain));
}

function update(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const domain = state.domains.get(name);
  if (domain === undefined) return refuse(404, 'DomainNameNotFound', `domain '${name}' does not exist`);
  // A partial update: fields left out stay as they are (the certificate too).
  const updated = { ...domain, ...req.body, lastModifiedTime: req.now };
  const problem = checkDomain(state, updated);
  if (problem !== undefined) return problem;
  state.domains.set(name, copy(updated));
  return ok(withoutPrivateKey(updated));
}

const DOMAINS = new RegExp(`^/${API_VERSION}/custom-domains$`);
const DOMAIN = new RegExp(`^/${API_VERSION}/custom-domains/([^/]+)$`);

export const DOMAIN_ROUTES: RestRoute[] = [
  { method: 'GET', pattern: DOMAIN, action: 'GetCustomDomain', handle: get },
  { method: 'POST', pattern: DOMAINS, action: 'CreateCustomDomain', handle: create },
  { method: 'PUT', pattern: DOMAIN, action: 'UpdateCustomDomain', handle: update },
];
