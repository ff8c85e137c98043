// The attested launch (contract §6): the agent is parked by the kernel at its exec boundary, checked
// against its attestation, its receipt is committed, and only then does it run its first
// instruction. Any failure on the way kills the parked process: the agent never ran.
//
// States: checked -> prepared -> forking -> parked -> verified -> committed -> running -> exited,
// with every arrow also able to go to `refused` (kill, reap, close, typed refusal). See
// docs/launcher.md for the threat model and the transitions.
import { Socket } from 'node:net';
import { ReadStream } from 'node:tty';
import { readFileSync, writeSync } from 'node:fs';
import { digestDocument } from '../core/canonical';
import { digestOfDescriptor, identityOf, sameIdentity, type Attestation, type Identity } from './attest';
import { verifySnapshot } from './closure';
import { decideInjection, describeVariables } from './environment';
import { processStart } from './liveness';
import { nativeLauncher, type NativeEvent } from './native';
import { CommitRefused, LaunchRefused, type LaunchRefusal } from './refusals';

export const BARRIERS = ['after_attestation', 'after_argv_env', 'before_fork', 'parked', 'cancel'] as const;
export type BarrierName = (typeof BARRIERS)[number];
/** Test-only pauses inside the launch; honoured only when TURNKEEPER_TEST_BARRIERS=1 is set. */
export type Barriers = Partial<Record<BarrierName, () => Promise<void> | void>>;

export interface LaunchFacts {
  readonly pid: number;
  /** The parked child's start time (/proc/<pid>/stat field 22): with the pid, names this process even after the pid is reused. */
  readonly pidStart: string | null;
  readonly digest: string;
  readonly identity: Identity;
  readonly argv: readonly string[];
  readonly argvDigest: string;
  readonly envDigest: string;
  readonly cwd: string;
  /** The injection-variable decision (src/launcher/environment.ts): `none`, `allowed: …`, or `refused: …` on a refusal. */
  readonly loaderEnvironment: string;
  /** A script shape: the closure digest the runtime runs, and its script inside the snapshot (`digest` is then the runtime's). */
  readonly closure?: { readonly digest: string; readonly entry: string } | undefined;
}

export interface LaunchRequest {
  readonly attestation: Attestation;
  /** Arguments after argv[0]; argv[0] is the attested path. */
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly stdio: 'pipe' | 'pty' | 'inherit';
  readonly cols?: number;
  readonly rows?: number;
  readonly allowLoaderVariables?: readonly string[];
  /** How long the parked child may wait for verification and the receipt. */
  readonly timeoutMs?: number;
  /**
   * Writes the `launch_committed` receipt; the agent runs only after this resolves. Rejecting with
   * `CommitRefused` means the commit decided against this launch and recorded why itself: the
   * child is killed and the error reaches the caller as it is. Any other rejection is `receipt_failed`.
   */
  readonly commit: (facts: LaunchFacts) => Promise<{ seq: number; hash: string }>;
  /** Records `launch_refused` when the store is writable; failures here are swallowed. */
  readonly recordRefusal?: (reason: LaunchRefusal, detail: string, facts: Partial<LaunchFacts>) => Promise<void>;
  readonly signal?: AbortSignal;
  readonly barriers?: Barriers;
}

export interface RunningLaunch {
  readonly pid: number;
  readonly receipt: { readonly seq: number; readonly hash: string };
  readonly facts: LaunchFacts;
  readonly stdin?: Socket;
  readonly stdout?: Socket;
  readonly stderr?: Socket;
  readonly pty?: { readonly output: ReadStream; write(data: string | Buffer): void; resize(cols: number, rows: number): void };
  readonly exited: Promise<{ code: number | null; signal: number | null }>;
  kill(signal?: NodeJS.Signals): void;
}

const DEFAULT_TIMEOUT_MS = 15_000;

