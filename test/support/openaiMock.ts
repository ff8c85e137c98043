// Minimal OpenAI chat-completions mock for driving the real GitHub Copilot CLI in tests. With
// COPILOT_OFFLINE=true and COPILOT_PROVIDER_BASE_URL=<url>/v1, Copilot CLI 1.0.102 sends
//   POST /v1/chat/completions   (every model call; `stream: true`, answered as SSE `data:` chunks)
// and may list models first (GET /v1/models). Everything else gets a 404 and is recorded, so a
// test can see a route it did not expect.
import { startLoopbackServer, type RequestHandler } from './loopbackServer';

interface ChatToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface ChatMessage {
  role?: string;
  content?: string | { type?: string; text?: string }[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  [key: string]: unknown;
}

interface ChatBody {
  model?: string;
  stream?: boolean;
  messages?: ChatMessage[];
  tools?: { type?: string; function?: { name?: string } }[];
  [key: string]: unknown;
}

export interface ChatRequest {
  readonly path: string;
  readonly raw: string;
  readonly body: ChatBody | undefined;
}

type ChatReply =
  { text: string } | { toolCall: { name: string; arguments: Record<string, unknown> } } | { status: number; body: string; headers?: Record<string, string> };

/** Answers each chat-completions request (index counts them from 0). */
export type ChatScript = (request: ChatRequest, index: number) => ChatReply;

export interface OpenAiMock {
  /** Value for COPILOT_PROVIDER_BASE_URL (ends in /v1). */
  readonly url: string;
  /** Every chat-completions request, in order. */
  readonly requests: ChatRequest[];
  /** Every other request (`GET /v1/models`, unknown routes), method and path only. */
  readonly otherRequests: string[];
  close(): Promise<void>;
}

export const MOCK_MODEL = 'mock-model';

/** The text of one message, whatever content shape it uses. */
function messageText(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? '').join('\n');
  return '';
}

/** Everything the model sees in a request, every message of every role, as text. */
export function requestText(request: ChatRequest): string {
  return (request.body?.messages ?? []).map(messageText).join('\n');
}

/** The tool result a request carries as its last message, when it is a tool follow-up. */
export function lastToolResult(request: ChatRequest): string | undefined {
  const last = request.body?.messages?.at(-1);
  return last?.role === 'tool' ? messageText(last) : undefined;
}

function chunk(id: string, delta: Record<string, unknown>, finishReason: string | null): string {
  const body = {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: MOCK_MODEL,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

function streamOf(reply: Exclude<ChatReply, { status: number }>, index: number): string {
  const id = `chatcmpl-mock-${index}`;
  const usage = { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 };
  const last = (finish: string) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: MOCK_MODEL, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage })}\n\n`;
  if ('text' in reply) return chunk(id, { role: 'assistant', content: reply.text }, null) + last('stop') + 'data: [DONE]\n\n';
  const call = {
    index: 0,
    id: `call_mock_${index}`,
    type: 'function',
    function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.arguments) },
  };
  return chunk(id, { role: 'assistant', content: null, tool_calls: [call] }, null) + last('tool_calls') + 'data: [DONE]\n\n';
}

/** The mock's answer to one request, recorded in `requests` (its own server's, or the stand-in's: standIn.ts). */
export function openAiHandler(script: ChatScript, requests: ChatRequest[], otherRequests: string[]): RequestHandler {
  return (req, raw, res) => {
    const path = req.url ?? '/';
    if (req.method === 'GET' && /^\/v1\/models\/?(\?|$)/.test(path)) {
      otherRequests.push(`${req.method} ${path}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: MOCK_MODEL, object: 'model', created: 0, owned_by: 'mock' }] }));
      return;
    }
    if (req.method !== 'POST' || !/^\/v1\/chat\/completions\/?(\?|$)/.test(path)) {
      otherRequests.push(`${req.method} ${path}`);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `mock: no route ${req.method} ${path}`, type: 'invalid_request_error' } }));
      return;
    }
    let body: ChatBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as ChatBody) : undefined;
    } catch {
      body = undefined;
    }
    const request: ChatRequest = { path, raw, body };
    const index = requests.push(request) - 1;
    let reply: ChatReply;
    try {
      reply = script(request, index);
    } catch (error) {
      reply = { status: 500, body: JSON.stringify({ error: { message: String(error), type: 'server_error' } }) };
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.body);
      return;
    }
    if (body?.stream === false) {
      // A non-streamed call (none observed): the same answer as one JSON completion.
      const message =
        'text' in reply
          ? { role: 'assistant', content: reply.text }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: `call_mock_${index}`, type: 'function', function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.arguments) } },
              ],
            };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-mock-${index}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: MOCK_MODEL,
          choices: [{ index: 0, message, finish_reason: 'text' in reply ? 'stop' : 'tool_calls' }],
          usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(streamOf(reply, index));
  };
}

/** Starts the mock on 127.0.0.1 with an ephemeral port. */
export async function startOpenAiMock(script: ChatScript = () => ({ text: 'ok' })): Promise<OpenAiMock> {
  const requests: ChatRequest[] = [];
  const otherRequests: string[] = [];
  const server = await startLoopbackServer(openAiHandler(script, requests, otherRequests));
  return { url: `http://127.0.0.1:${server.port}/v1`, requests, otherRequests, close: server.close };
}
