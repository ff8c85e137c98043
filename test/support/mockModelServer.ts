// Minimal OpenAI "Responses API" mock for driving the real Codex CLI in tests.
// Codex (wire_api = "responses") POSTs to `${base_url}/responses` and reads an SSE
// stream; it only needs `response.output_item.done` items plus `response.completed`.
import type { IncomingHttpHeaders } from 'node:http';
import { startLoopbackServer, type RequestHandler } from './loopbackServer';

/** An item of the request's `input` array (message, function_call, function_call_output, ...). */
interface InputItem {
  type?: string;
  role?: string; // "developer" | "user" | "assistant" for messages
  content?: { type?: string; text?: string }[];
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string;
  [key: string]: unknown;
}

/** The subset of a Responses API request body that tests look at. */
interface ResponsesBody {
  model?: string;
  input?: InputItem[];
  tools?: { type?: string; name?: string; [key: string]: unknown }[];
  client_metadata?: Record<string, string>;
  [key: string]: unknown;
}

/** One request as received by the mock (body undefined if it was not JSON). */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: ResponsesBody | undefined;
}

/** A single Responses-API output item (message, function_call, ...). */
type OutputItem = Record<string, unknown>;

/** What the mock sends back: a list of output items, or a raw HTTP error. */
export type Reply = { items: OutputItem[] } | { status: number; body: string };

export type Script = (request: RecordedRequest, index: number) => Reply;

export interface MockModelServer {
  /** Base URL to use as `base_url` in a Codex model provider (ends in /v1). */
  url: string;
  port: number;
  /** Every /responses request received, in order. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export interface MockOptions {
  script?: Script;
}

let counter = 0;
const nextId = (prefix: string): string => `${prefix}_${Date.now().toString(36)}_${++counter}`;

/** An assistant text message item. */
function textItem(text: string): OutputItem {
  return {
    type: 'message',
    role: 'assistant',
    id: nextId('msg'),
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/** A function_call item; `args` is JSON-encoded because the API sends arguments as a string. */
function functionCallItem(name: string, args: unknown, callId = nextId('call')): OutputItem {
  return { type: 'function_call', id: nextId('fc'), call_id: callId, name, arguments: JSON.stringify(args) };
}

/** Reply with a single assistant message. */
export function textReply(text: string): Reply {
  return { items: [textItem(text)] };
}

/**
 * Codex 0.171 exposes its shell as the `exec_command` function
 * (arguments: {"cmd": string, "workdir"?: string, "yield_time_ms"?: number, ...}).
 */
const SHELL_TOOL_NAME = 'exec_command';

/** Reply that asks Codex to run `cmd` through its shell tool. */
export function shellCallReply(cmd: string, callId?: string): Reply {
  return { items: [functionCallItem(SHELL_TOOL_NAME, { cmd }, callId)] };
}

/** True when the request carries a function_call_output (i.e. it is a tool follow-up). */
function hasFunctionCallOutput(req: RecordedRequest): boolean {
  return (req.body?.input ?? []).some((i) => i.type === 'function_call_output');
}

/**
 * Texts of the `developer` messages in a request. Hook `additionalContext` (and plain
 * stdout of SessionStart/UserPromptSubmit/PostToolUse hooks) arrives as one such message each.
 */
export function developerTexts(req: RecordedRequest): string[] {
  return (req.body?.input ?? []).filter((i) => i.type === 'message' && i.role === 'developer').flatMap((i) => (i.content ?? []).map((c) => c.text ?? ''));
}

/**
 * Script: the first turn request gets a shell call for `cmd`; the follow-up
 * (carrying function_call_output) and anything else get `finalText`.
 */
export function shellThenText(cmd: string, finalText = 'done'): Script {
  let issued = false;
  return (req) => {
    if (!issued && !hasFunctionCallOutput(req)) {
      issued = true;
      return shellCallReply(cmd);
    }
    return textReply(finalText);
  };
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function renderSse(items: OutputItem[]): string {
  const id = nextId('resp');
  let out = sse('response.created', { type: 'response.created', response: { id } });
  for (const item of items) out += sse('response.output_item.done', { type: 'response.output_item.done', item });
  out += sse('response.completed', {
    type: 'response.completed',
    response: {
      id,
      usage: { input_tokens: 10, input_tokens_details: null, output_tokens: 5, output_tokens_details: null, total_tokens: 15 },
    },
  });
  return out;
}

/** The mock's answer to one request, recorded in `requests` (its own server's, or the stand-in's: standIn.ts). */
export function responsesHandler(script: Script, requests: RecordedRequest[]): RequestHandler {
  return (req, raw, res) => {
    const path = req.url ?? '/';
    // Codex may probe e.g. GET /v1/models; answer harmlessly and don't record.
    if (!path.endsWith('/responses')) {
      res.writeHead(req.method === 'GET' && path.includes('/models') ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [], models: [] }));
      return;
    }
    let body: ResponsesBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as ResponsesBody) : undefined;
    } catch {
      body = undefined;
    }
    const rec: RecordedRequest = { method: req.method ?? '', path, headers: req.headers, raw, body };
    const index = requests.push(rec) - 1;
    let reply: Reply;
    try {
      reply = script(rec, index);
    } catch (err) {
      reply = { status: 500, body: String(err) };
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(renderSse(reply.items));
  };
}

/** Start the mock on 127.0.0.1 with an ephemeral port. */
export async function startMockModelServer(opts: MockOptions = {}): Promise<MockModelServer> {
  const script: Script = opts.script ?? (() => textReply('ok'));
  const requests: RecordedRequest[] = [];
  const server = await startLoopbackServer(responsesHandler(script, requests));
  const { port } = server;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    close: server.close,
  };
}
