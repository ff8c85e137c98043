// `npm run stand-in -- [--port 7777]`: the stand-in model on its own (test/support/standIn.ts), so a
// person can try every agent with Turnkeeper without an account. Loopback only; Ctrl-C ends it.
// docs/testing.md ("The stand-in model") says how to point each agent at it.
import { parseArgs } from 'node:util';
import { startStandIn } from '../test/support/standIn';

const { values } = parseArgs({ options: { port: { type: 'string', default: '7777' } }, strict: true });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`stand-in: --port must be a port number, not ${JSON.stringify(values.port)}\n`);
  process.exit(2);
}
const standIn = await startStandIn({ port, log: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`) });
process.stdout.write(
  [
    `stand-in model on ${standIn.base} (Ctrl-C to stop); give an agent:`,
    `  Codex        a model provider with base_url = "${standIn.base}/v1", wire_api = "responses"`,
    `  Claude Code  ANTHROPIC_BASE_URL=${standIn.base} ANTHROPIC_API_KEY=dummy`,
    `  Gemini CLI   GOOGLE_GEMINI_BASE_URL=${standIn.base} GEMINI_API_KEY=dummy`,
    `  Qwen Code    OPENAI_BASE_URL=${standIn.base}/v1 OPENAI_API_KEY=dummy OPENAI_MODEL=mock-model`,
    '',
  ].join('\n'),
);
const stop = () => void standIn.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
