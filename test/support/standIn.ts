// The stand-in model on its own, for a person: one loopback server that answers every agent's model API
// (OpenAI Responses for Codex, OpenAI Chat Completions for Qwen Code, OpenCode and the Copilot CLI's
// own provider, Anthropic Messages for Claude Code, Gemini's generateContent), through the same
// handlers the tests' stand-ins use. Each answer says what of Turnkeeper reached the model: the first
// line of the injected context, or that none came. `npm run stand-in -- --port 7777` starts it
// (scripts/stand-in.ts); docs/testing.md says how to point each agent at it.
import { anthropicHandler, type AnthropicRequest } from './anthropicMock';
import { geminiHandler, type GeminiRequest } from './geminiMock';
import { startLoopbackServer, type RequestHandler } from './loopbackServer';
import { responsesHandler, textReply, type RecordedRequest } from './mockModelServer';
import { openAiHandler, type ChatRequest } from './openaiMock';

type StandInApi = 'responses' | 'chat' | 'messages' | 'gemini';

export interface StandIn {
  readonly port: number;
  /** The base URL each agent is given (docs/testing.md): `${base}/v1` for the OpenAI APIs, `base` for the others. */
  readonly base: string;
  close(): Promise<void>;
}

/**
 * What the stand-in says to a request whose body is `raw`: Turnkeeper's context as it reached the model
 * (its first line, found in the request's JSON, where the agent put it), or that none did.
 */
function standInReply(raw: string): string {
  let text = raw;
  try {
    // The JSON text's own escapes (\n, \u00b7) undone: the context is matched as the model reads it.
    text = JSON.stringify(JSON.parse(raw), null, 0).replace(/\\n/g, '\n');
  } catch {
    // not JSON: searched as sent
  }
  const line = /Turnkeeper(?: \[[a-z_]+\])?: [^\n"\\]*/.exec(text)?.[0];
  return line ? `Stand-in model: Turnkeeper's context reached me: ${line}` : 'Stand-in model: no Turnkeeper context reached me in this request.';
}

/** The API a request is for, by its path (each agent's), or undefined. */
function standInApi(method: string, path: string): StandInApi | undefined {
  const pathname = path.split('?')[0] ?? path;
  if (pathname.endsWith('/responses')) return 'responses';
  if (/\/chat\/completions\/?$/.test(pathname) || (method === 'GET' && /^\/v1\/models\/?$/.test(pathname))) return 'chat';
  if (/^\/v1\/messages(\/count_tokens)?\/?$/.test(pathname)) return 'messages';
  if (/\/models\/[^/:?]+:[A-Za-z]+$/.test(pathname)) return 'gemini';
  return undefined;
}

export async function startStandIn(options: { port?: number; log?: (line: string) => void } = {}): Promise<StandIn> {
  const log = options.log ?? (() => undefined);
  const said = (api: StandInApi, raw: string): string => {
    const reply = standInReply(raw);
    log(`${api}: ${reply}`);
    return reply;
  };
  const handlers: Record<StandInApi, RequestHandler> = {
    responses: responsesHandler((request) => textReply(said('responses', request.raw)), [] as RecordedRequest[]),
    chat: openAiHandler((request) => ({ text: said('chat', request.raw) }), [] as ChatRequest[], []),
    messages: anthropicHandler((request) => ({ text: said('messages', request.raw) }), [] as AnthropicRequest[]),
    gemini: geminiHandler((request) => ({ text: said('gemini', request.raw) }), [] as GeminiRequest[], []),
  };
  const server = await startLoopbackServer((req, raw, res) => {
    const api = standInApi(req.method ?? '', req.url ?? '/');
    // Probes (HEAD /, GET /api/hello): answered as the Anthropic stand-in answers them, harmlessly.
    (api ? handlers[api] : handlers.messages)(req, raw, res);
  }, options.port ?? 0);
  return { port: server.port, base: `http://127.0.0.1:${server.port}`, close: server.close };
}
