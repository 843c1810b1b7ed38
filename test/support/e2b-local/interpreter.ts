/**
 * The code interpreter of the local E2B service: the HTTP API that `@e2b/code-interpreter` calls on a
 * sandbox's port 49999 (`POST /execute` answered in NDJSON, `/contexts` to create, list, restart and remove
 * contexts), modelled on E2B's own server and backed by one stateful Python process (kernel.py) per context.
 *
 * - Every line of an execution is written the way that server writes it (Python's `json.dumps`: `", "` and
 *   `": "` separators, non-ASCII escaped), ending with `{"type": "end_of_execution"}`; executions in a context
 *   run one at a time; a client that goes away interrupts its execution (SIGINT to the kernel).
 * - A kernel that dies ends its execution with a `ContextRestarting` error; the next one starts a fresh kernel.
 * - Flavor `alibaba`: results carry only text, html and json (that service returns charts only as files).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';

import type { SandboxProcess } from './sandbox-runtime';

export type InterpreterSpawn = (
  argv: string[],
  opts: { cwd: string; env: Record<string, string> },
) => Promise<SandboxProcess>;

export interface Interpreter {
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  stop(): Promise<void>;
}

/** Where the kernel runs from: the repository is visible (read-only) inside the sandbox at the same path. */
const KERNEL_PATH = join(__dirname, 'kernel.py');
const DEFAULT_CWD = '/home/user';
/** E2B's server writes `{"type": "keepalive"}` after this long without output. */
const KEEPALIVE_MS = 5_000;
/** Output can still be in the kernel's stdout pipe when its exit is reported. */
const EXIT_GRACE_MS = 100;
/**
 * How often an interrupt is repeated while its execution still runs. A SIGINT that lands in the moment before a
 * blocking call starts (between Python's last check for signals and the `time.sleep` it then enters) is taken
 * only when that call returns, which for `time.sleep(600)` is ten minutes on: so the kernel is signalled again.
 */
const INTERRUPT_REPEAT_MS = 500;
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** The status E2B's server answers when Jupyter has no kernel for a language (it relays that as a failure). */
const NO_KERNEL_STATUS = 500;
/** Languages E2B's template has kernels for, though this model has only Python. */
const E2B_LANGUAGES = new Set(['javascript', 'typescript', 'r', 'java', 'bash']);

type Json = Record<string, unknown>;
type Outcome = 'done' | 'died' | 'aborted';

/** `json.dumps(value)` as Python writes it (ensure_ascii, default separators), as E2B's server writes its lines. */
function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') {
    return JSON.stringify(value).replace(
      /[\u0080-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  }
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  return 'null';
}

/** E2B's language names: lower case, `js`/`ts` spelled out, none meaning Python. */
function normalizeLanguage(language: string | null | undefined): string {
  if (!language) return 'python';
  const lower = language.toLowerCase().trim();
  return lower === 'js' ? 'javascript' : lower === 'ts' ? 'typescript' : lower;
}

/** What E2B's server answers for a context it cannot create: a 500 relaying Jupyter's "no such kernel" answer. */
function noKernelMessage(language: string): string {
  const kernel = language === 'typescript' ? 'javascript' : language;
  const note = E2B_LANGUAGES.has(language) ? ' (this local model of E2B has only the python kernel)' : '';
  const jupyter = pythonJson({
    message:
      `The '${kernel}' kernel is not available. Please pick another suitable kernel instead, or install that ` +
      `kernel.${note}`,
    short_message: `${kernel} not found`,
  });
  return `Failed to create context: ${jupyter}`;
}

/** E2B's Result fields for Jupyter's MIME types, in the order its server writes them. */
const RESULT_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['text/plain', 'text'],
  ['text/html', 'html'],
  ['text/markdown', 'markdown'],
  ['image/svg+xml', 'svg'],
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['application/pdf', 'pdf'],
  ['text/latex', 'latex'],
  ['application/json', 'json'],
  ['application/javascript', 'javascript'],
  ['e2b/data', 'data'],
  ['e2b/chart', 'chart'],
];
const ALIBABA_FIELDS = new Set(['text', 'html', 'json']);

