/**
 * Function versions in the fake FC API: PublishFunctionVersion snapshots the function's configuration under the next
 * version id ("1", "2", …), ListFunctionVersions pages through them; and what a qualifier may name (LATEST, a version,
 * an alias), which triggers, domain routes and capacity settings check.
 */
import {
  type Answer,
  copy,
  type FcRequest,
  type FcState,
  type FunctionVersion,
  functionNotFound,
  functionPath,
  ok,
  type RestRoute,
  refuse,
} from './fake-fc-state';

/** FC's own page size limit; the default is the fake's. */
const MAX_LIMIT = 100;
const DEFAULT_LIMIT = 20;

/**
 * Whether `qualifier` names something of function `name`: LATEST, one of its versions (digits) or one of its
 * aliases. Undefined when it does; the refusal otherwise (404 VersionNotFound / AliasNotFound).
 */
export function checkQualifier(state: FcState, name: string, qualifier: string): Answer | undefined {
  if (qualifier === 'LATEST') return undefined;
  if (qualifier === '') return refuse(400, 'InvalidArgument', 'qualifier is empty: name LATEST, a version or an alias');
  if (/^\d+$/.test(qualifier))
    return findVersion(state, name, qualifier) === undefined
      ? refuse(404, 'VersionNotFound', `version '${qualifier}' of function '${name}' does not exist`)
      : undefined;
  return state.aliases.has(`${name}/${qualifier}`)
    ? undefined
    : refuse(404, 'AliasNotFound', `alias '${qualifier}' of function '${name}' does not exist`);
}

export function findVersion(state: FcState, name: string, versionId: string): FunctionVersion | undefined {
  return state.versions.get(name)?.find((v) => v.versionId === versionId);
}

/** A version as the API shows it (the snapshot stays in the fake). */
function publicVersion({ config: _config, ...version }: FunctionVersion): Omit<FunctionVersion, 'config'> {
  return version;
}

/** `limit` from the query: the default when absent, a refusal when it is not an integer in 1–100. */
export function pageLimit(query: Record<string, string>): number | Answer {
  if (query.limit === undefined) return DEFAULT_LIMIT;
  const limit = Number(query.limit);
  return Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIMIT
    ? limit
    : refuse(400, 'InvalidArgument', `limit must be an integer in 1–${MAX_LIMIT} (got "${query.limit}")`);
}

function publish(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const fn = state.functions.get(name);
  if (fn === undefined) return functionNotFound(name);
  const published = state.versions.get(name) ?? [];
  const last = Number(published.at(-1)?.versionId ?? 0);
  const version: FunctionVersion = {
    versionId: String(last + 1),
    description: typeof req.body.description === 'string' ? req.body.description : '',
    createdTime: req.now,
    lastModifiedTime: req.now,
    config: copy(fn),
  };
  state.versions.set(name, [...published, version]);
  return ok(publicVersion(version));
}

/**
 * BACKWARD (newest first) unless FORWARD is asked for: FC documents both values, and FC 2.0's ListVersions documents
 * BACKWARD (descending) as the default. A page ends with `nextToken`, the id of the version the next page starts at
 * (ListVersionsOutput: "the ID of the next version").
 */
function listVersions(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  if (!state.functions.has(name)) return functionNotFound(name);
  const direction = req.query.direction ?? 'BACKWARD';
  if (direction !== 'BACKWARD' && direction !== 'FORWARD')
    return refuse(400, 'InvalidArgument', `direction must be BACKWARD or FORWARD (got "${direction}")`);
  const limit = pageLimit(req.query);
  if (typeof limit !== 'number') return limit;
  const all = [...(state.versions.get(name) ?? [])];
  if (direction === 'BACKWARD') all.reverse();
  const start = req.query.nextToken === undefined ? 0 : all.findIndex((v) => v.versionId === req.query.nextToken);
  if (start < 0) return refuse(400, 'InvalidArgument', `nextToken "${req.query.nextToken}" names no version`);
  const page = all.slice(start, start + limit);
  const next = all[start + limit];
  return ok({
    versions: page.map(publicVersion),
    direction,
    ...(next !== undefined && { nextToken: next.versionId }),
  });
}

export const VERSION_ROUTES: RestRoute[] = [
  { method: 'POST', pattern: functionPath('/versions'), action: 'PublishFunctionVersion', handle: publish },
  { method: 'GET', pattern: functionPath('/versions'), action: 'ListFunctionVersions', handle: listVersions },
];
