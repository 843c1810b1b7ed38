/**
 * Every tool schema stays inside the portable subset of docs/tool-schemas.md, as `tools/list` puts it on the
 * wire (official clients, both lanes), and a result with a null field still passes the official client's check
 * of `structuredContent` against the output schema.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/client/validators/cf-worker';
import * as z from 'zod';

import { portableSchema } from '../../functions/mcp/tools/portable-schema';
import { createHarness, HARNESS_TOKEN, HARNESS_URL, type Harness } from '../support/harness';

type Json = Record<string, unknown>;
type Result = { content: Array<{ type: string; text?: string }>; structuredContent?: Json; isError?: boolean };

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The types a schema may name (`null` only as the second branch of a nullable pair). */
const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean']);
/** Keywords any schema may carry. */
const ANNOTATIONS = new Set(['description', 'title', 'default']);
/** Keywords a schema of each type may carry besides `type` and the annotations. */
const BY_TYPE: Record<string, ReadonlySet<string>> = {
  object: new Set(['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']),
  array: new Set(['items', 'minItems', 'maxItems']),
  // `x-mcp-header` (SEP-2243): the 2026-07-28 `sandbox` argument's header name, a string the spec defines.
  string: new Set(['enum', 'minLength', 'maxLength', 'pattern', 'x-mcp-header']),
  number: new Set(['minimum', 'maximum']),
  integer: new Set(['minimum', 'maximum']),
  boolean: new Set(),
};
const NUMERIC = [
  'minProperties',
  'maxProperties',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
];

/** Whether `value` is of the schema type `type` (for `default`). */
function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return typeof value === type;
  }
}

/** What puts `schema` (at `path`) outside the portable subset; empty when nothing does. */
export function portabilityProblems(schema: unknown, path = '#'): string[] {
  if (!isObject(schema)) return [`${path}: a schema must be an object, not ${JSON.stringify(schema)}`];
  const problems: string[] = [];
  const problem = (text: string) => problems.push(`${path}: ${text}`);
  for (const key of ['description', 'title']) {
    if (key in schema && typeof schema[key] !== 'string') problem(`${key} must be a string`);
  }
  if ('anyOf' in schema) {
    // The one union of the subset: a nullable pair, [the value's schema, {type: 'null'}], with nothing beside it but
    // annotations.
    const branches = schema.anyOf;
    for (const key of Object.keys(schema))
      if (key !== 'anyOf' && !ANNOTATIONS.has(key))
        problem(`"${key}" beside anyOf (a nullable pair carries only annotations beside anyOf)`);
    if (!Array.isArray(branches) || branches.length !== 2)
      return [...problems, `${path}: anyOf must be a nullable pair of two branches`];
    const [value, nullBranch] = branches as unknown[];
    if (!isObject(nullBranch) || nullBranch.type !== 'null' || Object.keys(nullBranch).length !== 1)
      problem('the second branch of anyOf must be exactly {"type": "null"}');
    if (isObject(value) && (value.type === 'null' || 'anyOf' in value))
      problem('the first branch of anyOf must be a non-null schema');
    if (typeof schema.description === 'string' && isObject(value) && value.description === undefined) {
      problem(
        'the description of a nullable pair must be on its first branch too (converters that fold the pair keep ' +
          'only that branch)',
      );
    }
    if (
      'default' in schema &&
      schema.default !== null &&
      isObject(value) &&
      typeof value.type === 'string' &&
      !hasType(schema.default, value.type)
    )
      problem('default does not match the type');
    return [...problems, ...portabilityProblems(value, `${path}/anyOf/0`)];
  }
  const type = schema.type;
  if (Array.isArray(type))
    return [
      ...problems,
      `${path}: type is an array (${JSON.stringify(type)}); a nullable value is anyOf [schema, {"type": "null"}]`,
    ];
  if (typeof type !== 'string' || !TYPES.has(type))
    return [...problems, `${path}: type must be one of ${[...TYPES].join(', ')}, not ${JSON.stringify(type)}`];
  const allowed = BY_TYPE[type] ?? new Set<string>();
  for (const key of Object.keys(schema)) {
    if (key !== 'type' && !ANNOTATIONS.has(key) && !allowed.has(key))
      problem(`"${key}" is outside the portable subset for type ${type}`);
  }
  for (const key of NUMERIC) if (key in schema && typeof schema[key] !== 'number') problem(`${key} must be a number`);
  if ('default' in schema && !hasType(schema.default, type)) problem('default does not match the type');
  if ('enum' in schema) {
    const values = schema.enum;
    if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === 'string'))
      problem('enum must be a non-empty list of strings');
    else if ('default' in schema && !(values as unknown[]).includes(schema.default))
      problem('default is not one of the enum values');
  }
  if (type === 'object') {
    const properties = schema.properties ?? {};
    if (!isObject(properties)) {
      problem('properties must be an object');
    } else {
      for (const [name, property] of Object.entries(properties))
        problems.push(...portabilityProblems(property, `${path}/properties/${name}`));
      const required = schema.required ?? [];
      if (!Array.isArray(required) || !required.every((name) => typeof name === 'string'))
        problem('required must be a list of names');
      else {
        if (new Set(required).size !== required.length) problem('required names a property twice');
        for (const name of required)
          if (!(name in properties)) problem(`required names "${name}", which is not in properties`);
      }
    }
    const extra = schema.additionalProperties;
    if (extra !== undefined && typeof extra !== 'boolean')
      problems.push(...portabilityProblems(extra, `${path}/additionalProperties`));
  }
  if (type === 'array') {
    if (!('items' in schema)) problem('an array schema must have items');
    else problems.push(...portabilityProblems(schema.items, `${path}/items`));
  }
  return problems;
}

