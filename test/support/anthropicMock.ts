// Minimal Anthropic Messages API mock for driving the real Claude Code CLI (`claude -p`) in tests.
// Claude Code 2.1.x POSTs `${ANTHROPIC_BASE_URL}/v1/messages?beta=true` with `stream: true` and reads
// SSE (message_start, content_block_start/delta/stop, message_delta, message_stop); it also sends
// `HEAD /api/hello`. See docs/notes/claude-gemini-hooks-observed.md.
import type { IncomingHttpHeaders } from 'node:http';
import { startLoopbackServer, type RequestHandler } from './loopbackServer';

/** A content block of a request message (text, tool_use, tool_result, ...). */
export interface AnthropicBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | AnthropicBlock[];
  is_error?: boolean;
  [key: string]: unknown;
}

export interface AnthropicMessage {
  role?: string;
  content?: string | AnthropicBlock[];
}

interface MessagesBody {
  model?: string;
  stream?: boolean;
  system?: string | AnthropicBlock[];
  messages?: AnthropicMessage[];
  tools?: { name?: string }[];
  [key: string]: unknown;
}

export interface AnthropicRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: MessagesBody | undefined;
}

/** What the model answers: text, or one tool call. */
type AnthropicReply = { text: string } | { toolUse: { name: string; input: Record<string, unknown>; id?: string } } | { status: number; body: string };

export type AnthropicScript = (request: AnthropicRequest, index: number) => AnthropicReply;

export interface AnthropicMock {
  /** Value for ANTHROPIC_BASE_URL (no trailing /v1). */
  url: string;
  /** Every POST /v1/messages request, in order. */
  requests: AnthropicRequest[];
  close(): Promise<void>;
}

let counter = 0;

/** Text of a message's content, blocks joined by newlines (tool_result contents included). */
export function messageText(message: AnthropicMessage): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  return (content ?? [])
    .map((block) => {
      if (typeof block.text === 'string') return block.text;
      if (block.type === 'tool_result') return typeof block.content === 'string' ? block.content : (block.content ?? []).map((b) => b.text ?? '').join('\n');
      return '';
    })
    .join('\n');
}

/** The last tool_result block of the request's last user message, if any. */
export function lastToolResult(request: AnthropicRequest): AnthropicBlock | undefined {
  const last = request.body?.messages?.at(-1);
  if (last?.role !== 'user' || typeof last.content === 'string') return undefined;
  return (last.content ?? []).filter((block) => block.type === 'tool_result').at(-1);
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function contentOf(reply: Exclude<AnthropicReply, { status: number }>): { block: Record<string, unknown>; stop: string } {
  if ('text' in reply) return { block: { type: 'text', text: reply.text }, stop: 'end_turn' };
  const id = reply.toolUse.id ?? `toolu_mock_${++counter}`;
  return { block: { type: 'tool_use', id, name: reply.toolUse.name, input: reply.toolUse.input }, stop: 'tool_use' };
}

function renderStream(model: string, reply: Exclude<AnthropicReply, { status: number }>): string {
  const id = `msg_mock_${++counter}`;
  const { block, stop } = contentOf(reply);
  let out = sse('message_start', {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 1 },
    },
  });
  if (block.type === 'text') {
    out += sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    out += sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: block.text } });
  } else {
    out += sse('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
    });
    out += sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
    });
  }
  out += sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  out += sse('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  out += sse('message_stop', { type: 'message_stop' });
  return out;
}

/** The mock's answer to one request, recorded in `requests` (its own server's, or the stand-in's: standIn.ts). */
export function anthropicHandler(script: AnthropicScript, requests: AnthropicRequest[]): RequestHandler {
  return (req, raw, res) => {
    const path = req.url ?? '/';
    const pathname = path.split('?')[0] ?? path;
    if (req.method !== 'POST' || pathname !== '/v1/messages') {
      // HEAD /api/hello and any other probe: harmless, not recorded.
      res.writeHead(pathname.endsWith('/count_tokens') ? 200 : req.method === 'HEAD' || req.method === 'GET' ? 200 : 404, {
        'content-type': 'application/json',
      });
      res.end(pathname.endsWith('/count_tokens') ? JSON.stringify({ input_tokens: 10 }) : '{}');
      return;
    }
    let body: MessagesBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as MessagesBody) : undefined;
    } catch {
      body = undefined;
    }
    const rec: AnthropicRequest = { method: req.method ?? '', path, headers: req.headers, raw, body };
    const index = requests.push(rec) - 1;
    let reply: AnthropicReply;
    try {
      reply = script(rec, index);
    } catch (error) {
      reply = { status: 500, body: JSON.stringify({ type: 'error', error: { type: 'api_error', message: String(error) } }) };
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
      return;
    }
    const model = body?.model ?? 'mock-model';
    if (body?.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(renderStream(model, reply));
      return;
    }
    const { block, stop } = contentOf(reply);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `msg_mock_${++counter}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [block],
        stop_reason: stop,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 },
      }),
    );
  };
}

/** Start the mock on 127.0.0.1 with an ephemeral port. */
export async function startAnthropicMock(script: AnthropicScript = () => ({ text: 'ok' })): Promise<AnthropicMock> {
  const requests: AnthropicRequest[] = [];
  const server = await startLoopbackServer(anthropicHandler(script, requests));
  const { port } = server;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: server.close,
  };
}
