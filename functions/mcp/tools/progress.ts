/**
 * Live output as `notifications/progress`: new text goes out in `message`, coalesced to at most one
 * notification per interval and one on its way at a time, with a strictly increasing `progress`, and nothing
 * after `close()`. What waits is bounded as output capture is (sandbox/output-capture.ts): past one message's
 * worth, its head and its tail are kept and the middle is counted, shown as `[… N bytes omitted …]`.
 */

/** Sends one progress notification. */
export type ProgressSend = (update: { progress: number; message: string }) => Promise<void>;

export interface ProgressForwarderOptions {
  /** Least time between two notifications. @default 250 */
  intervalMs?: number;
  /** Longest message (its omission marker aside); what waits beyond it loses its middle. @default 16_384 */
  maxMessageChars?: number;
}

/** Collects output and forwards it. */
export interface ProgressForwarder {
  push(text: string): void;
  /** Sends what is pending as one last message and stops: no notification may follow the result. */
  close(): Promise<void>;
}

/** Text waiting to be sent, at most one message's worth: all of it, or its head and tail and a count of the rest. */
class PendingText {
  private head = '';
  private tail = '';
  private omittedBytes = 0;

  constructor(private readonly maxChars: number) {}

  get empty(): boolean {
    return this.head === '' && this.tail === '' && this.omittedBytes === 0;
  }

  add(text: string): void {
    if (this.omittedBytes === 0 && this.tail === '' && this.head.length + text.length <= this.maxChars) {
      this.head += text;
      return;
    }
    const half = Math.floor(this.maxChars / 2);
    if (this.omittedBytes === 0 && this.tail === '') {
      // The first overflow: what waits so far gives the head, the rest joins the tail.
      const all = this.head + text;
      this.head = all.slice(0, half);
      this.keepTail(all.slice(half), half);
      return;
    }
    this.keepTail(this.tail + text, half);
  }

  /** The message, and nothing waits any more. */
  take(): string {
    const message =
      this.omittedBytes === 0
        ? this.head + this.tail
        : `${this.head}\n[… ${this.omittedBytes} bytes omitted …]\n${this.tail}`;
    this.head = '';
    this.tail = '';
    this.omittedBytes = 0;
    return message;
  }

  private keepTail(text: string, chars: number): void {
    const cut = Math.max(0, text.length - chars);
    if (cut > 0) this.omittedBytes += Buffer.byteLength(text.slice(0, cut));
    this.tail = text.slice(cut);
  }
}

/** Creates a forwarder over `send`; errors of `send` (a closed stream) end forwarding quietly. */
export function createProgressForwarder(send: ProgressSend, options: ProgressForwarderOptions = {}): ProgressForwarder {
  const { intervalMs = 250, maxMessageChars = 16_384 } = options;
  const pending = new PendingText(maxMessageChars);
  let progress = 0;
  let lastSentMs = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** Set by close(): nothing more is scheduled, only the last message goes. */
  let closing = false;
  /** The notification on its way (one at a time: a client that reads slowly is not sent more). */
  let sending: Promise<void> | undefined;

  const sendNow = (): Promise<void> => {
    progress += 1;
    const update = { progress, message: pending.take() };
    lastSentMs = Date.now();
    const sent = send(update).catch(() => {
      // The stream is gone (the client went away): stop forwarding.
      closed = true;
    });
    sending = sent.then(() => {
      sending = undefined;
      schedule();
    });
    return sending;
  };

  const flush = (): void => {
    timer = undefined;
    if (pending.empty || closed || sending !== undefined) return;
    void sendNow();
  };

  const schedule = (): void => {
    if (timer !== undefined || closed || closing || sending !== undefined || pending.empty) return;
    timer = setTimeout(flush, Math.max(0, lastSentMs + intervalMs - Date.now()));
  };

  return {
    push(text) {
      if (closed || text === '') return;
      pending.add(text);
      schedule();
    },
    async close() {
      closing = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await sending;
      if (!closed && !pending.empty) {
        // Not through sendNow: nothing may be scheduled after the last message.
        progress += 1;
        const update = { progress, message: pending.take() };
        closed = true;
        await send(update).catch(() => undefined);
      }
      closed = true;
    },
  };
}
