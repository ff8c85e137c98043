// The process's own stdin and stdout/stderr, without Node's stream machinery (a few milliseconds of
// every hook's start-up). Shared by the full command line (main.ts) and the hook's own bundle (hookMain.ts).

/**
 * Reads stdin up to `limit` + 1 bytes. Synchronous reads of fd 0 avoid loading Node's stream machinery,
 * a few milliseconds of every hook's start-up; a non-blocking stdin (EAGAIN) falls back to the stream.
 */
export async function readStdin(limit: number): Promise<Buffer> {
  const { readSync } = process.getBuiltinModule('node:fs');
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(65536);
      const read = readSync(0, chunk, 0, chunk.length, null);
      if (read === 0) break;
      // Keep one byte past the limit so the parser can tell "too large" apart from "exactly full".
      if (size <= limit) chunks.push(chunk.subarray(0, read));
      size += read;
    }
    return Buffer.concat(chunks).subarray(0, limit + 1);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EOF') throw error;
  }
  return new Promise((resolve, reject) => {
    process.stdin.on('data', (chunk: Buffer) => {
      if (size <= limit) chunks.push(chunk);
      size += chunk.length;
    });
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).subarray(0, limit + 1)));
    process.stdin.on('error', reject);
  });
}

/**
 * Writes through fd 1/2 directly (no stdio stream objects). A non-blocking pipe that is full (EAGAIN)
 * hands the rest to the stream, which writes it when the pipe drains; `lost` hears of a failure then.
 * A reader that closed the pipe (EPIPE: `turnkeeper receipts | head -1`) wanted no more: what is
 * left is dropped, and that is no error, so the command's exit status stays its own (a `todo done`
 * piped to `head` still says whether it was done). Node ignores SIGPIPE, so the write fails instead.
 */
export function writer(fd: 1 | 2, lost: () => void): (text: string) => void {
  let readerGone = false;
  const closedByReader = (error: unknown): boolean => {
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') readerGone = true;
    return readerGone;
  };
  return (text) => {
    if (readerGone) return;
    const { writeSync } = process.getBuiltinModule('node:fs');
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    try {
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset);
    } catch (error) {
      if (closedByReader(error)) return;
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      const stream = fd === 1 ? process.stdout : process.stderr;
      // Without a listener a failed stream write would crash the process with exit 1.
      if (stream.listenerCount('error') === 0) stream.on('error', (streamError) => closedByReader(streamError) || lost());
      // Only what was not written yet: the bytes before EAGAIN are already out.
      stream.write(bytes.subarray(offset));
    }
  };
}
