// The warm hook server (spec §2 "The warm hook path"; the threat model is in docs/architecture.md
// "Warm hook path"). Starting Node costs a hook about 28 ms before the first line of Turnkeeper runs,
// and agents run a hook on every prompt and tool call. So one process per user stays up for a while,
// answering hooks on a Unix socket in the private TURNKEEPER_HOME, with the stores it opened kept open
// (a team-store hook makes no new server connection). The native client (native/client/hook_client.c),
// which the hook shim runs, sends it what the hook process would have had (arguments, working
// directory, environment, stdin) and prints what it answers; whatever goes wrong there, the client
// runs the ordinary ("cold") hook instead, so this process is an optimisation and never the authority.
//
// Each request is served by the same code the cold hook runs (runHookCommand), with the request's
// environment and directory, never this process's. What the cold hook would take from its process
// instead of its arguments (libraries that read process.env: pg and pgpass read PG*, os.homedir HOME;
// Node reads NODE_*; test fault points arm at start-up) must then be the same here, or the request is
// declined and runs cold. Requests to one kept team store run one at a time: its rows are one
// connection, and a read on it inside another request's open transaction would see that transaction's rows.
//
// Wire (v1): a request is `TKW1`, a u32 body length, then records `tag | u32 length | bytes`: A (an
// argument), C (the directory), V (a variable), T (when it was sent: the client's monotonic clock, in
// ms), I (stdin). An empty body is a ping. A response is `TKR1` then K (taken on: sent first, within
// 1 s of T, or the request is declined), O and E (stdout, stderr) and a terminal X (exit code) or D
// (declined: the client runs cold).
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync, type Stats } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { terminalSafe } from '../core/terminal';
import { hookBusyTimeoutMs, hookServerIdleMs } from '../config/settings';
import { StoreCache } from '../ledger/open';
import type { Authority } from '../store/authority';
import { foreignHomeProblem, turnkeeperHome, type Env } from '../store/location';
import { nativeLauncher } from '../launcher/native';
import { launchBackend } from '../launcher/backends';
import { writeFileAtomic } from '../files/atomicFile';
import { shimPath } from '../agents/shim';
import { runHookCommand } from './hookCommand';
import { EXIT, parse, unknownSubcommand, type Io } from './io';

export const REQUEST_MAGIC = 'TKW1';
export const RESPONSE_MAGIC = 'TKR1';
/** Far above any real request (stdin is cut at 1 MiB + 1 by the client, as by the cold hook). */
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;
/** A client that has not sent its whole request by then is gone or hostile. */
const REQUEST_READ_MS = 5000;
const TICK_MS = 1000;

/** `<home>/run`: the socket, the pid file and the failure stamp; 0700, ours. */
export const runDirOf = (env: Env): string => join(turnkeeperHome(env), 'run');
export const socketPathOf = (env: Env): string => join(runDirOf(env), 'hook.sock');
const pidPathOf = (env: Env): string => join(runDirOf(env), 'server.pid');
/** Left by a server that could not start: the client starts no other for a minute (hook_client.c). */
const failedPathOf = (env: Env): string => join(runDirOf(env), 'failed');

/**
 * Variables that reach a hook through its process, not through runHookCommand's env (see the top).
 * USER (USERNAME on Windows) is pg's default role, read from the process's environment when pg loads:
 * a request of another user name would be answered with the server's role.
 */
const PROCESS_BOUND = /^(PG[A-Z_]*|HOME|USER|USERNAME|NODE_[A-Z_]*|TURNKEEPER_TEST_[A-Z_]*)$/;

export interface WarmRequest {
  readonly args: string[];
  readonly cwd: string | undefined;
  readonly env: Record<string, string>;
  readonly stdin: Buffer;
  /** When the client sent it (its CLOCK_MONOTONIC, in ms; record T): the client waits ACK_WAIT_MS for the server to take it on. */
  readonly sentAt?: number | undefined;
}

