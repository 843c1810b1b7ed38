/**
 * The deploy CLI's two failures: the invocation is wrong (exit 2), or the work failed (exit 1).
 */
'use strict';

/** Bad options or environment, found before anything was written or called. Exit code 2. */
class UsageError extends Error {
  /**
   * @param {string[]} problems each names the option or variable to change
   * @param {ErrorOptions} [options]
   */
  constructor(problems, options) {
    super(
      problems.length === 1 ? String(problems[0]) : `${problems.length} problems:\n  - ${problems.join('\n  - ')}`,
      options,
    );
    this.name = 'UsageError';
    this.problems = problems;
  }
}

/** A step that failed: an FC API error (with its code and request id) or a local failure. Exit code 1. */
class DeployError extends Error {
  /**
   * @param {string} message what failed
   * @param {{ step?: string, code?: string, requestId?: string, statusCode?: number, hint?: string, cause?: unknown }}
   * [details]
   */
  constructor(message, details = {}) {
    super(message, { cause: details.cause });
    this.name = 'DeployError';
    this.step = details.step;
    this.code = details.code;
    this.requestId = details.requestId;
    this.statusCode = details.statusCode;
    this.hint = details.hint;
  }
}

/**
 * A thrown value in words for a message: an Error's message, anything else as a string; never a stack.
 * @param {unknown} err
 * @returns {string}
 */
function describeError(err) {
  return err instanceof Error ? err.message : String(err);
}

module.exports = { UsageError, DeployError, describeError };