export async function launchAttested(request: LaunchRequest): Promise<RunningLaunch> {
  const native = nativeLauncher();
  const { attestation } = request;
  const barriers = process.env.TURNKEEPER_TEST_BARRIERS === '1' ? (request.barriers ?? {}) : {};
  const partial: { -readonly [K in keyof LaunchFacts]?: LaunchFacts[K] } = {
    digest: attestation.digest,
    identity: attestation.identity,
    cwd: request.cwd,
    ...(attestation.closure ? { closure: { digest: attestation.closure.digest, entry: attestation.closure.entry } } : {}),
  };
  let launchId: number | undefined;
  let pid: number | undefined;

  const refuse = async (reason: LaunchRefusal, detail: string): Promise<never> => {
    if (launchId !== undefined) native.decide(launchId, 'kill', reason);
    await request.recordRefusal?.(reason, detail, { ...partial, pid }).catch(() => undefined);
    throw new LaunchRefused(reason, detail);
  };
  const checkCancelled = async () => {
    if (request.signal?.aborted) {
      await barriers.cancel?.();
      await refuse('launch_verification_failed', 'cancelled by the caller before the agent ran');
    }
  };

  let handles: ReturnType<typeof native.spawnParked> | undefined;
  try {
    await barriers.after_attestation?.();
    // Re-check before every launch: the descriptor's object is unchanged, and the path still leads to it.
    const now = native.fstatFd(attestation.fd);
    if (!now || !sameIdentity(attestation.identity, identityOf(now))) await refuse('object_changed', `${attestation.resolved} changed since it was attested`);
    const again = native.openExecutable(attestation.launchPath);
    if (again.ok) native.closeFd(again.fd);
    if (!again.ok || again.stat.dev !== attestation.identity.dev || again.stat.ino !== attestation.identity.ino) {
      await refuse('resolution_changed', `${attestation.launchPath} no longer resolves to the attested object`);
    }

    const env: Record<string, string> = { ...request.env };
    // The npm Codex shim clears every package-manager marker before setting its own; so do we.
    if (attestation.environment.CODEX_MANAGED_PACKAGE_ROOT !== undefined) for (const name of Object.keys(env)) if (name.startsWith('CODEX_MANAGED_BY_')) delete env[name];
    Object.assign(env, attestation.environment);
    // Code-injection variables of the loader and of every runtime (the closed list in environment.ts).
    const injection = decideInjection(env, request.allowLoaderVariables);
    partial.loaderEnvironment = injection.record;
    if (injection.refused.length > 0) {
      await refuse('loader_environment_rejected', `code-injection variables set: ${describeVariables(injection.refused)}; unset them or allow each by name`);
    }
    const argv = [attestation.resolved, ...(attestation.arguments ?? []), ...request.args];
    const envp = Object.entries(env).map(([name, value]) => `${name}=${value}`);
    for (const item of [...argv, ...envp, request.cwd]) if (item.includes('\0')) await refuse('launch_verification_failed', 'NUL byte in argv, env or cwd');
    for (const name of Object.keys(env)) if (name === '' || name.includes('=')) await refuse('launch_verification_failed', `bad environment name ${JSON.stringify(name)}`);
    partial.argv = argv;
    partial.argvDigest = digestDocument(argv);
    partial.envDigest = digestDocument(Object.fromEntries(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))));
    await barriers.after_argv_env?.();
    await checkCancelled();

    await barriers.before_fork?.();
    const events = eventQueue();
    try {
      handles = native.spawnParked(
      {
        fd: attestation.fd,
        argv,
        env: envp,
        cwd: request.cwd,
        stdio: request.stdio,
        cols: request.cols ?? 80,
        rows: request.rows ?? 24,
        timeoutMs: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      },
        events.push,
      );
    } catch (error) {
      // The working directory is gone, or no pipe or terminal could be made: nothing was forked.
      return await refuse('launch_verification_failed', `could not prepare the launch: ${(error as Error).message}`);
    }
    launchId = handles.id;
    const parked = await events.next();
    if (parked.type === 'refused') {
      launchId = undefined;
      await refuse(parked.reason === 'launch_timeout' ? 'launch_timeout' : 'launch_verification_failed', parked.detail);
    }
    if (parked.type !== 'parked') return await refuse('launch_verification_failed', `unexpected launch event ${parked.type}`);
    pid = parked.pid;
    await barriers.parked?.();
    await checkCancelled();

    // The backstop may have fired while we waited (timeout): its refusal is the answer.
    const early = events.peek();
    if (early?.type === 'refused') {
      launchId = undefined;
      await refuse(early.reason === 'launch_timeout' ? 'launch_timeout' : 'launch_verification_failed', early.detail);
    }
    // The mapped image must be the attested object, and that object must be unchanged. Checked now,
    // not only when it parked: a child that died meanwhile (a zombie has no exe) gets no receipt.
    const exeNow = native.statPath(`/proc/${pid}/exe`);
    for (const exe of [parked.exe, exeNow]) {
      if (!exe || exe.dev !== attestation.identity.dev || exe.ino !== attestation.identity.ino) {
        await refuse('launch_verification_failed', `/proc/${pid}/exe is not the attested object (or the child is gone)`);
      }
    }
    // Our unreaped, parked child: its start time cannot belong to another process yet.
    partial.pidStart = processStart(pid) ?? null;
    const atExec = native.fstatFd(attestation.fd);
    if (!atExec || !sameIdentity(attestation.identity, identityOf(atExec))) await refuse('object_changed', `${attestation.resolved} changed before it was executed`);
    // A dynamic executable runs its loader first: the loader the kernel mapped must be the attested one.
    if (attestation.interpreter) {
      const loader = attestation.interpreter;
      const now = native.statPath(loader.path);
      if (!mappedObjects(pid).has(`${loader.identity.dev}:${loader.identity.ino}`) || !now || !sameIdentity(loader.identity, identityOf(now))) {
        await refuse('object_changed', `the dynamic loader ${loader.path} mapped at the exec boundary is not the attested one`);
      }
    }
    // A freshly written file cannot be trusted on identity alone: re-hash the image, now write-denied.
    if (attestation.racy && (await digestOfDescriptor(attestation.fd, attestation.identity.size)) !== attestation.digest) {
      await refuse('object_changed', `${attestation.resolved} changed within its timestamp tick before it was executed`);
    }
    // A closure: the snapshot the runtime is about to read must still be exactly its manifest.
    if (attestation.closure) {
      try {
        verifySnapshot(attestation.closure.root, attestation.closure.digest);
      } catch (error) {
        if (!(error instanceof LaunchRefused)) throw error;
        await refuse(error.reason, error.detail);
      }
    }

    const facts = { ...partial, pid } as LaunchFacts;
    // Take the deadline over from the native backstop before writing the receipt: if the backstop
    // already fired, the child is dead and no receipt may say otherwise.
    if (!native.decide(handles.id, 'hold')) {
      const late = await events.next();
      launchId = undefined;
      return await refuse(late.type === 'refused' && late.reason === 'launch_timeout' ? 'launch_timeout' : 'launch_verification_failed', 'the parked launch ended before its receipt could be written');
    }
    let receipt: { seq: number; hash: string };
    try {
      receipt = await request.commit(facts);
    } catch (error) {
      if (error instanceof CommitRefused) {
        // The commit refused this launch (and recorded why): kill the held child, which never ran.
        native.decide(handles.id, 'kill', 'receipt_failed');
        launchId = undefined;
        throw error;
      }
      return await refuse('receipt_failed', (error as Error).message);
    }
    if (!native.decide(handles.id, 'detach')) {
      // Only the environment's teardown can get here after a hold: the child was killed.
      const late = await events.next();
      launchId = undefined;
      return await refuse(late.type === 'refused' && late.reason === 'launch_timeout' ? 'launch_timeout' : 'launch_verification_failed', 'the launch was killed before it could be released');
    }
    const running = await events.next();
    if (running.type !== 'running') return await refuse('launch_verification_failed', `unexpected launch event ${running.type}`);
    let reaped = false;
    const exited = events.next().then((event) => {
      reaped = true;
      return event.type === 'exit' ? { code: event.code, signal: event.signal } : { code: null, signal: null };
    });
    return {
      pid: running.pid,
      receipt,
      facts,
      ...streams(handles),
      exited,
      kill: (signal = 'SIGTERM') => {
        // Once reaped, the pid may belong to someone else: never signal it.
        if (reaped) return;
        try {
          process.kill(running.pid, signal);
        } catch {
          // already gone
        }
      },
    };
  } catch (error) {
    // Whatever threw, a still-parked child must not wait for the backstop: it never runs.
    if (launchId !== undefined) native.decide(launchId, 'kill', 'launch_verification_failed');
    for (const fd of [handles?.stdin, handles?.stdout, handles?.stderr, handles?.pty]) if (fd !== undefined) native.closeFd(fd);
    throw error;
  } finally {
    native.closeFd(attestation.fd);
  }
}

