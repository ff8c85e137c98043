// A stand-in for dist/cli.js in the warm client's tests (test/integration/warm-client.test.ts): the
// client runs it as `<runtime> fakeWarm.mjs hook ...` (the cold hook) and as `... hook-server serve`
// (the server it starts). Both answer with JSON that says which path ran and exactly what arrived,
// so a test can tell cold from warm and compare arguments, cwd, environment and stdin byte for byte.
//
// The server speaks warm-protocol v1 on $TURNKEEPER_HOME/run/hook.sock (or $FAKE_SOCKET) and behaves
// as the request's FAKE_WARM says: `answer` (default), `decline`, `die` (reads the request, sends a
// complete O record, then closes without a terminal record), `whole` (the same O record, then an X:
// the control of `die`) or `hang` (reads it and never answers). Once listening it creates
// `<socket>.ready`, the test's signal that a connect will be accepted (bind and listen are two steps).
// Every process of a test carries the test's FAKE_TAG, which is how the test finds and ends them.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** The variables a test sets to see them arrive; the full environment is compared in warm answers only. */
const picked = (entries) => entries.filter(([name]) => name.startsWith('FAKE_') || name === 'TURNKEEPER_WARM');

function cold() {
  const input = readFileSync(0);
  const report = {
    path: 'cold',
    args: process.argv.slice(3).map((arg) => Buffer.from(arg).toString('base64')),
    cwd: process.cwd(),
    stdinLength: input.length,
    stdinSha256: sha256(input),
    env: Object.fromEntries(picked(Object.entries(process.env))),
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exitCode = Number(process.env.FAKE_COLD_EXIT ?? 0);
}

const u32 = (value) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
};
const record = (tag, bytes) => Buffer.concat([Buffer.from(tag, 'latin1'), u32(bytes.length), bytes]);

/** The records of a complete request, or undefined while more bytes are due. Throws on a malformed one. */
function parseRequest(data) {
  if (data.length < 8) return undefined;
  if (data.subarray(0, 4).toString('latin1') !== 'TKW1') throw new Error('bad magic');
  const length = data.readUInt32LE(4);
  if (data.length < 8 + length) return undefined;
  const request = { args: [], cwd: undefined, env: [], stdin: undefined, tags: '' };
  for (let at = 8; at < 8 + length;) {
    const tag = String.fromCharCode(data[at]);
    const size = data.readUInt32LE(at + 1);
    const bytes = data.subarray(at + 5, at + 5 + size);
    at += 5 + size;
    request.tags += tag;
    if (tag === 'A') request.args.push(bytes.toString('base64'));
    else if (tag === 'C') request.cwd = bytes.toString('utf8');
    else if (tag === 'V') request.env.push(bytes.toString('base64'));
    else if (tag === 'I') request.stdin = bytes;
    else if (tag === 'T') request.sentAt = Number(bytes.toString('latin1'));
    else throw new Error(`unknown tag ${tag}`);
  }
  return request;
}

/** A fixed stderr with bytes that are not text, so the test can check it passes unchanged. */
const WARM_STDERR = Buffer.concat([Buffer.from([0, 0xff, 0x1b, 0x0a]), Buffer.from('warm stderr\n')]);

function answer(socket, request) {
  const envText = request.env.map((entry) => Buffer.from(entry, 'base64').toString('utf8'));
  const mode = envText.find((entry) => entry.startsWith('FAKE_WARM='))?.slice('FAKE_WARM='.length) ?? 'answer';
  // `hang`: takes nothing on (a stopped server); `hang-taken`: takes the request on, then never answers.
  if (mode === 'hang') return;
  if (mode === 'hang-taken') {
    socket.write(Buffer.concat([Buffer.from('TKR1'), record('K', Buffer.alloc(0))]));
    return;
  }
  if (mode === 'decline') {
    socket.end(Buffer.concat([Buffer.from('TKR1'), record('D', Buffer.from('the fake server declines this one'))]));
    return;
  }
  if (mode === 'die' || mode === 'whole') {
    // A whole O record the client must not print when no terminal record follows (die).
    const records = [Buffer.from('TKR1'), record('K', Buffer.alloc(0)), record('O', Buffer.from('PARTIAL-FROM-A-DEAD-SERVER\n'))];
    if (mode === 'whole') records.push(record('X', u32(0)));
    socket.end(Buffer.concat(records));
    return;
  }
  const report = Buffer.from(
    `${JSON.stringify({
      path: 'warm',
      serverPid: process.pid,
      tags: request.tags,
      args: request.args,
      cwd: request.cwd,
      env: request.env,
      stdinLength: request.stdin.length,
      stdinSha256: sha256(request.stdin),
    })}\n`,
  );
  const exit = Number(envText.find((entry) => entry.startsWith('FAKE_WARM_EXIT='))?.slice('FAKE_WARM_EXIT='.length) ?? 3);
  // stdout and stderr in several records each, interleaved: the client must join them in order.
  const third = Math.floor(report.length / 3);
  socket.end(
    Buffer.concat([
      Buffer.from('TKR1'),
      // Taken on (record K), as the real server answers a client that sent the request's time (T).
      record('K', Buffer.alloc(0)),
      record('O', report.subarray(0, third)),
      record('E', WARM_STDERR.subarray(0, 3)),
      record('O', Buffer.alloc(0)),
      record('O', report.subarray(third)),
      record('E', WARM_STDERR.subarray(3)),
      record('X', u32(exit)),
    ]),
  );
}

function serve() {
  const path = process.env.FAKE_SOCKET ?? join(process.env.TURNKEEPER_HOME, 'run', 'hook.sock');
  if (!process.env.FAKE_SOCKET) {
    const run = join(process.env.TURNKEEPER_HOME, 'run');
    mkdirSync(run, { recursive: true, mode: 0o700 });
    chmodSync(run, 0o700);
  }
  rmSync(path, { force: true });
  rmSync(`${path}.ready`, { force: true });
  // A leaked server ends itself: no test runs this long, and the test kills it by its tag anyway.
  const idle = setTimeout(() => process.exit(0), 60_000);
  const server = createServer((socket) => {
    idle.refresh();
    let data = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      let request;
      try {
        request = parseRequest(data);
      } catch {
        socket.destroy();
        return;
      }
      if (request) {
        socket.removeAllListeners('data');
        answer(socket, request);
      }
    });
  });
  server.listen(path, () => writeFileSync(`${path}.ready`, `${process.pid}\n`));
}

const [, , command, sub] = process.argv;
if (command === 'hook') cold();
else if (command === 'hook-server' && sub === 'serve') serve();
else {
  process.stderr.write(`fakeWarm: not a command it fakes: ${process.argv.slice(2).join(' ')}\n`);
  process.exitCode = 2;
}