/** A `result` line from a MIME bundle, as E2B's Result model makes it (quotes around text stripped); null when nothing
 * is left. */
function resultLine(bundle: Json, isMain: boolean, flavor: 'e2b' | 'alibaba'): Json | null {
  const data = { ...bundle };
  const line: Json = { type: 'result' };
  for (const [mime, field] of RESULT_FIELDS) {
    const value = data[mime];
    delete data[mime];
    if (value === undefined || value === null) continue;
    if (flavor === 'alibaba' && !ALIBABA_FIELDS.has(field)) continue;
    line[field] = field === 'text' && typeof value === 'string' ? stripQuotes(value) : value;
  }
  if (flavor === 'alibaba') {
    if (Object.keys(line).length === 1) return null;
  } else {
    line.extra = data;
  }
  line.is_main_result = isMain;
  return line;
}

/** E2B's server drops one pair of quotes around a result's text: `'hi'` comes back as `hi`. */
function stripQuotes(text: string): string {
  const quoted = (text.startsWith("'") && text.endsWith("'")) || (text.startsWith('"') && text.endsWith('"'));
  return quoted ? text.slice(1, -1) : text;
}

function errorLine(name: string, value: string, traceback: string): Json {
  return { type: 'error', name, value, traceback };
}

interface Run {
  readonly id: string;
  readonly onMessage: (message: Json) => void;
  readonly resolve: (outcome: Outcome) => void;
}

/** One kernel process: JSON lines to its stdin, JSON lines from its stdout. */
class Kernel {
  readonly ready: Promise<void>;
  exited = false;
  killed = false;
  private run: Run | null = null;
  private partial: Buffer[] = [];
  private stderrTail = '';
  private markReady!: () => void;
  private failReady!: (err: Error) => void;

  constructor(
    readonly proc: SandboxProcess,
    cwd: string,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    this.ready.catch(() => undefined);
    proc.onStdout((chunk) => this.onStdout(chunk));
    proc.onStderr((chunk) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2_000);
    });
    void proc.exited.then(
      (status) => this.onExit(status),
      () => this.onExit({ exitCode: null, signal: null }),
    );
    this.send({ t: 'init', cwd });
  }

  /** Runs code; settles when the kernel says done, dies, or is killed. */
  execute(
    id: string,
    code: string,
    envVars: Record<string, string>,
    onMessage: (message: Json) => void,
  ): Promise<Outcome> {
    if (this.killed) return Promise.resolve('aborted');
    if (this.exited) return Promise.resolve('died');
    return new Promise<Outcome>((resolve) => {
      this.run = { id, onMessage, resolve };
      this.send({ t: 'execute', id, code, env_vars: envVars });
    });
  }

  /**
   * SIGINT, as Jupyter interrupts a kernel; only while it runs something (the kernel ignores it otherwise anyway),
   * and again every INTERRUPT_REPEAT_MS while that same execution runs.
   */
  interrupt(): void {
    const run = this.run;
    if (run === null || this.exited) return;
    this.proc.kill('SIGINT');
    const again = setInterval(() => {
      if (this.run === run && !this.exited) this.proc.kill('SIGINT');
      else clearInterval(again);
    }, INTERRUPT_REPEAT_MS);
    again.unref();
  }

  /** Kills the process; its execution (if any) ends at once as aborted. */
  kill(): void {
    this.killed = true;
    this.finish('aborted');
    this.failReady(new Error('the kernel was stopped'));
    if (!this.exited) this.proc.kill('SIGKILL');
  }

  private send(message: Json): void {
    try {
      this.proc.write(Buffer.from(`${pythonJson(message)}\n`));
    } catch {
      // The process is gone; its exit settles what waits on it.
    }
  }

  private finish(outcome: Outcome): void {
    const run = this.run;
    this.run = null;
    run?.resolve(outcome);
  }

  private onStdout(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      const line =
        this.partial.length > 0 ? Buffer.concat([...this.partial, piece]).toString('utf8') : piece.toString('utf8');
      this.partial = [];
      start = nl + 1;
      this.onLine(line);
    }
    if (start < chunk.length) this.partial.push(chunk.subarray(start));
  }

  private onLine(line: string): void {
    let message: Json;
    try {
      message = JSON.parse(line) as Json;
    } catch {
      return;
    }
    if (message.t === 'ready') return this.markReady();
    const run = this.run;
    if (run === null || message.id !== run.id) return;
    if (message.t === 'done') this.finish('done');
    else run.onMessage(message);
  }

  /** No new execution goes to an exited kernel; the one running ends once the pipe has had time to drain. */
  private onExit(status: { exitCode: number | null; signal: string | null }): void {
    this.exited = true;
    setTimeout(() => {
      const how = status.signal !== null ? `signal ${status.signal}` : `exit code ${status.exitCode}`;
      this.failReady(
        new Error(`the Python kernel ended (${how})${this.stderrTail ? `: ${this.stderrTail.trim()}` : ''}`),
      );
      this.finish(this.killed ? 'aborted' : 'died');
    }, EXIT_GRACE_MS);
  }
}