/**
 * A request is taken on (record K) only this soon after the client sent it; the client waits for K
 * half a second longer before it runs the cold hook (hook_client.c ACK_WAIT_MS), so a request the
 * client gave up on is never acted on here: a server that was stopped, or busy, declines it and the
 * cold hook's answer is the only one.
 */
const TAKE_ON_WITHIN_MS = 1000;
/** A hook's deadline after its client sent the request (the cold hook's HOOK_DEADLINE_MS, from its payload). */
const REQUEST_DEADLINE_MS = 14_000;

/** CLOCK_MONOTONIC in ms, the clock of the client's record T (Node's hrtime is CLOCK_MONOTONIC on Linux). */
const monotonicMs = (): number => Number(process.hrtime.bigint() / 1_000_000n);

export class WarmProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WarmProtocolError';
  }
}

class ProbeEnded extends Error {}

/** A request with an empty body: `hook-server status` asks whether the server answers; it gets record K. */
const PING = Symbol('ping');

/** The body of a request (after magic and length): records `tag | u32 length | bytes` (the client's framing). */
export function parseRequest(body: Buffer): WarmRequest {
  const args: string[] = [];
  const env: Record<string, string> = Object.create(null) as Record<string, string>;
  let cwd: string | undefined;
  let stdin: Buffer | undefined;
  let sentAt: number | undefined;
  let at = 0;
  while (at < body.length) {
    if (at + 5 > body.length) throw new WarmProtocolError('a record header is cut short');
    const tag = String.fromCharCode(body[at]!);
    const length = body.readUInt32LE(at + 1);
    const start = at + 5;
    if (start + length > body.length) throw new WarmProtocolError(`record ${tag} runs past the request`);
    const bytes = body.subarray(start, start + length);
    at = start + length;
    if (tag === 'A') args.push(bytes.toString('utf8'));
    else if (tag === 'C') cwd = bytes.toString('utf8');
    else if (tag === 'V') {
      const text = bytes.toString('utf8');
      const equals = text.indexOf('=');
      // An entry without `=` is no variable (execve passes it on, getenv never finds it).
      if (equals > 0 && !(text.slice(0, equals) in env)) env[text.slice(0, equals)] = text.slice(equals + 1);
    } else if (tag === 'T') {
      const text = bytes.toString('latin1');
      if (!/^\d{1,15}$/.test(text) || sentAt !== undefined) throw new WarmProtocolError('a bad T record');
      sentAt = Number(text);
    } else if (tag === 'I') {
      if (stdin !== undefined) throw new WarmProtocolError('two stdin records');
      stdin = Buffer.from(bytes);
    } else throw new WarmProtocolError(`unknown record tag ${JSON.stringify(tag)}`);
  }
  if (stdin === undefined) throw new WarmProtocolError('no stdin record');
  return { args, cwd, env, stdin, sentAt };
}

function record(tag: string, bytes: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(tag, 0, 'latin1');
  header.writeUInt32LE(bytes.length, 1);
  return Buffer.concat([header, bytes]);
}

export function encodeAnswer(stdout: readonly string[], stderr: readonly string[], code: number): Buffer {
  const exit = Buffer.alloc(4);
  exit.writeUInt32LE(code >>> 0, 0);
  return Buffer.concat([
    Buffer.from(RESPONSE_MAGIC, 'latin1'),
    ...stdout.map((text) => record('O', Buffer.from(text, 'utf8'))),
    ...stderr.map((text) => record('E', Buffer.from(text, 'utf8'))),
    record('X', exit),
  ]);
}

/** Record K: the server has taken the request on (sent only to a client that sent record T). */
const TAKEN_ON = Buffer.concat([Buffer.from(RESPONSE_MAGIC, 'latin1'), record('K', Buffer.alloc(0))]);

export const encodeDecline = (reason: string): Buffer => Buffer.concat([Buffer.from(RESPONSE_MAGIC, 'latin1'), record('D', Buffer.from(reason, 'utf8'))]);

