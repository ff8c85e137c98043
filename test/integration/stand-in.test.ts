// The stand-in model a person runs (`npm run stand-in`): one port answers each agent's model API, and
// each answer says what of Turnkeeper's context reached the model. In-process: the server is the
// tests' own handlers on one port (test/support/standIn.ts); the agents against it are the e2e tests'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandIn, type StandIn } from '../support/standIn';

const CONTEXT = 'Turnkeeper: Todo fix-login · capture cap_0123456789abcdef01234567 · epoch 1';
let standIn: StandIn;
const heard: string[] = [];

beforeAll(async () => {
  standIn = await startStandIn({ log: (line) => heard.push(line) });
});
afterAll(() => standIn?.close());

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${standIn.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

describe('the stand-in model', () => {
  // Each API as its agent sends it, the context where that agent puts it.
  const requests: [string, string, unknown][] = [
    [
      'Codex (Responses)',
      '/v1/responses',
      { model: 'mock-model', input: [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: `${CONTEXT}\nmore` }] }] },
    ],
    ['Qwen Code (Chat Completions)', '/v1/chat/completions', { model: 'mock-model', messages: [{ role: 'system', content: `hook said:\n${CONTEXT}` }] }],
    [
      'Claude Code (Messages)',
      '/v1/messages',
      { model: 'mock-model', messages: [{ role: 'user', content: [{ type: 'text', text: `<system-reminder>${CONTEXT}</system-reminder>` }] }] },
    ],
    [
      'Gemini CLI (generateContent)',
      '/v1beta/models/mock-model:streamGenerateContent?alt=sse',
      { contents: [{ role: 'user', parts: [{ text: `<hook_context>${CONTEXT}</hook_context>` }] }] },
    ],
  ];

  it.each(requests)('%s: answered on one port, saying the context that reached it', async (_agent, path, body) => {
    const answer = await post(path, body);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`Turnkeeper's context reached me: ${CONTEXT}`);
  });

  it('says so when no context came (control: the same request with it names it), and logs each answer', async () => {
    const without = await post('/v1/messages', { model: 'mock-model', messages: [{ role: 'user', content: 'hello' }] });
    expect(without.text).toContain('no Turnkeeper context reached me');
    expect(heard.at(-1)).toBe('messages: Stand-in model: no Turnkeeper context reached me in this request.');
    const withIt = await post('/v1/messages', { model: 'mock-model', messages: [{ role: 'user', content: CONTEXT }] });
    expect(withIt.text).toContain(CONTEXT);
  });

  it('answers a refusal the agent passed on as well: its reason code and first line', async () => {
    const refusal = 'Turnkeeper [lease_held]: Todo fix-login is leased to codex:other (epoch 1)';
    const answer = await post('/v1/chat/completions', { model: 'mock-model', stream: false, messages: [{ role: 'system', content: refusal }] });
    expect(JSON.parse(answer.text)).toMatchObject({ choices: [{ message: { content: `Stand-in model: Turnkeeper's context reached me: ${refusal}` } }] });
  });

  it('refuses a path no agent uses with 404', async () => {
    expect((await post('/v2/unknown', {})).status).toBe(404);
  });
});
