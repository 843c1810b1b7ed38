/**
 * One function, whichever path: the UpdateFunction body `s deploy` would send for the generated s.yaml (rendered by
 * `s preview`, then fc3's own steps, test/support/fc3-deploy.ts) equals, field by field, the body `--deploy` sent
 * for the same options to the fake FC API.
 */
import { join } from 'node:path';

import { makeTempDir, removeTempDirs, runDeployCli, fc3Props } from '../support/deploy-cli';
import { CREDENTIALS, deployToFake, E2B_KEY, EMPTY_SHELL, NAS, tokenFile, VPC } from '../support/deploy-to-fake';
import { sPreview } from '../support/deploy-tools';
import { fc3UpdateFunctionBody } from '../support/fc3-deploy';
import { type FakeFc, startFakeFc } from '../support/fake-fc';
import { needs } from '../support/needs';

const describeIfInstalled = needs('the deploy tools').describe;

const SHELL = { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY, E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com' };

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

/** The body of the last UpdateFunction `--deploy` sent. */
function lastUpdate(): Record<string, unknown> {
  const call = fake.calls.filter((c) => c.action === 'UpdateFunction').at(-1);
  if (call?.body === undefined) throw new Error('no UpdateFunction was sent');
  return call.body;
}

/** The s.yaml the CLI writes for `args`, rendered by `s preview` with the function's own variables in the shell. */
async function renderedProps(args: string[], env: Record<string, string>) {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir, '--json', ...args], { env });
  expect(run.code).toBe(0);
  const fn = fake.functions.get('sandbox-mcp') as { environmentVariables: Record<string, string> };
  const preview = await sPreview(join(dir, 's.yaml'), fn.environmentVariables);
  expect({ code: preview.code, output: preview.document === undefined ? preview.output : '' }).toEqual({
    code: 0,
    output: '',
  });
  return fc3Props(preview.document ?? {});
}

const withoutCode = ({ code: _code, ...rest }: Record<string, unknown>) => rest;

/**
 * The environment fc3 sends, less the optional variables s.yaml renders empty (`${env('NAME', '')}` with NAME unset),
 * which the server takes as unset (functions/mcp/config.ts); the names it dropped are returned to be checked.
 */
function withoutEmptyOptional(body: Record<string, unknown>): {
  body: Record<string, unknown>;
  dropped: string[];
} {
  const variables = { ...(body.environmentVariables as Record<string, string>) };
  const dropped = Object.keys(variables).filter((name) => variables[name] === '');
  for (const name of dropped) delete variables[name];
  return { body: { ...body, environmentVariables: variables }, dropped };
}

interface Case {
  /** Options of the deploy that makes the function. */
  first: string[];
  /** Options of the compared deploy and s.yaml. */
  compared: string[];
  /** The shell of both, besides the FC credentials and the E2B key and domain. */
  shell?: Record<string, string>;
  /** Optional variables the s.yaml renders empty. */
  empty: string[];
}

const CASES: Array<[string, Case]> = [
  [
    'a NAS mount in its VPC, named logs, other sizes',
    {
      first: [],
      compared: [
        ...['--nas', NAS, ...VPC, '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs'],
        ...['--memory', '2048', '--cpu', '1', '--session-concurrency', '100'],
      ],
      empty: ['E2B_API_URL', 'E2B_TEMPLATE'],
    },
  ],
  [
    "the function's NAS, VPC and logs kept (fc3's auto), a template from the shell",
    {
      first: ['--nas', NAS, ...VPC, '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs'],
      compared: ['--nas', 'auto', '--logs', '--min-instances', '1', '--max-concurrency', '10'],
      shell: { E2B_TEMPLATE: 'team-template' },
      empty: ['E2B_API_URL'],
    },
  ],
  [
    'affinity off and no logs',
    {
      first: ['--no-logs'],
      compared: ['--no-enable-session-affinity', '--no-logs'],
      empty: ['E2B_API_URL', 'E2B_TEMPLATE'],
    },
  ],
];

describeIfInstalled('s deploy and --deploy send one function', () => {
  it.each(CASES)('%s', async (_name, { first, compared, shell = {}, empty }) => {
    const tokens = tokenFile();
    const env = { ...SHELL, ...shell };
    expect((await deployToFake(fake, ['--auth-token-file', tokens, ...first], env)).code).toBe(0);
    const options = ['--auth-token-file', tokens, ...compared];
    expect((await deployToFake(fake, options, env)).code).toBe(0);
    const sent = withoutCode(lastUpdate());
    const props = await renderedProps(options, env);
    const fc3 = withoutEmptyOptional(
      withoutCode(fc3UpdateFunctionBody(props, fake.functions.get('sandbox-mcp') ?? {})),
    );
    expect(fc3.dropped.sort()).toEqual(empty);
    expect(Object.keys(fc3.body).sort()).toEqual(Object.keys(sent).sort());
    for (const field of Object.keys(sent))
      expect({ field, value: fc3.body[field] }).toEqual({ field, value: sent[field] });
  });
});
