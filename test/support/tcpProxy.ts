// A loopback TCP proxy between a PostgreSQL client and the server, for fault tests.
//
//   const proxy = await startProxy(pgServer.port);   // connect the product to 127.0.0.1:proxy.port
//   proxy.mode('stall');                             // the network stops; sockets stay open
//   proxy.mode({ dropReplyAfter: 'COMMIT' });         // the next COMMIT commits, its client never hears
//   proxy.mode({ cutBefore: 'COMMIT' });              // the next COMMIT never reaches the server
//
// Modes, switched at any time for every connection:
// - 'forward' (default): bytes pass both ways.
// - 'stall': nothing passes either way and nothing is closed: both sockets stop being read, so the
//   bytes wait in the kernel (and TCP flow control pushes back), as on a network that stops
//   answering. A connection accepted while stalled is not passed on to the server. Back to
//   'forward', the waiting bytes flow again: a stall delays, it does not lose.
// - { dropReplyAfter }: the first statement (a simple Query, or the Parse of the extended protocol)
//   the pattern matches is passed to the server; from there on the server's replies to that
//   connection are swallowed, and once the server's ReadyForQuery for that statement has arrived
//   (the statement is finished on the server: a COMMIT has committed, or failed, e.g. on a deferred
//   constraint), the client socket is destroyed and the server connection closed. So when the client sees its connection error, the server has already committed: the
//   outcome is decided, only the client does not know it. One-shot: the mode is back to 'forward'
//   as soon as one statement matched; `drops` counts the connections cut this way.
//   A string pattern matches a statement equal to it (case, surrounding blanks and a trailing ';'
//   ignored), so 'COMMIT' does not match `BEGIN ISOLATION LEVEL READ COMMITTED`; a RegExp is tested
//   against the statement text.
// - { cutBefore }: the first statement the pattern matches (as dropReplyAfter's) is never passed on:
//   both sockets are destroyed instead, so the server sees its client gone in the middle of the
//   transaction and rolls it back, and the client sees its connection error as after a lost reply.
//   One-shot, as dropReplyAfter; `cuts` counts them.
// - { slowStartup: ms }: every connection's start-up (the server's answers up to its first
//   ReadyForQuery: the authentication exchanges and the backend's start) reaches the client late, each
//   chunk `ms` after the one before, in order, as from a server on busy cores; after that, bytes pass
//   as in 'forward'. Connections opened while the mode lasts are slowed.
// - { slowReplies: ms }: every chunk the server sends on every connection, open or new, reaches the
//   client `ms` later, in order: a client that gets its turn on the CPU `ms` after each answer, as on
//   a host busy with a burst. Back to 'forward', chunks already delayed keep their order.
//
// Wire protocol, as far as needed: the client's first message is untyped (int32 length, int32
// code: a StartupMessage, or an SSLRequest / GSSENCRequest answered by a single byte 'S', 'G' or
// 'N'); every later message in both directions is a type byte and an int32 length that counts
// itself. A connection that switches to TLS or GSS encryption is passed through but never matched.
import net, { type AddressInfo } from 'node:net';

type ProxyMode = 'forward' | 'stall' | { dropReplyAfter: string | RegExp } | { cutBefore: string | RegExp } | { slowStartup: number } | { slowReplies: number };

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  mode(mode: ProxyMode): void;
  readonly currentMode: ProxyMode;
  /** Connections cut by dropReplyAfter after the server answered the matched statement. */
  readonly drops: number;
  /** Connections cut by cutBefore before the matched statement reached the server. */
  readonly cuts: number;
  /** Client connections accepted so far. */
  readonly accepted: number;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Splits a PostgreSQL byte stream into messages; untyped messages (startup phase) on request. */
class Framer {
  private pending: Buffer = Buffer.alloc(0);
  /** The next message has no type byte (client startup phase). */
  untyped: boolean;
  /** The next thing is a single-byte answer to an SSL/GSS request (server side). */
  singleByte = false;
  /** The stream is encrypted from here on: no more framing. */
  opaque = false;

  constructor(untyped: boolean) {
    this.untyped = untyped;
  }