/** A context: an id, a language, a working directory, its kernel (started on demand) and its queue. */
class Context {
  kernel: Kernel | null = null;
  removed = false;
  /** Whether a kernel was started before: E2B sets a context's cwd on its first kernel only (see startKernel). */
  started = false;
  private tail: Promise<void> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly language: string,
    readonly cwd: string,
  ) {}

  /** Waits for the executions before this one; returns the release. */
  async acquire(): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = this.tail;
    this.tail = before.then(() => mine);
    await before;
    return release;
  }

  describe(): Json {
    return { id: this.id, language: this.language, cwd: this.cwd };
  }
}

/** One execution's NDJSON answer: lines as E2B writes them, keepalives in silences, one end line. */
class LineStream {
  gone = false;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly res: ServerResponse) {}

  write(line: Json): void {
    if (this.ended || this.gone) return;
    this.res.write(`${pythonJson(line)}\n`);
    this.keepalive();
  }

  keepalive(): void {
    clearTimeout(this.timer);
    if (!this.ended && !this.gone) this.timer = setTimeout(() => this.write({ type: 'keepalive' }), KEEPALIVE_MS);
  }

  end(): void {
    clearTimeout(this.timer);
    if (this.ended) return;
    this.ended = true;
    if (!this.gone) this.res.end(`${pythonJson({ type: 'end_of_execution' })}\n`);
  }

  get finished(): boolean {
    return this.ended;
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly json = false,
  ) {
    super(body);
  }
}

/** FastAPI's 422 for a request body that does not fit the model. */
function invalid(type: string, loc: Array<string | number>, msg: string): HttpError {
  return new HttpError(422, JSON.stringify({ detail: [{ type, loc: ['body', ...loc], msg }] }), true);
}