/** Every schema of every tool, as one client sees them on the wire. */
async function schemasOf(
  listTools: () => Promise<{ tools: Array<{ name: string; inputSchema: unknown; outputSchema?: unknown }> }>,
) {
  const { tools } = await listTools();
  return tools.flatMap((tool) => [
    { where: `${tool.name} inputSchema`, schema: tool.inputSchema },
    { where: `${tool.name} outputSchema`, schema: tool.outputSchema },
  ]);
}

function expectPortable(schemas: Array<{ where: string; schema: unknown }>): void {
  expect(schemas.length).toBeGreaterThanOrEqual(20);
  const problems = schemas.flatMap(({ where, schema }) => [
    ...(isObject(schema) && schema.type === 'object' ? [] : [`${where}: the root must be {"type": "object"}`]),
    ...portabilityProblems(schema).map((problem) => `${where} ${problem}`),
  ]);
  expect(problems).toEqual([]);
}

/** A v2 client on the 2025 lane, raw (so a call can pass its own `toolDefinition`). */
async function rawClient(h: Harness): Promise<Client> {
  const client = new Client({ name: 'portable-schemas', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(HARNESS_URL), {
      fetch: h.fetch,
      requestInit: { headers: { Authorization: `Bearer ${HARNESS_TOKEN}` } },
    }),
  );
  return client;
}