/**
 * The files a parked process has mapped, as `dev:ino` with dev in the kernel's st_dev encoding
 * (/proc/<pid>/maps prints it as hex major:minor). At the exec boundary that is the image and its loader.
 */
export function mappedObjects(pid: number): Set<string> {
  const objects = new Set<string>();
  let maps = '';
  try {
    maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {
    return objects;
  }
  for (const line of maps.split('\n')) {
    const [, , , device, inode] = line.split(/\s+/);
    if (!device || !inode || inode === '0') continue;
    const [major, minor] = device.split(':').map((part) => BigInt(parseInt(part, 16)));
    // glibc's makedev for a 64-bit dev_t.
    const dev = ((major! & 0xfffff000n) << 32n) | ((major! & 0xfffn) << 8n) | ((minor! & 0xffffff00n) << 12n) | (minor! & 0xffn);
    objects.add(`${dev}:${inode}`);
  }
  return objects;
}

/** Native events arrive on the JS thread in order; this turns them into awaitable steps. */
function eventQueue(): { push: (event: NativeEvent) => void; next: () => Promise<NativeEvent>; peek: () => NativeEvent | undefined } {
  const queued: NativeEvent[] = [];
  const waiting: ((event: NativeEvent) => void)[] = [];
  return {
    push: (event) => {
      const resolve = waiting.shift();
      if (resolve) resolve(event);
      else queued.push(event);
    },
    peek: () => queued[0],
    next: () => {
      const event = queued.shift();
      return event ? Promise.resolve(event) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

function streams(handles: { stdin?: number; stdout?: number; stderr?: number; pty?: number }): Pick<RunningLaunch, 'stdin' | 'stdout' | 'stderr' | 'pty'> {
  const native = nativeLauncher();
  if (handles.pty !== undefined) {
    const fd = handles.pty;
    return {
      pty: {
        output: new ReadStream(fd),
        write: (data) => void (typeof data === 'string' ? writeSync(fd, data) : writeSync(fd, data)),
        resize: (cols, rows) => void native.resizePty(fd, cols, rows),
      },
    };
  }
  if (handles.stdout === undefined) return {};
  return {
    stdin: new Socket({ fd: handles.stdin!, readable: false, writable: true }),
    stdout: new Socket({ fd: handles.stdout, readable: true, writable: false }),
    stderr: new Socket({ fd: handles.stderr!, readable: true, writable: false }),
  };
}