function optionalString(body: Json, key: string): string | null {
  const value = body[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalid('string_type', [key], 'Input should be a valid string');
  return value;
}

async function readJson(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'Request body too large');
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw invalid('json_invalid', [0], 'JSON decode error');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('model_attributes_type', [], 'Input should be a valid dictionary or object to extract fields from');
  return body as Json;
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

class LocalInterpreter implements Interpreter {
  private readonly contexts = new Map<string, Context>();
  private readonly kernels = new Set<Kernel>();
  private defaultContext: Context | null = null;
  private stopped = false;

  constructor(
    private readonly spawn: InterpreterSpawn,
    private readonly flavor: 'e2b' | 'alibaba',
  ) {
    this.defaultPython();
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const pathname = path.split('?')[0] ?? path;
    const method = req.method ?? 'GET';
    try {
      if (this.stopped) throw new HttpError(503, 'The code interpreter is stopped');
      if (pathname === '/health') return method === 'GET' ? sendJson(res, 200, 'OK') : this.notAllowed();
      if (pathname === '/execute') return method === 'POST' ? await this.execute(req, res) : this.notAllowed();
      if (pathname === '/contexts') {
        if (method === 'GET')
          return sendJson(
            res,
            200,
            [...this.contexts.values()].map((c) => c.describe()),
          );
        if (method === 'POST') return await this.createContext(req, res);
        return this.notAllowed();
      }
      const match = /^\/contexts\/([^/]+)(\/restart)?$/.exec(pathname);
      if (match !== null) {
        const id = decodeURIComponent(match[1] ?? '');
        if (match[2] !== undefined) return method === 'POST' ? await this.restartContext(id, res) : this.notAllowed();
        return method === 'DELETE' ? await this.removeContext(id, res) : this.notAllowed();
      }
      throw new HttpError(404, JSON.stringify({ detail: 'Not Found' }), true);
    } catch (err: unknown) {
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
        return;
      }
      if (err instanceof HttpError) {
        res.writeHead(err.status, { 'content-type': err.json ? 'application/json' : 'text/plain; charset=utf-8' });
        res.end(err.body);
      } else {
        sendText(res, 500, err instanceof Error ? err.message : String(err));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const context of this.contexts.values()) context.removed = true;
    this.contexts.clear();
    const kernels = [...this.kernels];
    for (const kernel of kernels) kernel.kill();
    await Promise.all(kernels.map((k) => k.proc.exited.catch(() => undefined)));
  }

  private notAllowed(): never {
    throw new HttpError(405, JSON.stringify({ detail: 'Method Not Allowed' }), true);
  }

  /** The default Python context, which E2B's server creates at start; a new one if it was removed. */
  private defaultPython(): Context {
    if (this.defaultContext === null || this.defaultContext.removed) {
      this.defaultContext = new Context(randomUUID(), 'python', DEFAULT_CWD);
      this.contexts.set(this.defaultContext.id, this.defaultContext);
    }
    return this.defaultContext;
  }

  /**
   * Starts the context's kernel (the caller awaits `ready`). E2B changes to the context's cwd once, when it
   * creates the context; a kernel that Jupyter restarts (a restart, or after it died) starts again where
   * Jupyter launches kernels, /home/user, though the context still lists its cwd.
   */
  private async startKernel(context: Context): Promise<Kernel> {
    const cwd = context.started ? DEFAULT_CWD : context.cwd;
    context.started = true;
    const proc = await this.spawn(['python3', KERNEL_PATH, 'ipykernel_launcher', context.id], { cwd: '/', env: {} });
    const kernel = new Kernel(proc, cwd);
    this.kernels.add(kernel);
    void proc.exited.finally(() => this.kernels.delete(kernel)).catch(() => undefined);
    if (this.stopped || context.removed) kernel.kill();
    else context.kernel = kernel;
    return kernel;
  }

  private async createContext(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const language = normalizeLanguage(optionalString(body, 'language'));
    const cwd = optionalString(body, 'cwd') || DEFAULT_CWD;
    if (language !== 'python') throw new HttpError(NO_KERNEL_STATUS, noKernelMessage(language));
    const context = new Context(randomUUID(), language, cwd);
    try {
      await (await this.startKernel(context)).ready;
    } catch (err: unknown) {
      context.kernel?.kill();
      throw new HttpError(500, `Failed to create context: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.contexts.set(context.id, context);
    sendJson(res, 200, context.describe());
  }

  private async restartContext(id: string, res: ServerResponse): Promise<void> {
    const context = this.contexts.get(id);
    if (context === undefined) throw new HttpError(404, `Context ${id} not found`);
    context.kernel?.kill();
    context.kernel = null;
    try {
      await (await this.startKernel(context)).ready;
    } catch {
      throw new HttpError(500, `Failed to restart context ${id}`);
    }
    sendJson(res, 200, null);
  }

  private async removeContext(id: string, res: ServerResponse): Promise<void> {
    const context = this.contexts.get(id);
    if (context === undefined) throw new HttpError(404, `Context ${id} not found`);
    this.contexts.delete(id);
    context.removed = true;
    context.kernel?.kill();
    context.kernel = null;
    sendJson(res, 200, null);
  }

  private async execute(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (body.code === undefined) throw invalid('missing', ['code'], 'Field required');
    if (typeof body.code !== 'string') throw invalid('string_type', ['code'], 'Input should be a valid string');
    const code = body.code;
    const contextId = optionalString(body, 'context_id');
    const language = optionalString(body, 'language');
    const envVars = body.env_vars ?? null;
    if (envVars !== null && (typeof envVars !== 'object' || Array.isArray(envVars)))
      throw invalid('dict_type', ['env_vars'], 'Input should be a valid dictionary');
    for (const [key, value] of Object.entries(envVars ?? {})) {
      if (typeof value !== 'string') throw invalid('string_type', ['env_vars', key], 'Input should be a valid string');
    }
    if (contextId && language) throw new HttpError(400, 'Only one of context_id or language can be provided');

    let context: Context | undefined;
    if (language) {
      const normalized = normalizeLanguage(language);
      if (normalized !== 'python') throw new HttpError(500, noKernelMessage(normalized));
      context = this.defaultPython();
    } else if (contextId) {
      context = this.contexts.get(contextId);
    } else {
      context = this.defaultPython();
    }
    if (context === undefined) throw new HttpError(404, `Context ${contextId} not found`);

    // As E2B's streaming response: the status goes out at once, the lines once the context is free.
    res.writeHead(200);
    res.flushHeaders();
    const stream = new LineStream(res);
    let running: Kernel | null = null;
    res.on('close', () => {
      if (stream.finished) return;
      stream.gone = true;
      running?.interrupt(); // E2B interrupts the kernel when the client goes away mid-execution
    });
    const release = await context.acquire();
    try {
      if (stream.gone) return;
      if (context.removed || this.stopped) return stream.write(unexpectedEnd());
      let kernel: Kernel | null = null;
      try {
        kernel = context.kernel !== null && !context.kernel.exited ? context.kernel : await this.startKernel(context);
        await kernel.ready;
      } catch (err: unknown) {
        if (context.removed || this.stopped || kernel?.killed === true) return stream.write(unexpectedEnd());
        return stream.write(errorLine('KernelStartError', err instanceof Error ? err.message : String(err), ''));
      }
      running = kernel;
      stream.keepalive();
      const outcome = await kernel.execute(randomUUID(), code, (envVars ?? {}) as Record<string, string>, (message) => {
        const line = this.wireLine(message);
        if (line !== null) stream.write(line);
      });
      if (outcome === 'died') {
        if (context.kernel === kernel) context.kernel = null;
        // What E2B's server says when Jupyter reports the kernel restarting after it died.
        stream.write(errorLine('ContextRestarting', 'Context was restarted', ''));
      } else if (outcome === 'aborted') {
        stream.write(unexpectedEnd());
      }
    } finally {
      running = null;
      release();
      stream.end();
    }
  }

  /** A kernel message as the NDJSON line E2B's server writes for it; null for none. */
  private wireLine(message: Json): Json | null {
    switch (message.t) {
      case 'start':
        return { type: 'number_of_executions', execution_count: message.execution_count };
      case 'stream':
        return {
          type: message.name === 'stderr' ? 'stderr' : 'stdout',
          text: message.text,
          timestamp: message.timestamp,
        };
      case 'display':
        return resultLine((message.data ?? {}) as Json, message.main === true, this.flavor);
      case 'error':
        return errorLine(String(message.ename), String(message.evalue), String(message.traceback));
      default:
        return null;
    }
  }
}

/** What E2B's server writes when an execution's connection to its kernel closes first (restart, removal). */
function unexpectedEnd(): Json {
  return errorLine(
    'UnexpectedEndOfExecution',
    'Connection to the execution was closed before the execution was finished',
    '',
  );
}

export function createInterpreter(spawn: InterpreterSpawn, options: { flavor: 'e2b' | 'alibaba' }): Interpreter {
  return new LocalInterpreter(spawn, options.flavor);
}