describe('the subset checker', () => {
  // The checker must catch what it is there to catch.
  it.each<[string, unknown, RegExp]>([
    ['a type array', { type: ['string', 'null'] }, /type is an array/],
    ['type null on its own', { type: 'null' }, /type must be one of/],
    ['no type', { description: 'x' }, /type must be one of/],
    ['const', { type: 'string', const: 'a' }, /"const" is outside/],
    ['oneOf', { type: 'string', oneOf: [{ type: 'string' }] }, /"oneOf" is outside/],
    ['$ref', { type: 'object', $ref: '#/$defs/a' }, /"\$ref" is outside/],
    ['$defs', { type: 'object', $defs: {} }, /"\$defs" is outside/],
    ['a numeric exclusiveMinimum', { type: 'integer', exclusiveMinimum: 0 }, /"exclusiveMinimum" is outside/],
    [
      'a boolean exclusiveMinimum',
      { type: 'integer', minimum: 0, exclusiveMinimum: true },
      /"exclusiveMinimum" is outside/,
    ],
    ['propertyNames', { type: 'object', propertyNames: { type: 'string' } }, /"propertyNames" is outside/],
    ['nullable (OpenAPI 3.0 only)', { type: 'string', nullable: true }, /"nullable" is outside/],
    ['format', { type: 'string', format: 'uri' }, /"format" is outside/],
    [
      'a keyword of another type',
      { type: 'string', minimum: 1 },
      /"minimum" is outside the portable subset for type string/,
    ],
    [
      'a required name missing from properties',
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a', 'b'] },
      /required names "b"/,
    ],
    ['an array without items', { type: 'array' }, /must have items/],
    ['an enum of numbers', { type: 'string', enum: [1, 2] }, /enum must be a non-empty list of strings/],
    ['a default of the wrong type', { type: 'integer', default: 'one' }, /default does not match/],
    [
      'a union that is not a nullable pair',
      { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      /second branch of anyOf/,
    ],
    ['type beside anyOf', { type: 'string', anyOf: [{ type: 'string' }, { type: 'null' }] }, /"type" beside anyOf/],
    [
      'a nullable pair whose description only the wrapper has',
      { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'd' },
      /on its first branch too/,
    ],
    [
      'a problem deep inside',
      {
        type: 'object',
        properties: {
          a: { type: 'array', items: { type: 'object', properties: { b: { type: ['integer', 'null'] } } } },
        },
      },
      /#\/properties\/a\/items\/properties\/b: type is an array/,
    ],
  ])('rejects %s', (_what, schema, message) => {
    expect(portabilityProblems(schema).join('\n')).toMatch(message);
  });

  it('accepts a schema inside the subset', () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, description: 'n' },
        mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
        count: { anyOf: [{ type: 'integer', minimum: 0, description: 'c' }, { type: 'null' }], description: 'c' },
        env: { type: 'object', additionalProperties: { type: 'string' } },
        items: { type: 'array', items: { type: 'object', properties: {}, additionalProperties: false } },
      },
      required: ['name', 'count'],
      additionalProperties: false,
    };
    expect(portabilityProblems(schema)).toEqual([]);
  });
});

describe('portableSchema (registry.ts)', () => {
  // Nullable shapes the tools do not use yet, as zod writes them, and values to try on each.
  const shapes = z.object({
    text: z.string().nullable().describe('t'),
    count: z.number().int().min(0).nullable(),
    choice: z.enum(['a', 'b']).nullable(),
    list: z.array(z.string().nullable()).nullable(),
    nested: z.object({ at: z.string().nullable() }).nullable().describe('n'),
    env: z.record(z.string(), z.string()),
  });
  const emitted = z.toJSONSchema(shapes, { io: 'output' }) as Json;
  const { $schema: _dialect, ...before } = emitted;
  const after = portableSchema(before);
  const base = { text: 'x', count: 1, choice: 'a', list: ['x'], nested: { at: 'x' }, env: { A: 'x' } };
  const samples: Json[] = [
    base,
    { ...base, text: null, count: null, choice: null, list: null, nested: null },
    { ...base, list: [null, 'y'], nested: { at: null } },
    { ...base, text: 1 },
    { ...base, count: -1 },
    { ...base, count: 1.5 },
    { ...base, choice: 'c' },
    { ...base, list: [1] },
    { ...base, nested: { at: 2 } },
    { ...base, nested: 'x' },
    { ...base, env: { A: 1 } },
    { ...base, text: undefined },
  ];

  it('puts zod’s nullable shapes in the subset', () => {
    expect(portabilityProblems(before).join('\n')).toMatch(/type is an array/);
    expect(portabilityProblems(after)).toEqual([]);
  });

  it.each([
    ['Ajv', new AjvJsonSchemaValidator()],
    ['cfworker', new CfWorkerJsonSchemaValidator()],
  ] as const)('changes no verdict of the SDK’s %s validator', (_name, validator) => {
    const verdicts = (schema: unknown) => {
      const check = validator.getValidator(schema as Parameters<typeof validator.getValidator>[0]);
      return samples.map((sample) => check(JSON.parse(JSON.stringify(sample))).valid);
    };
    expect(verdicts(before)).toEqual([true, true, true, false, false, false, false, false, false, false, false, false]);
    expect(verdicts(after)).toEqual(verdicts(before));
  });
});

