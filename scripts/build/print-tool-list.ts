/**
 * Run by build.mjs (bundled as the server is, then run once in a child Node): prints the tool catalog's JSON,
 * `describeTools(TOOLS)` of functions/mcp/tools/registry.ts, which the build gives the bundles as
 * `__TOOL_LIST_JSON__`, so that a cold start parses one string rather than turning the tools' zod schemas into
 * JSON Schema (~10 ms).
 */
import { describeTools, TOOLS } from '../../functions/mcp/tools/registry';

process.stdout.write(JSON.stringify(describeTools(TOOLS)), () => process.exit(0));
