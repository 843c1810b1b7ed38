/**
 * Jest transform for files that are imported as their text (the local sandbox's Python programs, `*.py`): the module
 * is the file's text, as esbuild's `text` loader makes it in the bundle (build.mjs).
 */
'use strict';

module.exports = {
  process(sourceText) {
    return { code: `module.exports = ${JSON.stringify(sourceText)};\n` };
  },
};