describe('tools/list', () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(() => h.close());

  it('gives every input and output schema in the portable subset (2025 lane, official v2 client)', async () => {
    const client = await h.connect();
    expectPortable(await schemasOf(() => client.listTools()));
    await client.close();
  });

  it('gives every input and output schema in the portable subset (2025 lane, official v1 client)', async () => {
    const client = await h.connect({ kind: 'v1' });
    expectPortable(await schemasOf(() => client.listTools()));
    await client.close();
  });

  it(
    'gives every input and output schema in the portable subset (2026-07-28 lane, ' + 'with the sandbox argument)',
    async () => {
      const client = await h.connectModern();
      const schemas = await schemasOf(() => client.listTools() as ReturnType<Parameters<typeof schemasOf>[0]>);
      expect(schemas.find((s) => s.where === 'run_command inputSchema')?.schema).toMatchObject({
        properties: { sandbox: { type: 'string' } },
      });
      expectPortable(schemas);
      await client.close();
    },
  );
});

describe('a null in a result', () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(() => h.close());

  it.each(['v2', 'v1'] as const)('passes the official %s client’s check against the output schema', async (kind) => {
    const client = await h.connect({ kind });
    await client.listTools(); // the client checks structuredContent against the schemas it listed
    const status = await client.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({
      state: 'not_started',
      sandbox_id: null,
      workdir: null,
      network: null,
      created_at: null,
    });
    const reset = await client.callTool('reset_sandbox');
    expect(reset.structuredContent).toMatchObject({ previous_sandbox_id: null });
    const command = await client.callTool('run_command', { command: 'true' });
    expect(command).toMatchObject({ structuredContent: { exit_code: 0, process_id: null } });
    await client.callTool('write_file', {
      path: 'blob.bin',
      content: Buffer.from([0xff, 0x00, 0xfe, 0x01]).toString('base64'),
      encoding: 'base64',
    });
    const binary = await client.callTool('read_file', { path: 'blob.bin' });
    expect(binary.structuredContent).toMatchObject({
      encoding: 'base64',
      mime_type: null,
      total_lines: null,
      start_line: null,
      end_line: null,
      next_offset: null,
    });
    await client.close();
  });

  it('fails that check where the schema does not allow null (the client does check)', async () => {
    const client = await rawClient(h);
    const { tools } = await client.listTools();
    const listed = tools.find((tool) => tool.name === 'run_command');
    if (listed?.outputSchema === undefined) throw new Error('run_command has no output schema');
    const call = (toolDefinition?: typeof listed) =>
      client.callTool(
        { name: 'run_command', arguments: { command: 'true' } },
        toolDefinition === undefined ? {} : { toolDefinition },
      ) as Promise<Result>;
    expect((await call()).structuredContent).toMatchObject({ process_id: null });
    const properties = listed.outputSchema.properties as Json;
    const notNull = {
      ...listed,
      outputSchema: { ...listed.outputSchema, properties: { ...properties, process_id: { type: 'string' } } },
    };
    await expect(call(notNull)).rejects.toThrow(/does not match the tool's output schema/);
    await client.close();
  });
});
