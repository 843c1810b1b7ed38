/**
 * Live output as `notifications/progress`: new text goes out in `message`, coalesced to at most one
 * notification per interval, with a strictly increasing `progress`, and nothing after `close()`.
 */

/** Sends one progress notification. */
export type ProgressSend = (update: { progress: number; message: string }) => Promise<void>;

export interface ProgressForwarderOptions {
  /** Least time between two notifications. @default 250 */
  intervalMs?: number;
  /** Longest message; more text waits for the next notification. @default 16_384 */
  maxMessageChars?: number;
}

/** Collects output and forwards it. */
export interface ProgressForwarder {
  push(text: string): void;
  /** Sends what is pending and stops: no notification may follow the result. */
  close(): Promise<void>;
}

/** Creates a forwarder over `send`; errors of `send` (a closed stream) end forwarding quietly. */
export function createProgressForwarder(send: ProgressSend, options: ProgressForwarderOptions = {}): ProgressForwarder {
  const { intervalMs = 250, maxMessageChars = 16_384 } = options;
  let pending = '';
  let progress = 0;
  let lastSentMs = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let failed = false;
  let sending: Promise<void> = Promise.resolve();

  const flush = (): void => {
    timer = undefined;
    if (pending === '' || closed) return;
    const message = pending.slice(0, maxMessageChars);
    pending = pending.slice(message.length);
    progress += 1;
    lastSentMs = Date.now();
    const update = { progress, message };
    sending = sending
      .then(() => (failed ? undefined : send(update)))
      .catch(() => {
        // The stream is gone (the client went away): stop forwarding.
        failed = true;
        closed = true;
      });
    if (pending !== '') schedule();
  };

  const schedule = (): void => {
    if (timer !== undefined || closed) return;
    timer = setTimeout(flush, Math.max(0, lastSentMs + intervalMs - Date.now()));
  };

  return {
    push(text) {
      if (closed || text === '') return;
      pending += text;
      schedule();
    },
    async close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      while (pending !== '' && !closed) flush();
      closed = true;
      await sending;
    },
  };
}