/** Why this process cannot answer as the cold hook would for this environment, or undefined. */
export function declineReason(request: Env, own: Env): string | undefined {
  if (turnkeeperHome(request) !== turnkeeperHome(own)) return 'the request names another TURNKEEPER_HOME';
  for (const name of new Set([...Object.keys(request), ...Object.keys(own)])) {
    if (PROCESS_BOUND.test(name) && request[name] !== own[name]) return `${name} differs from the server's (it reaches a hook through its process)`;
  }
  return undefined;
}

/** What identifies the code this server runs and the shim that chose it: a change means an upgrade or a reinstall. */
function installationOf(env: Env): string {
  const identity = (path: string): string => {
    const stat = statSync(path, { throwIfNoEntry: false });
    return stat === undefined ? `${path}:-` : `${path}:${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  };
  // The bundles beside this one (dist/cli.js, hook.js, turnkeeper.js) and the shim the agents run.
  return [join(__dirname, 'cli.js'), join(__dirname, 'hook.js'), __filename, shimPath(turnkeeperHome(env))].map(identity).join('|');
}

function sameFile(a: Stats | undefined, b: Stats | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/** The run directory, made or checked: a directory of ours that no one else may enter. */
function privateRunDir(env: Env): string {
  const dir = runDirOf(env);
  mkdirSync(dir, { recursive: false, mode: 0o700 });
  return dir;
}

function checkRunDir(dir: string): string | undefined {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  const uid = process.geteuid?.();
  if (stat === undefined || !stat.isDirectory()) return `${dir} is not a directory`;
  if (stat.uid !== uid) return `${dir} is owned by uid ${stat.uid}, not by this user (uid ${uid})`;
  if ((stat.mode & 0o077) !== 0) return `${dir} is open to others (mode ${(stat.mode & 0o777).toString(8)}): chmod 700 '${dir}'`;
  return undefined;
}

/**
 * Whether a server on `path` answers a ping (record K) within a second. A stopped or wedged server
 * still has its socket, and the kernel still accepts connections on it: only an answer tells.
 */
function pings(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    let got = Buffer.alloc(0);
    const done = (live: boolean): void => {
      socket.destroy();
      resolve(live);
    };
    socket.once('connect', () => socket.write(Buffer.concat([Buffer.from(REQUEST_MAGIC, 'latin1'), Buffer.alloc(4)])));
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= TAKEN_ON.length) done(got.subarray(0, TAKEN_ON.length).equals(TAKEN_ON));
    });
    socket.once('error', () => done(false));
    socket.once('end', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

/** Whether a live server answers on the socket (a connect that succeeds), within a short bound. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    const done = (live: boolean): void => {
      socket.destroy();
      resolve(live);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

interface ServeOptions {
  readonly idleMs: number;
  readonly log: (line: string) => void;
}

/**
 * Serves until idle for `idleMs`, SIGTERM, an upgrade, or the socket taken away (removed, or replaced
 * by a newer server). Returns the exit code: 0 when another server already answers or after a clean end.
 */
export async function serveHooks(env: Env, options: ServeOptions): Promise<number> {
  const home = turnkeeperHome(env);
  const homeStat = statSync(home, { throwIfNoEntry: false });
  if (homeStat === undefined || !homeStat.isDirectory()) {
    // Nothing to serve yet, and a hook server creates no home (the first claim does).
    options.log(`hook server: no TURNKEEPER_HOME at ${home}; not started`);
    return EXIT.refused;
  }
  const foreign = foreignHomeProblem(env);
  if (foreign) {
    options.log(`hook server: ${foreign}; not started`);
    return EXIT.refused;
  }
  const fail = (why: string): number => {
    options.log(`hook server: ${why}; not started`);
    try {
      writeFileAtomic(failedPathOf(env), `${why}\n`, 0o600);
    } catch {
      // The stamp only spares the next hooks a start that would fail again.
    }
    return EXIT.refused;
  };
  let dir: string;
  try {
    dir = privateRunDir(env);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return fail(`cannot create ${runDirOf(env)}: ${(error as Error).message}`);
    dir = runDirOf(env);
  }
  const problem = checkRunDir(dir);
  if (problem) {
    options.log(`hook server: ${problem}; not started`);
    return EXIT.refused;
  }
  let peerUid: (fd: number) => number | null;
  try {
    const addon = nativeLauncher();
    peerUid = (fd) => addon.peerUid(fd);
  } catch (error) {
    // Fail closed on who may talk to it: without the kernel's word on each peer, no server.
    return fail(`the native addon that checks each peer's uid is unavailable: ${(error as Error).message}`);
  }
  const path = socketPathOf(env);
  if (await answers(path)) return EXIT.done; // another server is up: it serves
  const existing = lstatSync(path, { throwIfNoEntry: false });
  if (existing !== undefined) {
    if (!existing.isSocket()) return fail(`${path} exists and is not a socket`);
    rmSync(path, { force: true }); // a dead server's
  }

  const installation = installationOf(env);
  const stores = new StoreCache();
  const queues = new Map<string, Promise<unknown>>();
  let inFlight = 0;
  let lastRequest = Date.now();
  let ending = false;

  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    // The kernel's record of who connected (SO_PEERCRED); nothing the peer sends can change it.
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    const uid = fd === undefined ? null : peerUid(fd);
    if (uid === null || uid !== process.geteuid?.()) {
      options.log(`hook server: refused a connection from uid ${uid ?? 'unknown'}`);
      socket.destroy();
      return;
    }
    inFlight += 1;
    lastRequest = Date.now();
    void readRequest(socket)
      .then(async (request) => socket.end(request === PING ? TAKEN_ON : await answer(request, socket)))
      .catch((error: unknown) => {
        // A connect that sends nothing is a liveness probe (`hook-server status`, a starting server).
        if (!(error instanceof ProbeEnded)) options.log(`hook server: ${(error as Error).message}`);
        socket.destroy();
      })
      .finally(() => {
        inFlight -= 1;
        lastRequest = Date.now();
      });
  });

  async function answer(request: WarmRequest, socket: Socket): Promise<Buffer> {
    if (ending) return encodeDecline('the hook server is ending');
    if (installationOf(env) !== installation) {
      // Upgraded or reinstalled: the new code answers from now on, cold until its own server starts.
      void end('turnkeeper was upgraded or reinstalled');
      return encodeDecline('turnkeeper was upgraded or reinstalled since the hook server started');
    }
    const declined = declineReason(request.env, env);
    if (declined !== undefined) {
      options.log(`hook server: declined: ${declined}`);
      return encodeDecline(declined);
    }
    let key: string | undefined;
    const busyTimeoutMs = hookBusyTimeoutMs(request.env);
    try {
      key = stores.keyOf(request.env, { create: false, busyTimeoutMs });
    } catch {
      key = undefined; // no selection: the hook says why, with no store to share
    }
    // Taken on only while its client still waits for that (TAKE_ON_WITHIN_MS), and then bound by the
    // hook's deadline: no write of it commits after the agent has gone on without its answer.
    let deadline: number | undefined;
    if (request.sentAt !== undefined) {
      const waited = monotonicMs() - request.sentAt;
      if (waited > TAKE_ON_WITHIN_MS) {
        options.log(`hook server: declined a request sent ${waited} ms ago`);
        return encodeDecline(`the request waited ${waited} ms for the hook server, which takes one on within ${TAKE_ON_WITHIN_MS} ms`);
      }
      socket.write(TAKEN_ON);
      deadline = performance.now() + REQUEST_DEADLINE_MS - waited;
    }
    const rest = (response: Buffer): Buffer => (deadline === undefined ? response : response.subarray(RESPONSE_MAGIC.length));
    // A request on rows it opens itself runs at once, as cold hook processes run side by side.
    if (key === undefined) return rest(await serveOne(request, busyTimeoutMs, deadline));
    const previous = queues.get(key) ?? Promise.resolve();
    const run = previous.then(async () => rest(await serveOne(request, busyTimeoutMs, deadline)));
    const settled = run.catch(() => undefined);
    queues.set(key, settled);
    void settled.then(() => {
      if (queues.get(key) === settled) queues.delete(key);
    });
    return run;
  }

  async function serveOne(request: WarmRequest, busyTimeoutMs: number, deadline: number | undefined): Promise<Buffer> {
    const started = performance.now();
    if (env.TURNKEEPER_DEBUG) options.log(`hook server: serving hook ${request.args.join(' ')}`);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const io: Io = {
      env: request.env,
      cwd: request.cwd ?? '/',
      out: (text) => stdout.push(text),
      // As hookMain.ts does: stdout is the agent's JSON, stderr may reach a terminal.
      err: (text) => stderr.push(terminalSafe(text)),
      readStdin: () => Promise.resolve(request.stdin),
    };
    const opened: Authority[] = [];
    try {
      const code = await runHookCommand(request.args, io, {
        openStore: async (create) => {
          const authority = await stores.authority(request.env, { create, busyTimeoutMs, deadline });
          if (authority) opened.push(authority);
          return authority;
        },
      });
      return encodeAnswer(stdout, stderr, code);
    } finally {
      for (const authority of opened) stores.release(authority);
      // TURNKEEPER_DEBUG in the server's own environment: one line per request (tests count them).
      if (env.TURNKEEPER_DEBUG) options.log(`hook server: served hook ${request.args.join(' ')} in ${(performance.now() - started).toFixed(1)} ms`);
    }
  }

  function readRequest(socket: Socket): Promise<WarmRequest | typeof PING> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let expected: number | undefined;
      const timer = setTimeout(() => reject(new Error('a client sent no whole request in time')), REQUEST_READ_MS);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        reject(error);
      };
      socket.on('error', fail);
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (expected === undefined && size >= 8) {
          const head = Buffer.concat(chunks);
          if (head.toString('latin1', 0, 4) !== REQUEST_MAGIC) return fail(new WarmProtocolError('not a warm hook request'));
          expected = head.readUInt32LE(4);
          if (expected > MAX_REQUEST_BYTES) return fail(new WarmProtocolError(`a request of ${expected} bytes`));
          if (expected === 0) {
            clearTimeout(timer);
            socket.removeAllListeners('data');
            return resolve(PING);
          }
        }
        if (expected !== undefined && size >= 8 + expected) {
          clearTimeout(timer);
          socket.removeAllListeners('data');
          try {
            resolve(parseRequest(Buffer.concat(chunks).subarray(8, 8 + expected)));
          } catch (error) {
            reject(error);
          }
        }
      });
      socket.on('end', () => {
        if (size === 0) fail(new ProbeEnded());
        else if (expected === undefined || size < 8 + expected) fail(new WarmProtocolError('the client ended before its request did'));
      });
    });
  }

  let ended: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => (ended = resolve));

  async function end(why: string): Promise<void> {
    if (ending) return;
    ending = true;
    options.log(`hook server: ending: ${why}`);
    clearInterval(ticker);
    server.close();
    // The socket and pid file go only while they are still ours (a newer server may have taken the name).
    if (sameFile(lstatSync(path, { throwIfNoEntry: false }), ours)) rmSync(path, { force: true });
    try {
      if (readFileSync(pidPathOf(env), 'utf8').trim() === String(process.pid)) rmSync(pidPathOf(env), { force: true });
    } catch {
      // No pid file: nothing to remove.
    }
    while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    stores.closeAll();
    ended(EXIT.done);
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
  } catch (error) {
    // Another server bound the name between our check and our listen: it serves.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') return EXIT.done;
    return fail(`cannot listen on ${path}: ${(error as Error).message}`);
  }
  // Declared here, used by end() above: no connection is served (and so no end() runs) before this line.
  const ours = lstatSync(path, { throwIfNoEntry: false });
  rmSync(failedPathOf(env), { force: true });
  writePidFile(pidPathOf(env));
  options.log(`hook server: serving on ${path} (pid ${process.pid}, idle exit after ${options.idleMs} ms)`);
  const ticker = setInterval(
    () => {
      if (!sameFile(lstatSync(path, { throwIfNoEntry: false }), ours)) void end(`${path} was removed or taken over`);
      else if (inFlight === 0 && Date.now() - lastRequest >= options.idleMs) void end('idle');
    },
    Math.min(TICK_MS, options.idleMs),
  );
  process.once('SIGTERM', () => void end('SIGTERM'));
  process.once('SIGINT', () => void end('SIGINT'));
  return finished;
}

