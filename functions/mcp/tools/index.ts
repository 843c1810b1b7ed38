/** The tools layer's public surface. */
export { createToolCatalog, TOOLS, type ToolCatalog } from './registry';
export type { ToolContext } from './tool';
