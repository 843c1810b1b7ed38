/**
 * Aliases in the fake FC API: CreateAlias, GetAlias, UpdateAlias (a partial update) and ListAliases. An alias points at
 * a published version and may send a share of requests to others (additionalVersionWeight, version id → weight).
 */
import {
  type Answer,
  copy,
  type FcRequest,
  type FcState,
  functionNotFound,
  functionPath,
  isObject,
  ok,
  type Resource,
  type RestRoute,
  refuse,
} from './fake-fc-state';
import { findVersion, pageLimit } from './fake-fc-versions';

/** FC's rule for alias names; LATEST is taken (it is the qualifier of the unpublished configuration). */
const ALIAS_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

function versionNotFound(name: string, versionId: string): Answer {
  return refuse(404, 'VersionNotFound', `version '${versionId}' of function '${name}' does not exist`);
}

/**
 * What an alias may point at: an existing version, and weights (0–1, summing to at most 1) on other existing
 * versions. Undefined when the alias is sound.
 */
function checkTargets(state: FcState, name: string, alias: Resource): Answer | undefined {
  const versionId = String(alias.versionId ?? '');
  if (versionId === '') return refuse(400, 'InvalidArgument', 'versionId is required');
  if (findVersion(state, name, versionId) === undefined) return versionNotFound(name, versionId);
  const weights = alias.additionalVersionWeight ?? {};
  if (!isObject(weights))
    return refuse(400, 'InvalidArgument', 'additionalVersionWeight must map version ids to weights');
  let total = 0;
  for (const [other, weight] of Object.entries(weights)) {
    if (other === versionId)
      return refuse(400, 'InvalidArgument', `additionalVersionWeight names the alias's own version ${other}`);
    if (findVersion(state, name, other) === undefined) return versionNotFound(name, other);
    if (typeof weight !== 'number' || !(weight >= 0 && weight <= 1))
      return refuse(400, 'InvalidArgument', `the weight of version ${other} must be a number in 0–1`);
    total += weight;
  }
  return total > 1 ? refuse(400, 'InvalidArgument', `additionalVersionWeight adds up to ${total}, over 1`) : undefined;
}

function create(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  if (!state.functions.has(name)) return functionNotFound(name);
  const aliasName = String(req.body.aliasName ?? '');
  if (!ALIAS_NAME.test(aliasName) || aliasName === 'LATEST')
    return refuse(400, 'InvalidArgument', `aliasName "${aliasName}" is not a valid alias name`);
  if (state.aliases.has(`${name}/${aliasName}`))
    return refuse(409, 'AliasAlreadyExists', `alias '${aliasName}' of function '${name}' already exists`);
  const alias: Resource = {
    aliasName,
    versionId: req.body.versionId,
    description: req.body.description ?? '',
    additionalVersionWeight: req.body.additionalVersionWeight ?? {},
    createdTime: req.now,
    lastModifiedTime: req.now,
  };
  const problem = checkTargets(state, name, alias);
  if (problem !== undefined) return problem;
  state.aliases.set(`${name}/${aliasName}`, copy(alias));
  return ok(alias);
}

function get(state: FcState, req: FcRequest): Answer {
  const [name = '', aliasName = ''] = req.params;
  if (!state.functions.has(name)) return functionNotFound(name);
  const alias = state.aliases.get(`${name}/${aliasName}`);
  return alias === undefined
    ? refuse(404, 'AliasNotFound', `alias '${aliasName}' of function '${name}' does not exist`)
    : ok(alias);
}

/** Fields left out stay as they are; additionalVersionWeight, when sent, replaces the old weights. */
function update(state: FcState, req: FcRequest): Answer {
  const [name = '', aliasName = ''] = req.params;
  const found = get(state, req);
  if (!('payload' in found)) return found;
  const { versionId, description, additionalVersionWeight } = req.body;
  const alias: Resource = {
    ...(found.payload as Resource),
    ...(versionId !== undefined && { versionId }),
    ...(description !== undefined && { description }),
    ...(additionalVersionWeight !== undefined && { additionalVersionWeight }),
    lastModifiedTime: req.now,
  };
  const problem = checkTargets(state, name, alias);
  if (problem !== undefined) return problem;
  state.aliases.set(`${name}/${aliasName}`, copy(alias));
  return ok(alias);
}

/** In name order, those starting with `prefix`; a page ends with `nextToken`, the alias name the next one starts at. */
function listAliases(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  if (!state.functions.has(name)) return functionNotFound(name);
  const limit = pageLimit(req.query);
  if (typeof limit !== 'number') return limit;
  const prefix = req.query.prefix ?? '';
  const all = [...state.aliases.entries()]
    .filter(([key]) => key.startsWith(`${name}/${prefix}`))
    .map(([, alias]) => alias)
    .sort((a, b) => String(a.aliasName).localeCompare(String(b.aliasName)));
  const start = req.query.nextToken === undefined ? 0 : all.findIndex((a) => a.aliasName === req.query.nextToken);
  if (start < 0) return refuse(400, 'InvalidArgument', `nextToken "${req.query.nextToken}" names no alias`);
  const next = all[start + limit];
  return ok({
    aliases: all.slice(start, start + limit),
    ...(next !== undefined && { nextToken: next.aliasName }),
  });
}

export const ALIAS_ROUTES: RestRoute[] = [
  { method: 'POST', pattern: functionPath('/aliases'), action: 'CreateAlias', handle: create },
  { method: 'GET', pattern: functionPath('/aliases/([^/]+)'), action: 'GetAlias', handle: get },
  { method: 'PUT', pattern: functionPath('/aliases/([^/]+)'), action: 'UpdateAlias', handle: update },
  { method: 'GET', pattern: functionPath('/aliases'), action: 'ListAliases', handle: listAliases },
];