function writePidFile(path: string): void {
  const fd = openSync(`${path}.${process.pid}`, 'w', 0o600);
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  // Renamed into place: a reader never sees half a pid.
  process.getBuiltinModule('node:fs').renameSync(`${path}.${process.pid}`, path);
}

/** The pid in the pid file when that process is a running hook server, else undefined. */
function livePid(env: Env): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(pidPathOf(env), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  // The pid file is in our private run directory; the process behind it must still be a hook server
  // (a pid the kernel gave to another program since is not signalled).
  const argv = launchBackend()
    .processes()
    ?.find((process) => process.pid === pid)?.argv;
  return argv?.includes('hook-server') && argv.includes('serve') ? pid : undefined;
}

/** What `hook-server status` and `doctor` say of this home's warm hook server. */
export interface HookServerState {
  /** Answers a ping within a second. */
  readonly running: boolean;
  /** Its socket accepts connections (a stopped or wedged server's still does). */
  readonly listening: boolean;
  /** Its process is stopped (SIGSTOP, a debugger). */
  readonly stopped: boolean;
  readonly pid: number | null;
  readonly socket: string;
}

export async function hookServerState(env: Env): Promise<HookServerState> {
  const socket = socketPathOf(env);
  const pid = livePid(env);
  const listening = await answers(socket);
  const running = listening && (await pings(socket));
  const stopped = pid !== undefined && launchBackend().processStopped(pid) === true;
  return { running, listening, stopped, pid: pid ?? null, socket };
}

