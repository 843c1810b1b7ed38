/** A `.py` file imported as its text: esbuild's `text` loader in the bundle (build.mjs), test/support/text-transform.js under jest. */
declare module '*.py' {
  const text: string;
  export default text;
}
