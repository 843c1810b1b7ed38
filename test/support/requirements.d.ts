/** Types of requirements.js (plain CommonJS, so that test/preflight.js runs it before anything is built). */
export type RequirementName =
  | 'bubblewrap'
  | 'python3'
  | 'network clients'
  | 'root'
  | 'disk images'
  | 'cgroups'
  | 'the MCP conformance suite'
  | 'the MCP Inspector'
  | 'the deploy tools';
export const REQUIREMENTS: Readonly<Record<RequirementName, { readonly install: string; probe(): string | undefined }>>;
export const SKIP_TAG: RegExp;
export function missing(name: RequirementName): string | undefined;
export function skipTag(names: readonly RequirementName[]): string;