/** Listening but silent is a problem: each hook waits 1.5 s for the server, then runs cold. */
export function hookServerSentence(state: HookServerState): string {
  const { pid, socket } = state;
  if (state.running) return `hook server: running${pid ? ` (pid ${pid})` : ''} on ${socket}`;
  if (!state.listening) return `hook server: not running (hooks start it on demand; ${socket})`;
  return (
    `hook server: not answering${pid ? ` (pid ${pid}, ${state.stopped ? 'stopped' : 'busy or wedged'})` : ''} on ${socket}: each hook waits 1.5 s for it, then runs cold.\n` +
    `Recover: ${state.stopped && pid ? `kill -CONT ${pid}   # or: ` : ''}turnkeeper hook-server stop`
  );
}

const USAGE = 'turnkeeper hook-server serve|status|stop [--json]';

/** `turnkeeper hook-server serve|status|stop`. */
export async function hookServerCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, { min: 1, max: 1, usage: USAGE });
  const action = positionals[0];
  if (action === 'serve') return serveHooks(io.env, { idleMs: hookServerIdleMs(io.env), log: (line) => io.err(`${line}\n`) });
  if (action === 'status') {
    const state = await hookServerState(io.env);
    if (values.json) io.out(`${JSON.stringify({ ok: true, ...state })}\n`);
    else io.out(`${hookServerSentence(state)}\n`);
    return EXIT.done;
  }
  if (action === 'stop') {
    const pid = livePid(io.env);
    if (pid !== undefined) process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 5000;
    while (pid !== undefined && Date.now() < deadline && livePid(io.env) === pid) await new Promise((resolve) => setTimeout(resolve, 20));
    if (values.json) io.out(`${JSON.stringify({ ok: true, stopped: pid ?? null })}\n`);
    else io.out(pid === undefined ? 'hook server: not running\n' : `hook server: stopped (pid ${pid})\n`);
    return EXIT.done;
  }
  throw unknownSubcommand('hook-server', action, ['serve', 'status', 'stop'], USAGE);
}
