// A client process for the MCP tasks suites: the official v2 SDK Client with the official Tasks package
// (@modelcontextprotocol/ext-tasks), one operation per run, so that each run is a client that connects, acts and goes
// away (the package is ESM only, which the suites' CommonJS cannot load). Prints one JSON line.
//
//   node test/support/tasks-client.mjs '<json>'
//   { "op": "start" | "resume" | "snapshot" | "cancel" | "list" | "call", "url", "token", "era": "2025" | "2026",
//     "tool"?, "args"?, "preference"?, "retentionMs"?, "reference"?, "taskId"?, "cursor"? }
//
// - start: calls `tool` with a task required, hands the task off (its reference printed) and disconnects;
// - resume: takes a reference over on this (new) connection and waits for the outcome;
// - snapshot, cancel: one task by id; list: one page of the credential's tasks; call: a plain call, no task.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

const MODERN = '2026-07-28';
/** What names the deployment to the Tasks package: a task handed off on one instance is resumed on another. */
const ENDPOINT = 'sandbox-mcp-tests';

const plan = JSON.parse(process.argv[2]);
const auth = { authorization: `Bearer ${plan.token}` };
const modern = plan.era === '2026';
const clientInfo = { name: 'tasks-e2e', version: '1.0.0' };

/** A 2026-07-28 task request, sent as the revision says (the SDK Client does not send these shapes itself). */
async function rawDispatch(request, options = {}) {
  const params = request.params ?? {};
  const name = request.method === 'tools/call' ? params.name : params.taskId;
  const res = await fetch(plan.url, {
    method: 'POST',
    headers: {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': request.method,
      ...(typeof name === 'string' && { 'mcp-name': name }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: request.id ?? 1, ...request }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  const text = await res.text();
  const lines = text.split('\n').filter((line) => line.startsWith('data: '));
  const messages = lines.length > 0 ? lines.map((line) => JSON.parse(line.slice(6))) : [JSON.parse(text)];
  const answer = messages.find((m) => 'result' in m || 'error' in m);
  if (answer === undefined) throw new Error(`no answer in ${text.slice(0, 200)}`);
  return 'error' in answer ? { kind: 'error', error: answer.error } : { kind: 'result', result: answer.result };
}

async function connect() {
  const client = new Client(clientInfo, {
    capabilities: {},
    ...(modern && { versionNegotiation: { mode: { pin: MODERN } } }),
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: auth } }));
  const session = createTaskSessionFromClient(client, {
    endpointId: ENDPOINT,
    ...(modern && {
      rawDispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo, clientCapabilities: {} },
    }),
  });
  return { client, session };
}

function outcomeOf(outcome) {
  if (outcome.status === 'completed') return { status: 'completed', result: outcome.result };
  if (outcome.status === 'failed')
    return { status: 'failed', error: { message: outcome.error.message, code: outcome.error.code } };
  return { status: outcome.status };
}

async function run() {
  const { client, session } = await connect();
  try {
    switch (plan.op) {
      case 'start': {
        const execution = await session.callTool(plan.tool, plan.args, {
          task: {
            preference: plan.preference ?? 'require',
            ...(plan.retentionMs !== undefined && { retentionMs: plan.retentionMs }),
          },
        });
        if (execution.kind !== 'task') return { kind: 'immediate', outcome: outcomeOf(await execution.result()) };
        let reference;
        await execution.handoff((ref) => {
          reference = ref;
        });
        return { kind: 'task', taskId: execution.handle.taskId, reference };
      }
      case 'resume': {
        const execution = await session.resumeTask(plan.reference);
        const { outcome } = await execution.settle();
        return { outcome: outcomeOf(outcome) };
      }
      case 'snapshot': {
        const view = await session.task(plan.taskId).snapshot();
        return { task: { taskId: view.taskId, status: view.status, retentionMs: view.retentionMs, raw: view.raw } };
      }
      case 'cancel':
        await session.task(plan.taskId).cancel();
        return { cancelled: true };
      case 'list': {
        const page = await session.listTasks(plan.cursor);
        return { tasks: page.tasks.map((t) => ({ taskId: t.taskId, status: t.status })), nextCursor: page.nextCursor };
      }
      case 'call':
        // As long as the slowest call of the suites takes (the SDK's default gives up after 60 s).
        return { result: await client.callTool({ name: plan.tool, arguments: plan.args }, { timeout: 200_000 }) };
      default:
        throw new Error(`unknown op ${plan.op}`);
    }
  } finally {
    // Not after a handoff: closing the session would close the handed-off execution too, and with the 2026-07-28
    // generation that cancels the task (ext-tasks 0.2.2). A client that hands a task off just goes away.
    if (plan.op !== 'start') await session.close().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

run().then(
  (out) => {
    process.stdout.write(`${JSON.stringify(out)}\n`);
    process.exit(0);
  },
  (err) => {
    process.stdout.write(
      `${JSON.stringify({ error: { name: err?.name, message: String(err?.message ?? err), code: err?.code } })}\n`,
    );
    process.exit(0);
  },
);
