// silenceWatch (src/store/postgres.ts): a connect's "the server said nothing" is judged after the
// sockets are read, so a process that waited long for the CPU does not give up on an answer that
// arrived while it waited. Made deterministic without a loaded machine: this thread blocks (as a
// descheduled process does) until a server in a worker thread has written its answer, and past the
// silence bound, so both the answer and the timer are due when the event loop runs again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import { silenceWatch } from '../../src/store/postgres';

const SILENCE_MS = 50;

/** Answers each byte it receives with one byte, and sets the flag once the answer is written. */
const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const flag = new Int32Array(workerData);
const server = net.createServer((socket) => {
  socket.on('error', () => undefined); // a client that gave up resets its connection
  socket.on('data', () => socket.write('y', () => { Atomics.store(flag, 0, 1); Atomics.notify(flag, 0); }));
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

let worker: Worker;
let port: number;
const flag = new Int32Array(new SharedArrayBuffer(4));

beforeAll(async () => {
  worker = new Worker(SERVER, { eval: true, workerData: flag.buffer });
  port = await new Promise<number>((resolve) => worker.once('message', resolve));
});
afterAll(() => worker.terminate());

type Watch = { heard(): void; stop(): void };

/** The connect before silenceWatch: the timer alone decides (the control). */
function timerOnly(silenceMs: number, onSilence: () => void): Watch {
  let timer: NodeJS.Timeout | undefined;
  return {
    heard() {
      clearTimeout(timer);
      timer = setTimeout(onSilence, silenceMs);
    },
    stop: () => clearTimeout(timer),
  };
}

/**
 * Connects, arms `watch`, asks, and blocks this thread until the answer is in the socket and the
 * silence bound has passed; then lets the event loop run. Says whether the watch called silence.
 */
function askWhileStarved(watch: (ms: number, onSilence: () => void) => Watch): Promise<{ silent: boolean; answered: boolean }> {
  Atomics.store(flag, 0, 0);
  return new Promise((resolve) => {
    let silent = false;
    let answered = false;
    const socket = net.connect(port, '127.0.0.1');
    const finish = () => {
      w.stop();
      socket.destroy();
      resolve({ silent, answered });
    };
    const w = watch(SILENCE_MS, () => {
      silent = true;
      finish();
    });
    socket.on('data', () => {
      if (silent) return;
      answered = true;
      w.heard();
      // As a connect that got its answer: over once this turn of the loop is (a silence check that
      // was already due runs before it, and must find the answer heard).
      setImmediate(finish);
    });
    socket.on('connect', () => {
      w.heard();
      socket.write('x');
      const armed = performance.now();
      // Starved: the answer arrives, and the bound passes, while this thread does not run.
      expect(Atomics.wait(flag, 0, 0, 10_000)).not.toBe('timed-out');
      while (performance.now() - armed < SILENCE_MS * 2);
    });
  });
}

describe('silenceWatch', () => {
  it('an answer that arrived while the process waited for the CPU counts: no silence (control: the timer alone gives up on it)', async () => {
    expect(await askWhileStarved(timerOnly)).toStrictEqual({ silent: true, answered: false });
    expect(await askWhileStarved(silenceWatch)).toStrictEqual({ silent: false, answered: true });
  });

  it('a server that says nothing is still given up on after the bound', async () => {
    const started = performance.now();
    const silent = await new Promise<boolean>((resolve) => {
      const w = silenceWatch(SILENCE_MS, () => resolve(true));
      w.heard();
    });
    expect(silent).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(SILENCE_MS - 1);
  });

  it('stop() disarms it', async () => {
    let silent = false;
    const w = silenceWatch(SILENCE_MS, () => (silent = true));
    w.heard();
    const armed = performance.now();
    while (performance.now() - armed < SILENCE_MS * 2);
    // The timer is due; stopped before the loop runs it, as a connect that just ended does.
    w.stop();
    await new Promise((resolve) => setTimeout(resolve, SILENCE_MS * 2));
    expect(silent).toBe(false);
  });
});
