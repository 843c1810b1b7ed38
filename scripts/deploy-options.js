/**
 * Every option of `node scripts/deploy.js`, each declared with its type, default and description (what --help
 * shows). The defaults here are the ones the repository's s.yaml uses too, and the two are kept in step.
 */
'use strict';

const { DEFAULT_RUNTIME, DEFAULT_TRIGGER_METHODS, HTTP_METHODS } = require('./fc-limits');

/** Option groups, in the order --help shows them. */
const GROUPS = Object.freeze({
  function: 'Function:',
  sessions: 'Sessions and trigger:',
  logs: 'Logs (FC keeps none unless the function names an SLS project and logstore):',
  state:
    'Shared state (E2B_STATE_DIR: revocations and sleeping sandboxes, on storage every instance mounts; NAS needs a ' +
    'VPC, and the function keeps its internet access):',
  release: 'Versions, warm instances and limits:',
  auth: 'Auth (secrets come from files or the environment, never from flags):',
  oauth:
    'OAuth (access tokens from an authorization server, beside or instead of static tokens; not secrets; with ' +
    '--deploy, what is not given here stays as the function has it):',
  sandbox:
    'Sandboxes (E2B settings not given here come from E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_TEMPLATE in the ' +
    'environment, else stay as the function has them):',
  output: 'Output and deployment:',
});

