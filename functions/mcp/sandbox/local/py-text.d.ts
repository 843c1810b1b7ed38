/**
 * A `.py` file imported as its text: esbuild's `text` loader in the bundle (build.mjs),
 * test/support/text-transform.js under jest.
 */
declare module '*.py' {
  const text: string;
  // biome-ignore lint/style/noDefaultExport: esbuild's text loader gives a file's text as its default export
  export default text;
}
