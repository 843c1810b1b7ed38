/**
 * zod's issues with a tool call's arguments, as sentences a model can act on: a missing argument is named as
 * missing (`Missing required argument "path".`), an unknown one with the arguments the tool takes, a wrong
 * value with what it must be and what was given.
 */
import type * as z from 'zod';

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/** The arguments as a whole, or one of them (`path`, `env.FOO`, `items[0]`). */
function label(path: Path): string {
  return path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`))
    .join('');
}

/** The value at `path` in `args`, and whether it is there at all. */
function valueAt(args: unknown, path: Path): { present: boolean; value: unknown } {
  let value = args;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key))
      return { present: false, value: undefined };
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return { present: value !== undefined, value };
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  record: 'an object',
};

/** What a value is, for "…, not <it>": its type, and the value itself when it is short. */
function described(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  const shown = JSON.stringify(value);
  const kind =
    typeof value === 'number'
      ? Number.isInteger(value)
        ? 'the integer'
        : 'the number'
      : typeof value === 'string'
        ? 'the string'
        : `the ${typeof value}`;
  return shown !== undefined && shown.length <= 40 ? `${kind} ${shown}` : kind === 'the string' ? 'a string' : kind;
}

const quoted = (names: readonly string[]): string => names.map((name) => `"${name}"`).join(', ');

/** One issue that is not a missing argument, as a sentence. */
function sentence(issue: Issue, args: unknown, known: readonly string[]): string {
  const where = issue.path.length === 0 ? 'The arguments' : `Argument "${label(issue.path)}"`;
  const given = valueAt(args, issue.path).value;
  switch (issue.code) {
    case 'invalid_type':
      return `${where} must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${described(given)}.`;
    case 'unrecognized_keys': {
      const takes = known.length === 0 ? 'it takes no arguments' : `it takes ${quoted(known)}`;
      return `Unknown argument${issue.keys.length === 1 ? '' : 's'} ${quoted(issue.keys)}: ${takes}.`;
    }
    case 'invalid_value':
      return (
        `${where} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, not ` +
        `${described(given)}.`
      );
    case 'too_small':
      return `${where} ${bound(issue.origin, issue.minimum, issue.inclusive !== false, 'small')}.`;
    case 'too_big':
      return `${where} ${bound(issue.origin, issue.maximum, issue.inclusive !== false, 'big')}.`;
    case 'invalid_key': {
      const inner = issue.issues[0]?.message ?? issue.message;
      return `${where} is not allowed: ${inner}.`;
    }
    default:
      return `${where}: ${issue.message}.`;
  }
}

/** "must be at least 1", "must not be empty", "must have at most 100 items"… */
function bound(origin: string, limit: number | bigint, inclusive: boolean, side: 'small' | 'big'): string {
  const n = Number(limit);
  if (origin === 'string') {
    if (side === 'small' && n === 1 && inclusive) return 'must not be empty';
    return (
      `must be ${side === 'small' ? 'at least' : 'at most'} ${inclusive ? n : side === 'small' ? n + 1 : n - 1} ` +
      `characters long`
    );
  }
  if (origin === 'array' || origin === 'set')
    return (
      `must have ${side === 'small' ? 'at least' : 'at most'} ${inclusive ? n : side === 'small' ? n + 1 : n - 1} ` +
      `items`
    );
  if (origin === 'number' || origin === 'int' || origin === 'bigint') {
    if (side === 'small')
      return inclusive ? `must be at least ${n}` : n === 0 ? 'must be greater than 0' : `must be greater than ${n}`;
    return inclusive ? `must be at most ${n}` : `must be less than ${n}`;
  }
  return `is too ${side}`;
}

/**
 * Describes why `args` do not fit a tool's input schema. `known`: the arguments the tool takes (named when an
 * unknown one is given).
 */
export function describeArgumentIssues(issues: readonly Issue[], args: unknown, known: readonly string[]): string {
  const missing: string[] = [];
  const missingFields: string[] = [];
  const rest: string[] = [];
  for (const issue of issues) {
    // Whatever zod says about a value that is not there (a wrong type, not one of the options), it is missing.
    if (
      issue.path.length > 0 &&
      !valueAt(args, issue.path).present &&
      valueAt(args, issue.path.slice(0, -1)).value !== undefined
    ) {
      (issue.path.length === 1 ? missing : missingFields).push(label(issue.path));
    } else {
      rest.push(sentence(issue, args, known));
    }
  }
  const lead = [
    ...(missing.length === 0
      ? []
      : [`Missing required argument${missing.length === 1 ? '' : 's'} ${quoted(missing)}.`]),
    ...(missingFields.length === 0
      ? []
      : [`Missing required field${missingFields.length === 1 ? '' : 's'} ${quoted(missingFields)}.`]),
  ];
  return [...lead, ...rest].join(' ');
}
