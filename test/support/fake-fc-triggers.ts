/**
 * Triggers in the fake FC API: GetTrigger, CreateTrigger and UpdateTrigger (a partial update). A trigger invokes a
 * qualifier of its function (LATEST unless named; a version or alias must exist); its triggerConfig is a JSON string,
 * kept as sent. An HTTP trigger is answered with its URLs.
 */
import { randomUUID } from 'node:crypto';

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
  type Result,
  refuse,
} from './fake-fc-state';
import { checkQualifier } from './fake-fc-versions';

/**
 * The URLs of an HTTP trigger. With disableURLInternet the fake leaves urlInternet out (the trigger still has its
 * intranet URL): a client that prints the public URL of such a trigger finds none to print.
 */
function httpUrls(name: string, triggerConfig: Resource): Resource {
  return {
    ...(triggerConfig.disableURLInternet !== true && {
      urlInternet: `https://${name}-abcdefghij.cn-hangzhou.fcapp.run`,
    }),
    urlIntranet: `https://${name}-abcdefghij.cn-hangzhou-vpc.fcapp.run`,
  };
}

/** The trigger's parsed triggerConfig, or why it is refused. */
function parseConfig(trigger: Resource): Result<Resource> {
  const text = trigger.triggerConfig;
  if (text === undefined) return { value: {} };
  if (typeof text !== 'string')
    return { refusal: refuse(400, 'InvalidArgument', 'triggerConfig must be a JSON string') };
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) return { value: parsed };
  } catch {
    // Refused below, like any other text that is not a JSON object.
  }
  return { refusal: refuse(400, 'InvalidArgument', `triggerConfig is not a JSON object: ${text}`) };
}

/** The trigger as stored: qualifier defaulted and checked, an HTTP trigger's URLs set. */
function settle(state: FcState, name: string, trigger: Resource): Result<Resource> {
  const config = parseConfig(trigger);
  if ('refusal' in config) return config;
  const qualifier = String(trigger.qualifier ?? 'LATEST');
  const problem = checkQualifier(state, name, qualifier);
  if (problem !== undefined) return { refusal: problem };
  const { httpTrigger: _old, ...rest } = trigger;
  const urls = trigger.triggerType === 'http' && { httpTrigger: httpUrls(name, config.value) };
  return { value: { ...rest, qualifier, ...urls } };
}

function get(state: FcState, req: FcRequest): Answer {
  const [name = '', triggerName = ''] = req.params;
  const trigger = state.triggers.get(`${name}/${triggerName}`);
  return trigger === undefined
    ? refuse(404, 'TriggerNotFound', `trigger '${triggerName}' does not exist`)
    : ok(trigger);
}

function create(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  if (!state.functions.has(name)) return functionNotFound(name);
  const triggerName = String(req.body.triggerName ?? '');
  if (state.triggers.has(`${name}/${triggerName}`))
    return refuse(409, 'TriggerAlreadyExists', `trigger '${triggerName}' already exists`);
  const trigger = settle(state, name, {
    ...req.body,
    triggerId: randomUUID(),
    createdTime: req.now,
    lastModifiedTime: req.now,
  });
  if ('refusal' in trigger) return trigger.refusal;
  state.triggers.set(`${name}/${triggerName}`, copy(trigger.value));
  return ok(trigger.value);
}

function update(state: FcState, req: FcRequest): Answer {
  const [name = '', triggerName = ''] = req.params;
  const old = state.triggers.get(`${name}/${triggerName}`);
  if (old === undefined) return refuse(404, 'TriggerNotFound', `trigger '${triggerName}' does not exist`);
  const trigger = settle(state, name, { ...old, ...req.body, lastModifiedTime: req.now });
  if ('refusal' in trigger) return trigger.refusal;
  state.triggers.set(`${name}/${triggerName}`, copy(trigger.value));
  return ok(trigger.value);
}

const TRIGGER = functionPath('/triggers/([^/]+)');

export const TRIGGER_ROUTES: RestRoute[] = [
  { method: 'GET', pattern: TRIGGER, action: 'GetTrigger', handle: get },
  { method: 'POST', pattern: functionPath('/triggers'), action: 'CreateTrigger', handle: create },
  { method: 'PUT', pattern: TRIGGER, action: 'UpdateTrigger', handle: update },
];