/** @type {Record<string, import('yargs').Options>} */
const DEPLOY_OPTIONS = {
  name: {
    group: GROUPS.function,
    type: 'string',
    default: 'sandbox-mcp',
    describe: 'Function name (letters, digits, _ and -; starts with a letter or _; at most 64)',
  },
  region: {
    group: GROUPS.function,
    type: 'string',
    default: 'cn-hangzhou',
    describe: 'Alibaba Cloud region, e.g. cn-hangzhou, ap-southeast-1',
  },
  runtime: {
    group: GROUPS.function,
    type: 'string',
    default: DEFAULT_RUNTIME,
    describe:
      "FC runtime: custom.debian12 runs the bundle on Node 22.23.2 from FC's official Nodejs22 layer " +
      '(/opt/nodejs22/bin/node); custom.debian10 on its built-in Node 20.10 (end of life since 2026-04-30)',
  },
  'node-path': {
    group: GROUPS.function,
    type: 'string',
    default: undefined,
    defaultDescription: "the runtime's built-in Node",
    describe: 'Node ≥ 20.10 inside the runtime; needed for custom runtimes other than custom.debian12 and 10',
  },
  memory: {
    group: GROUPS.function,
    type: 'number',
    default: 1024,
    describe: 'Memory in MB: a multiple of 64 from 128 to 32768, 1–4 GB per vCPU',
  },
  cpu: { group: GROUPS.function, type: 'number', default: 1, describe: 'vCPUs: 0.05–16 in steps of 0.05' },
  timeout: {
    group: GROUPS.function,
    type: 'number',
    default: 600,
    describe: 'Function timeout in seconds (also caps each streamed response); at least 10 s above --tool-timeout-max',
  },
  'tool-timeout-max': {
    group: GROUPS.function,
    type: 'number',
    default: undefined,
    defaultDescription: 'the smaller of 300 and --timeout less 10',
    describe: 'Upper bound of any tool call in seconds (MCP_TOOL_TIMEOUT_MAX_S)',
  },
  'log-level': {
    group: GROUPS.function,
    type: 'string',
    choices: ['debug', 'info', 'warn', 'error'],
    default: 'info',
    describe: 'LOG_LEVEL of the server',
  },
  env: {
    group: GROUPS.function,
    type: 'string',
    array: true,
    default: [],
    describe:
      'Extra environment variable NAME=VALUE for the function (repeatable; not FC_*, 4 KB in all with the others)',
  },
  unset: {
    group: GROUPS.function,
    type: 'string',
    array: true,
    default: [],
    describe:
      'On update, remove this variable of the existing function (repeatable); variables a deploy does not set ' +
      'are otherwise kept',
  },
  'enable-session-affinity': {
    group: GROUPS.sessions,
    type: 'boolean',
    default: true,
    describe:
      'MCP_STREAMABLE session affinity: FC pins each Mcp-Session-Id to one instance ' +
      '(--no-enable-session-affinity to turn off)',
  },
  'session-concurrency': {
    group: GROUPS.sessions,
    type: 'number',
    default: 20,
    describe: 'Sessions per instance (1–200); also MCP_MAX_SESSIONS',
  },
  'session-idle-ttl': {
    group: GROUPS.sessions,
    type: 'number',
    default: 1800,
    describe: 'Seconds a session may stay idle (≤ 21600; MCP_SESSION_IDLE_TTL_S)',
  },
  'session-ttl': {
    group: GROUPS.sessions,
    type: 'number',
    default: 21_600,
    describe: 'Longest life of a session in seconds (≤ 21600; MCP_SESSION_MAX_AGE_S)',
  },
  'trigger-methods': {
    group: GROUPS.sessions,
    type: 'string',
    array: true,
    choices: [...HTTP_METHODS],
    default: [...DEFAULT_TRIGGER_METHODS],
    describe: 'Methods the HTTP trigger allows; affinity needs GET, POST and DELETE',
  },
  'custom-domain': {
    group: GROUPS.sessions,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe: 'Route this domain (CNAME to <account-id>.<region>.fc.aliyuncs.com) to the function',
  },
  'domain-cert': {
    group: GROUPS.sessions,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe:
      "PEM file with the custom domain's certificate (chain): the domain is served over HTTPS only; with --domain-key",
  },
  'domain-key': {
    group: GROUPS.sessions,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe: 'PEM file with the private key of --domain-cert',
  },
  'domain-http-only': {
    group: GROUPS.sessions,
    type: 'boolean',
    default: false,
    describe:
      'Serve --custom-domain over plain HTTP, on purpose (tokens in clear text). Without a certificate an update ' +
      'keeps the HTTPS one the domain has',
  },
  logs: {
    group: GROUPS.logs,
    type: 'boolean',
    default: true,
    describe:
      'Keep logs: a new function needs --sls-project and --sls-logstore (s.yaml: logConfig auto); --no-logs ' +
      'deploys one without logs, on purpose',
  },
  'sls-project': {
    group: GROUPS.logs,
    type: 'string',
    default: undefined,
    defaultDescription: "the function's current one (none for a new function)",
    describe: 'SLS project (in the same region) for the function logs; with --sls-logstore',
  },
  'sls-logstore': {
    group: GROUPS.logs,
    type: 'string',
    default: undefined,
    defaultDescription: "the function's current one",
    describe: 'SLS logstore of --sls-project',
  },
  nas: {
    group: GROUPS.state,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe:
      'NAS mounted at --nas-mount-dir, which becomes E2B_STATE_DIR: a mount target SERVER:/PATH (with --vpc-id, ' +
      '--vswitch-id and --security-group-id), auto (s deploy creates a file system and its VPC; --deploy keeps the ' +
      "function's), or none",
  },
  'nas-mount-dir': {
    group: GROUPS.state,
    type: 'string',
    default: '/mnt/state',
    describe: 'Where the function mounts --nas (an absolute path under /mnt, /home or /data)',
  },
  'vpc-id': { group: GROUPS.state, type: 'string', default: undefined, describe: 'VPC of the NAS mount target' },
  'vswitch-id': {
    group: GROUPS.state,
    type: 'string',
    array: true,
    default: [],
    describe: 'vSwitch of that VPC the function attaches to (repeatable, one per zone)',
  },
  'security-group-id': {
    group: GROUPS.state,
    type: 'string',
    default: undefined,
    describe: 'Security group of the function in that VPC',
  },
  alias: {
    group: GROUPS.release,
    type: 'string',
    default: 'live',
    describe: 'Alias every deploy publishes a version behind, and that the trigger and the domain route to',
  },
  // No `default` key: with one, yargs drops the empty value of a bare --rollback.
  rollback: {
    group: GROUPS.release,
    type: 'string',
    defaultDescription: 'no rollback',
    describe:
      'Move --alias back to VERSION (--rollback alone: the version before the one it serves) in one call, and ' +
      'change nothing else',
  },
  'min-instances': {
    group: GROUPS.release,
    type: 'number',
    default: 0,
    describe:
      'Instances FC keeps warm for --alias (no cold start for their sessions; each is billed while it idles); 0: ' +
      'none',
  },
  'max-concurrency': {
    group: GROUPS.release,
    type: 'number',
    default: undefined,
    defaultDescription: 'no reservation',
    describe:
      "Reserved concurrency: requests the function may run at once across its instances, taken from the account's " +
      'quota (also bounds how many instances share one E2B rate limit)',
  },
  'disable-fcapp-url': {
    group: GROUPS.sessions,
    type: 'boolean',
    default: false,
    describe: "Turn the trigger's public fcapp.run URL off (clients then reach the function only by --custom-domain)",
  },
  'domain-cert-id': {
    group: GROUPS.sessions,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe:
      "Id of the custom domain's certificate in Alibaba Cloud's certificate service (instead of --domain-cert and " +
      '--domain-key)',
  },
  auth: {
    group: GROUPS.auth,
    type: 'boolean',
    default: true,
    describe: 'Require a bearer token; --no-auth deploys without one, on purpose',
  },
  'generate-token': {
    group: GROUPS.auth,
    type: 'boolean',
    default: false,
    describe: 'Generate a token, write it to <output-dir>/auth-token (mode 0600) and show it once',
  },
  'auth-token-file': {
    group: GROUPS.auth,
    type: 'string',
    default: undefined,
    defaultDescription: 'MCP_AUTH_TOKENS from the environment',
    describe: 'File with the bearer tokens, one a line (# comments allowed)',
  },
  'oauth-issuer': {
    group: GROUPS.oauth,
    type: 'string',
    default: undefined,
    defaultDescription: "the function's current one (none: OAuth off)",
    describe:
      "MCP_OAUTH_ISSUER: the authorization server's issuer URL (https; http only on 127.0.0.1, localhost or " +
      "[::1]), exactly as its tokens' iss carries it; turns OAuth on",
  },
  'public-url': {
    group: GROUPS.oauth,
    type: 'string',
    default: undefined,
    defaultDescription: "https://<custom-domain> with --oauth-issuer, else the function's current one",
    describe:
      'MCP_PUBLIC_URL: the origin clients reach the server at, e.g. https://mcp.example.com; the resource tokens ' +
      'are for is <public-url>/mcp',
  },
  'oauth-audience': {
    group: GROUPS.oauth,
    type: 'string',
    default: undefined,
    defaultDescription: "the function's current one (none: the resource)",
    describe: 'MCP_OAUTH_AUDIENCE: the aud every access token must carry',
  },
  'oauth-scopes': {
    group: GROUPS.oauth,
    type: 'string',
    default: undefined,
    defaultDescription: "the function's current ones (none: no scope required)",
    describe:
      'MCP_OAUTH_SCOPES: scopes every access token must carry, space-separated in one argument, e.g. "mcp:tools ' +
      'mcp:read"',
  },
  'sandbox-backend': {
    group: GROUPS.sandbox,
    type: 'string',
    choices: ['e2b', 'local'],
    default: 'e2b',
    describe:
      'e2b: an E2B microVM per session (E2B_API_KEY needed, from the environment or kept from the function). ' +
      'local: processes inside the FC instance, without bubblewrap (it prints what that does not isolate)',
  },
  'e2b-domain': {
    group: GROUPS.sandbox,
    type: 'string',
    default: undefined,
    defaultDescription: "the shell's E2B_DOMAIN, else the function's, else E2B's cloud (e2b.app)",
    describe: 'E2B_DOMAIN, e.g. cn-hangzhou.e2b.fc.aliyuncs.com',
  },
  'e2b-api-url': {
    group: GROUPS.sandbox,
    type: 'string',
    default: undefined,
    defaultDescription: "the shell's E2B_API_URL, else the function's, else https://api.<E2B_DOMAIN>",
    describe: 'E2B_API_URL, e.g. https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
  },
  template: {
    group: GROUPS.sandbox,
    type: 'string',
    default: undefined,
    defaultDescription: 'code-interpreter-v1',
    describe: 'E2B_TEMPLATE of new sandboxes',
  },
  'output-dir': {
    group: GROUPS.output,
    type: 'string',
    default: 'fc-deploy',
    describe: 'Where to write code/, code.zip, config.yaml, s.yaml (and auth-token)',
  },
  deploy: {
    group: GROUPS.output,
    type: 'boolean',
    default: false,
    describe:
      'Also deploy through the FC API, with credentials from the Alibaba Cloud default chain: environment, ' +
      'Aliyun CLI profile, ~/.alibabacloud/credentials, ECS RAM role (see --profile / --s-access)',
  },
  profile: {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: "ALIBABA_CLOUD_PROFILE, else ~/.aliyun/config.json's current profile",
    describe:
      'Aliyun CLI profile whose credentials --deploy uses (in ~/.aliyun/config.json, else ' +
      '~/.alibabacloud/credentials); only that profile is read',
  },
  's-access': {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    conflicts: 'profile',
    describe:
      'Alias of an access Serverless Devs stored in ~/.s/access.yaml (`s config add`), e.g. default; when given, ' +
      'used instead of the chain',
  },
  'account-id': {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: 'none',
    describe: 'Alibaba Cloud account id: the API endpoint <id>.<region>.fc.aliyuncs.com and the CNAME target',
  },
  endpoint: {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: 'from --account-id and --region, else fcv3.<region>.aliyuncs.com',
    describe: 'FC API endpoint (host, or http://host:port for a local fake in tests)',
  },
  'resource-manager-endpoint': {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: 'resourcemanager.aliyuncs.com',
    describe: 'Resource Manager API endpoint, where the service-linked role is checked (a local fake in tests)',
  },
  'cas-endpoint': {
    group: GROUPS.output,
    type: 'string',
    default: undefined,
    defaultDescription: 'cas.aliyuncs.com',
    describe: 'Certificate service API endpoint, where --domain-cert-id is read (a local fake in tests)',
  },
  'dry-run': {
    group: GROUPS.output,
    type: 'boolean',
    default: false,
    describe:
      'Validate and show what would be written and called; write and change nothing (with --deploy it reads the ' +
      'function to show the environment diff; with --rollback it reads the alias and says where it would move it)',
  },
  json: {
    group: GROUPS.output,
    type: 'boolean',
    default: false,
    describe: 'Print one JSON document on stdout; progress and warnings go to stderr',
  },
};

/**
 * Examples for --help.
 * @type {ReadonlyArray<readonly [command: string, description: string]>}
 */
const EXAMPLES = [
  ['$0 --generate-token --output-dir fc-deploy', 'Write the artifact, a new token and the manual steps'],
  ['$0 --generate-token --deploy --region cn-shanghai', 'Deploy through the FC API and print the MCP URL'],
  [
    '$0 --e2b-domain cn-hangzhou.e2b.fc.aliyuncs.com --e2b-api-url https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
    "Use Alibaba Cloud's E2B-compatible sandboxes",
  ],
  [
    '$0 --deploy --oauth-issuer https://auth.example.com --custom-domain mcp.example.com --domain-cert ' +
      'fullchain.pem --domain-key privkey.pem',
    'Accept OAuth access tokens of that issuer for https://mcp.example.com/mcp (no static token needed)',
  ],
  [
    '$0 --deploy --dry-run --json',
    'Show the plan and the environment diff (secrets masked) as JSON; read the function, change nothing',
  ],
];

module.exports = { DEPLOY_OPTIONS, EXAMPLES };
