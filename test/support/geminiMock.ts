// Minimal Gemini API (generativelanguage v1beta) mock for driving the real Gemini CLI in tests.
// With GOOGLE_GEMINI_BASE_URL set and auth type gemini-api-key, Gemini CLI 0.61 sends
//   POST /v1beta/models/<model>:streamGenerateContent?alt=sse   (the turn; SSE `data: <json>` chunks)
//   POST /v1beta/models/<model>:generateContent                 (side calls, e.g. the model router's classifier)
// See docs/notes/claude-gemini-hooks-observed.md.
import { startLoopbackServer, type RequestHandler } from './loopbackServer';

export interface GeminiPart {
  text?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
  functionResponse?: { id?: string; name?: string; response?: { output?: string; error?: string; [key: string]: unknown } };
  [key: string]: unknown;
}

interface GeminiContent {
  role?: string;
  parts?: GeminiPart[];
}

interface GenerateBody {
  contents?: GeminiContent[];
  systemInstruction?: GeminiContent;
  tools?: { functionDeclarations?: { name?: string }[] }[];
  [key: string]: unknown;
}

// `string & {}`: any method name, without the known ones collapsing into plain `string`.
type GeminiMethod = 'streamGenerateContent' | 'generateContent' | 'countTokens' | (string & {});

export interface GeminiRequest {
  method: GeminiMethod;
  model: string;
  path: string;
  raw: string;
  body: GenerateBody | undefined;
}

type GeminiReply = { text: string } | { functionCall: { name: string; args: Record<string, unknown> } } | { status: number; body: string };

/** Answers turn requests (streamGenerateContent); side calls get `sideReply`. */
export type GeminiScript = (request: GeminiRequest, index: number) => GeminiReply;

export interface GeminiMock {
  /** Value for GOOGLE_GEMINI_BASE_URL. */
  url: string;
  /** Every streamGenerateContent request (the agent's turns), in order. */
  requests: GeminiRequest[];
  /** Every other generate/count request (classifier and the like). */
  sideRequests: GeminiRequest[];
  close(): Promise<void>;
}

/** The router's classifier asks for `{"reasoning","model_choice"}` JSON; other side calls tolerate it. */
const SIDE_REPLY_TEXT = JSON.stringify({ reasoning: 'A simple request.', model_choice: 'flash' });

function partText(part: GeminiPart): string {
  if (typeof part.text === 'string') return part.text;
  const response = part.functionResponse?.response;
  if (response) return [response.output, response.error].filter((v) => typeof v === 'string').join('\n');
  return '';
}

/** All text of a request's contents (user, model and function responses), parts joined by newlines. */
export function contentsText(request: GeminiRequest): string {
  return (request.body?.contents ?? []).flatMap((c) => (c.parts ?? []).map(partText)).join('\n');
}

/** The functionResponse of the request's last content, if it is a tool follow-up. */
export function lastFunctionResponse(request: GeminiRequest): GeminiPart['functionResponse'] | undefined {
  const last = request.body?.contents?.at(-1);
  return (last?.parts ?? []).find((p) => p.functionResponse !== undefined)?.functionResponse;
}

/** Text of a request's last user content: this run's prompt and the hook contexts Gemini put before it. */
export function lastUserText(request: GeminiRequest): string {
  const last = (request.body?.contents ?? []).filter((c) => c.role === 'user').at(-1);
  return (last?.parts ?? []).map((p) => p.text ?? '').join('\n');
}

/** A hook's additionalContext as Gemini hands it to the model: `<` and `>` escaped, wrapped in <hook_context>. */
export const asHookContext = (text: string): string => `<hook_context>${text.replace(/</g, '&lt;').replace(/>/g, '&gt;')}</hook_context>`;

/** The ready capture's first line (spec §2 "Context text") as it reaches the model in Gemini's <hook_context>. */
export const GEMINI_READY_LINE = /<hook_context>Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

function candidate(reply: Exclude<GeminiReply, { status: number }>): Record<string, unknown> {
  const part = 'text' in reply ? { text: reply.text } : { functionCall: { name: reply.functionCall.name, args: reply.functionCall.args } };
  return {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 3, totalTokenCount: 13 },
    modelVersion: 'mock-model',
  };
}

/** The mock's answer to one request, recorded in `requests` (its own server's, or the stand-in's: standIn.ts). */
export function geminiHandler(script: GeminiScript, requests: GeminiRequest[], sideRequests: GeminiRequest[]): RequestHandler {
  return (req, raw, res) => {
    const path = req.url ?? '/';
    const match = /\/models\/([^/:?]+):([A-Za-z]+)/.exec(path);
    if (req.method !== 'POST' || match === null) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 404, message: `mock: no route ${req.method} ${path}`, status: 'NOT_FOUND' } }));
      return;
    }
    let body: GenerateBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as GenerateBody) : undefined;
    } catch {
      body = undefined;
    }
    const rec: GeminiRequest = { method: match[2]!, model: match[1]!, path, raw, body };
    if (rec.method === 'countTokens') {
      sideRequests.push(rec);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ totalTokens: 10 }));
      return;
    }
    if (rec.method !== 'streamGenerateContent') {
      sideRequests.push(rec);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(candidate({ text: SIDE_REPLY_TEXT })));
      return;
    }
    const index = requests.push(rec) - 1;
    let reply: GeminiReply;
    try {
      reply = script(rec, index);
    } catch (error) {
      reply = { status: 500, body: JSON.stringify({ error: { code: 500, message: String(error), status: 'INTERNAL' } }) };
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(`data: ${JSON.stringify(candidate(reply))}\r\n\r\n`);
  };
}

/** Start the mock on 127.0.0.1 with an ephemeral port. */
export async function startGeminiMock(script: GeminiScript = () => ({ text: 'ok' })): Promise<GeminiMock> {
  const requests: GeminiRequest[] = [];
  const sideRequests: GeminiRequest[] = [];
  const server = await startLoopbackServer(geminiHandler(script, requests, sideRequests));
  const { port } = server;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sideRequests,
    close: server.close,
  };
}
