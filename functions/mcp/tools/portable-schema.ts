/**
 * Tool schemas in the portable subset of docs/tool-schemas.md, which Gemini-style and OpenAPI-style clients
 * accept as well as JSON Schema 2020-12 validators: no type arrays, nullable values as an `anyOf` pair.
 */

type JsonObject = Record<string, unknown>;
const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose value is a schema, a list of schemas, or a map of names to schemas (where the walk goes on). */
const SUBSCHEMA = new Set([
  'items',
  'additionalProperties',
  'not',
  'propertyNames',
  'contains',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
const SUBSCHEMA_LIST = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SUBSCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords that describe a nullable value as a whole and stay beside its `anyOf`. */
const PAIR_ANNOTATIONS = new Set(['description', 'title', 'default']);

/**
 * The emitted JSON Schema in the portable subset of docs/tool-schemas.md. Every nullable value (zod's
 * `.nullable()`, which zod writes as `type: [X, "null"]` when the value's schema is bare) becomes the pair
 * `anyOf: [{type: X, …}, {type: "null"}]` with no `type` beside it, and the pair's description is repeated on
 * its first branch, the part a converter to a `nullable: true` schema keeps; a record's `propertyNames: {type:
 * "string"}`, true of every key, is left out. What validates is unchanged: null still does, nothing new does.
 * The rest of the subset is the tools' own schemas' business: each one, as tools/list sends it, stays inside it.
 */
export function portableSchema(node: unknown): unknown {
  if (!isJsonObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    // zod states a record's string keys as `propertyNames: {type: "string"}`, which every object key satisfies anyway.
    if (key === 'propertyNames' && isJsonObject(value) && value.type === 'string' && Object.keys(value).length === 1)
      continue;
    if (SUBSCHEMA.has(key)) out[key] = portableSchema(value);
    else if (SUBSCHEMA_LIST.has(key) && Array.isArray(value)) out[key] = value.map(portableSchema);
    else if (SUBSCHEMA_MAP.has(key) && isJsonObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, portableSchema(sub)]));
    else out[key] = value;
  }
  return nullablePair(out);
}

/** `schema` as a nullable pair when it says "X or null", else as it is. */
function nullablePair(schema: JsonObject): JsonObject {
  const { type } = schema;
  if (Array.isArray(type) && type.length === 2 && type.includes('null')) {
    const valueType = type.find((t) => t !== 'null');
    const wrapper: JsonObject = {};
    const value: JsonObject = { type: valueType };
    for (const [key, keyValue] of Object.entries(schema)) {
      if (key === 'type') continue;
      if (PAIR_ANNOTATIONS.has(key)) wrapper[key] = keyValue;
      else value[key] = keyValue;
    }
    return pair(value, wrapper);
  }
  const branches = schema.anyOf;
  if (type === undefined && Array.isArray(branches) && branches.length === 2) {
    const nullAt = branches.findIndex(
      (branch) => isJsonObject(branch) && branch.type === 'null' && Object.keys(branch).length === 1,
    );
    const value = branches[1 - nullAt];
    if (nullAt !== -1 && isJsonObject(value) && value.type !== 'null') {
      const { anyOf: _branches, ...wrapper } = schema;
      return pair(value, wrapper);
    }
  }
  return schema;
}

function pair(value: JsonObject, wrapper: JsonObject): JsonObject {
  const description = wrapper.description;
  const first = typeof description === 'string' && value.description === undefined ? { ...value, description } : value;
  return { anyOf: [first, { type: 'null' }], ...wrapper };
}