  /** Complete messages in `chunk` (with what was left over before); each is the whole message's bytes. */
  push(chunk: Buffer): { type: string; body: Buffer; raw: Buffer }[] {
    if (this.opaque) return [{ type: '', body: chunk, raw: chunk }];
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: { type: string; body: Buffer; raw: Buffer }[] = [];
    for (;;) {
      if (this.opaque) {
        if (this.pending.length) out.push({ type: '', body: this.pending, raw: this.pending });
        this.pending = Buffer.alloc(0);
        break;
      }
      if (this.singleByte) {
        if (this.pending.length < 1) break;
        const raw = this.pending.subarray(0, 1);
        this.pending = this.pending.subarray(1);
        this.singleByte = false;
        out.push({ type: 'answer', body: raw, raw });
        continue;
      }
      const header = this.untyped ? 4 : 5;
      if (this.pending.length < header) break;
      const length = this.untyped ? this.pending.readInt32BE(0) : this.pending.readInt32BE(1);
      const total = this.untyped ? length : length + 1;
      if (length < 4 || this.pending.length < total) break;
      const raw = this.pending.subarray(0, total);
      this.pending = this.pending.subarray(total);
      out.push({ type: this.untyped ? 'startup' : String.fromCharCode(raw[0]!), body: raw.subarray(header), raw });
    }
    return out;
  }
}

/** The SQL text of a Query ('Q') or Parse ('P') message; undefined for any other message. */
function statementOf(type: string, body: Buffer): string | undefined {
  if (type === 'Q') return body.subarray(0, Math.max(0, body.indexOf(0))).toString('utf8');
  if (type === 'P') {
    const nameEnd = body.indexOf(0);
    if (nameEnd < 0) return undefined;
    const queryEnd = body.indexOf(0, nameEnd + 1);
    return body.subarray(nameEnd + 1, queryEnd < 0 ? body.length : queryEnd).toString('utf8');
  }
  return undefined;
}

function matches(pattern: string | RegExp, statement: string): boolean {
  if (pattern instanceof RegExp) return pattern.test(statement);
  const normal = (text: string): string => text.trim().replace(/;\s*$/, '').trim().toUpperCase();
  return normal(statement) === normal(pattern);
}

interface Pair {
  client: net.Socket;
  server: net.Socket | undefined;
  fromClient: Framer;
  fromServer: Framer;
  /** ReadyForQuery messages the server still owes (one per Query and per Sync the client sent). */
  owedReady: number;
  /** Armed by dropReplyAfter: ReadyForQuery messages still to pass before the swallowing starts. */
  passBeforeDrop: number | undefined;
  closed: boolean;
  /** slowStartup: the delay of each start-up chunk (fixed when the connection is accepted), and the chain that keeps them in order. */
  startupDelay: number;
  slowed: Promise<void> | undefined;
}

