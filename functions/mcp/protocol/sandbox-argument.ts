/**
 * The modern lane's one extra tool argument: `sandbox`, a signed handle that names the caller's sandbox (there
 * is no session to hold it). Tool schemas and descriptions gain it once per process; every result gives it back.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';

/** The argument's name in every tool's input schema and in every structured result. */
export const SANDBOX_ARGUMENT = 'sandbox';

/**
 * The header a client mirrors the handle into (SEP-2243), so that a load balancer can route a call to the instance
 * holding its sandbox without reading the body. The handle is no secret of its own: it is bound to the credential.
 */
export const SANDBOX_HEADER = 'Mcp-Param-Sandbox';

const INPUT_PROPERTY = {
  type: 'string',
  'x-mcp-header': 'Sandbox',
  description:
    'The sandbox handle from the previous result ("sandbox: <handle>", first line). Pass it on every call to keep ' +
    'working in the same sandbox (files, processes, Python state); omit it only to start a new, empty sandbox.',
} as const;
const OUTPUT_PROPERTY = {
  type: 'string',
  description: 'The sandbox handle: pass it as the `sandbox` argument of the next call.',
} as const;
/** Added to every tool's description in this era: the rule a model must follow to keep its work. */
const DESCRIPTION_NOTE =
  ' Pass "sandbox" (the handle from the previous result) to keep working in the same sandbox; without it the call ' +
  'runs in a new, empty one.';

type Schema = Tool['inputSchema'];

function withProperty(
  schema: Schema,
  property: typeof INPUT_PROPERTY | typeof OUTPUT_PROPERTY,
  required: boolean,
): Schema {
  const properties = { ...(schema.properties ?? {}), [SANDBOX_ARGUMENT]: { ...property } };
  const requiredList = required ? [...(schema.required ?? []), SANDBOX_ARGUMENT] : schema.required;
  return { ...schema, properties, ...(requiredList !== undefined && { required: requiredList }) };
}

/** The tool list with the `sandbox` argument in every input schema and the handle in every output schema. */
export function withSandboxArgument(tools: readonly Tool[]): Tool[] {
  return tools.map((tool) => {
    const output = tool.outputSchema;
    return {
      ...tool,
      description: `${tool.description ?? ''}${DESCRIPTION_NOTE}`,
      inputSchema: withProperty(tool.inputSchema, INPUT_PROPERTY, false),
      ...(output !== undefined && { outputSchema: withProperty({ ...output, type: 'object' }, OUTPUT_PROPERTY, true) }),
    };
  });
}

/** Splits the handle off a call's arguments; the rest goes to the tool's own (strict) schema. */
export function takeSandboxArgument(args: unknown): { handle: unknown; rest: unknown } {
  if (typeof args !== 'object' || args === null || Array.isArray(args) || !(SANDBOX_ARGUMENT in args))
    return { handle: undefined, rest: args };
  const { [SANDBOX_ARGUMENT]: handle, ...rest } = args as Record<string, unknown>;
  return { handle, rest };
}

/**
 * Said under the handle of a call that carried none: its sandbox was made for it, so a file or a variable an
 * earlier call left is not there, and the error that follows (a missing file, above all) would mislead alone.
 */
export const NEW_SANDBOX_NOTE =
  'this call ran in a new, empty sandbox: it carried no `sandbox` handle. Pass the handle above as "sandbox" on ' +
  'every later call to keep working in this one.';

/**
 * Puts the handle into a result: its structured content and, for people and models reading text, the first line
 * of its text (where a model looks first, and which a long output cannot push out of view). `fresh`: the call
 * carried no handle, so the sandbox is new (NEW_SANDBOX_NOTE follows the handle).
 */
export function withSandboxHandle(result: CallToolResult, handle: string, fresh: boolean): CallToolResult {
  const line = fresh ? `sandbox: ${handle}\n${NEW_SANDBOX_NOTE}` : `sandbox: ${handle}`;
  const content = [...result.content];
  const first = content[0];
  if (first?.type === 'text') content[0] = { ...first, text: `${line}\n${first.text}` };
  else content.unshift({ type: 'text', text: line });
  return {
    ...result,
    content,
    ...(result.structuredContent !== undefined && {
      structuredContent: { ...result.structuredContent, [SANDBOX_ARGUMENT]: handle },
    }),
  };
}

/** A value a client encoded (SEP-2243: not plain ASCII, or edged with whitespace): `=?base64?<UTF-8 in Base64>?=`. */
const ENCODED = /^=\?base64\?(.*)\?=$/s;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * How the `Mcp-Param-Sandbox` header fails to mirror a call's `handle`, or `undefined` when it does. Not judged: a
 * call without a string handle (a header without its argument is not refused; a handle of another type is the call's
 * own error), and a call without the header, which clients that do not mirror parameters send (mcp-remote bridging
 * to 2026-07-28): what matters is that nothing in front of the server read a different value than the server acts
 * on. A value without both the `=?base64?` prefix and the `?=` suffix is taken literally.
 */
export function sandboxHeaderMismatch(header: string | null, handle: unknown): string | undefined {
  if (typeof handle !== 'string' || header === null) return undefined;
  const encoded = ENCODED.exec(header)?.[1];
  let value = header;
  if (encoded !== undefined) {
    if (!BASE64.test(encoded)) return 'is not valid Base64 of UTF-8';
    try {
      value = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64'));
    } catch {
      return 'is not valid Base64 of UTF-8';
    }
  }
  return value === handle ? undefined : 'differs from the "sandbox" argument';
}
