/**
 * The rich results of one code execution (the value of the last expression, charts) within a budget, whatever
 * the backend: code in the sandbox can produce as many as it likes (locally it writes its own frames to the
 * kernel's channel), and each is held in the server's memory until the call is answered. Past the budget
 * results are dropped and counted, and the tool says so.
 */
import type { CodeOutput, OmittedResults } from './types';

/** Results kept per execution. */
export const MAX_CODE_RESULTS = 32;
/** Bytes of results kept per execution (an image counts its base64 text). */
export const MAX_CODE_RESULT_BYTES = 8 * 1024 * 1024;
/** The longest text result; a longer one is cut, with a marker. */
export const MAX_TEXT_RESULT_CHARS = 65_536;

/** Collects one execution's results. */
export class CodeResults {
  private readonly kept: CodeOutput[] = [];
  private keptBytes = 0;
  private omittedCount = 0;
  private omittedBytes = 0;

  /** Bytes one more result may still have. */
  get roomBytes(): number {
    return this.kept.length >= MAX_CODE_RESULTS ? 0 : MAX_CODE_RESULT_BYTES - this.keptBytes;
  }

  /** Keeps `output` if it fits (a long text is cut first), else counts it as omitted. */
  add(output: CodeOutput): void {
    const fitted = output.type === 'text' ? { type: 'text' as const, text: cutText(output.text) } : output;
    const bytes = fitted.type === 'text' ? fitted.text.length : fitted.data.length;
    if (bytes > this.roomBytes) {
      this.omit(output.type === 'text' ? output.text.length : output.data.length);
      return;
    }
    this.kept.push(fitted);
    this.keptBytes += bytes;
  }

  /** A result of `bytes` that was not even read (too large to hold). */
  omit(bytes: number): void {
    this.omittedCount += 1;
    this.omittedBytes += bytes;
  }

  get results(): readonly CodeOutput[] {
    return this.kept;
  }

  /** What was left out, or `undefined` when nothing was. */
  get omitted(): OmittedResults | undefined {
    return this.omittedCount === 0 ? undefined : { count: this.omittedCount, bytes: this.omittedBytes };
  }
}

function cutText(text: string): string {
  if (text.length <= MAX_TEXT_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_TEXT_RESULT_CHARS)}\n[… ${text.length - MAX_TEXT_RESULT_CHARS} characters omitted …]`;
}
