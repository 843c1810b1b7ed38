/**
 * Reading yargs' parsed option values, which may be absent, empty or padded.
 */
'use strict';

/**
 * The trimmed string, or undefined when the option was not given or is blank.
 * @param {unknown} value
 * @returns {string | undefined}
 */
function optionalString(value) {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

module.exports = { optionalString };
