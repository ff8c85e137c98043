// The HTTP plumbing the mock model servers share: a server on 127.0.0.1 with an ephemeral port that
// hands each request over with its whole body, and a close that does not wait for keep-alive sockets.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  readonly port: number;
  /** A function property, not a method: the mock servers hand it on detached (`close: server.close`). */
  readonly close: () => Promise<void>;
}

/** One request, its whole body read (`raw`), answered on `res`. */
export type RequestHandler = (req: IncomingMessage, raw: string, res: ServerResponse) => void;

/** On 127.0.0.1, at `port` (0, the default: an ephemeral one). */
export async function startLoopbackServer(handle: RequestHandler, port = 0): Promise<LoopbackServer> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, Buffer.concat(chunks).toString('utf8'), res));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