export async function startProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  if (targetHost !== '127.0.0.1' && targetHost !== 'localhost' && targetHost !== '::1')
    throw new Error(`startProxy forwards to loopback only, not ${targetHost}`);
  let current: ProxyMode = 'forward';
  let drops = 0;
  let cuts = 0;
  let accepted = 0;
  const pairs = new Set<Pair>();

  const teardown = (pair: Pair): void => {
    if (pair.closed) return;
    pair.closed = true;
    pair.client.destroy();
    pair.server?.destroy();
    pairs.delete(pair);
  };

  const applyFlow = (pair: Pair): void => {
    if (pair.closed) return;
    if (current === 'stall') {
      pair.client.pause();
      pair.server?.pause();
    } else {
      if (!pair.server) connectUpstream(pair);
      pair.client.resume();
      pair.server?.resume();
    }
  };

  const onClientData = (pair: Pair, chunk: Buffer): void => {
    // Bytes go on unchanged; the framing only watches them. It runs before the write, so a
    // statement is recognised before the server can have answered it.
    for (const message of pair.fromClient.push(chunk)) {
      if (message.type === 'startup') {
        const code = message.body.length >= 4 ? message.body.readInt32BE(0) : 0;
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) pair.fromServer.singleByte = true;
        else pair.fromClient.untyped = false;
        continue;
      }
      const statement = statementOf(message.type, message.body);
      if (statement !== undefined && typeof current === 'object' && 'cutBefore' in current && matches(current.cutBefore, statement)) {
        current = 'forward';
        cuts++;
        teardown(pair);
        return;
      }
      if (
        statement !== undefined &&
        typeof current === 'object' &&
        'dropReplyAfter' in current &&
        pair.passBeforeDrop === undefined &&
        matches(current.dropReplyAfter, statement)
      ) {
        pair.passBeforeDrop = pair.owedReady;
        current = 'forward';
      }
      if (message.type === 'Q' || message.type === 'S') pair.owedReady++;
    }
    if (!pair.closed) pair.server!.write(chunk);
  };

  const onServerData = (pair: Pair, chunk: Buffer): void => {
    const forward: Buffer[] = [];
    for (const message of pair.fromServer.push(chunk)) {
      if (message.type === 'answer') {
        // The answer to SSLRequest/GSSENCRequest: 'N' means plain text goes on with a new startup.
        if (message.raw[0] !== 'N'.charCodeAt(0)) {
          pair.fromClient.opaque = true;
          pair.fromServer.opaque = true;
        }
        forward.push(message.raw);
        continue;
      }
      if (pair.passBeforeDrop === undefined || pair.passBeforeDrop > 0) {
        forward.push(message.raw);
        if (message.type === 'Z') {
          pair.owedReady = Math.max(0, pair.owedReady - 1);
          if (pair.passBeforeDrop !== undefined) pair.passBeforeDrop--;
        }
        continue;
      }
      // Swallowing the matched statement's reply; its ReadyForQuery means the server is done.
      if (message.type === 'Z') {
        if (forward.length) pair.client.write(Buffer.concat(forward));
        drops++;
        teardown(pair);
        return;
      }
    }
    if (!forward.length) return;
    const bytes = forward.length === 1 ? forward[0]! : Buffer.concat(forward);
    const replyDelay = typeof current === 'object' && 'slowReplies' in current ? current.slowReplies : 0;
    if (pair.startupDelay > 0 || pair.slowed || replyDelay > 0) {
      // Start-up ends with the server's first ReadyForQuery; later chunks only keep their order.
      const delay = Math.max(pair.startupDelay, replyDelay);
      if (forward.some((raw) => raw[0] === 'Z'.charCodeAt(0))) pair.startupDelay = 0;
      pair.slowed = (pair.slowed ?? Promise.resolve())
        .then(() => (delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : undefined))
        .then(() => {
          if (!pair.closed) pair.client.write(bytes);
        });
      return;
    }
    pair.client.write(bytes);
  };

  const connectUpstream = (pair: Pair): void => {
    const server = net.connect({ port: targetPort, host: targetHost });
    pair.server = server;
    server.setNoDelay(true);
    server.on('data', (chunk: Buffer) => onServerData(pair, chunk));
    server.on('end', () => {
      if (!pair.closed) pair.client.end();
    });
    server.on('error', () => teardown(pair));
    server.on('close', () => teardown(pair));
    pair.client.on('data', (chunk: Buffer) => onClientData(pair, chunk));
    // Bytes that arrived while the connection waited for 'forward' are read now.
    pair.client.resume();
  };

  const listener = net.createServer({ pauseOnConnect: true }, (client) => {
    accepted++;
    client.setNoDelay(true);
    const pair: Pair = {
      client,
      server: undefined,
      fromClient: new Framer(true),
      fromServer: new Framer(false),
      owedReady: 0,
      passBeforeDrop: undefined,
      closed: false,
      startupDelay: typeof current === 'object' && 'slowStartup' in current ? current.slowStartup : 0,
      slowed: undefined,
    };
    pairs.add(pair);
    client.on('end', () => {
      if (!pair.closed) pair.server?.end();
    });
    client.on('error', () => teardown(pair));
    client.on('close', () => teardown(pair));
    applyFlow(pair);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });

  return {
    port: (listener.address() as AddressInfo).port,
    mode(mode) {
      current = mode;
      for (const pair of pairs) applyFlow(pair);
    },
    get currentMode() {
      return current;
    },
    get drops() {
      return drops;
    },
    get cuts() {
      return cuts;
    },
    get accepted() {
      return accepted;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) teardown(pair);
        listener.close(() => resolve());
      }),
  };
}
