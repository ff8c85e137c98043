// The attested launch (spec §6): the agent is parked by the kernel at its exec boundary, checked
// against its attestation, its receipt is committed, and only then does it run its first
// instruction. Any failure on the way kills the parked process: the agent never ran.
//
// States: checked -> prepared -> forking -> parked -> verified -> held -> committed -> running ->
// exited, with every arrow also able to go to `refused` (kill, reap, close, typed refusal). The
// phases below are named for them: prepare, spawn, verifyAtExec, commit, release. Everything
// platform-specific (how the child is suspended, how its image is checked) is behind the backend
// (src/launcher/backends/). See docs/launcher.md for the threat model and the transitions.
import { Socket } from 'node:net';
import { ReadStream } from 'node:tty';
import { writeSync } from 'node:fs';
import { digestDocument } from '../core/canonical';
import { identityOf, sameIdentity, type Attestation, type Identity } from './attest';
import { digestOfDescriptor } from './digest';
import { verifySnapshot } from './closure';
import { decideInjection, describeVariables } from './environment';
import { launchBackend, type LaunchBackend } from './backends';
import type { NativeEvent, NativeLauncher, NativeStat } from './native';
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

/** The argv a launch execs: the attested path, a closure's runtime flags and snapshot script, then the caller's arguments. */
export const launchArgv = (attestation: Pick<Attestation, 'resolved' | 'arguments'>, args: readonly string[]): string[] => [
  attestation.resolved,
  ...(attestation.arguments ?? []),
  ...args,
];

/**
 * One launch in flight: what every phase reads and what a refusal must undo. A refusal kills the
 * suspended child (if any), records `launch_refused` when the store takes it, and throws.
 */
class Launch {
  readonly native: NativeLauncher;
  readonly backend: LaunchBackend;
  readonly barriers: Barriers;
  readonly partial: { -readonly [K in keyof LaunchFacts]?: LaunchFacts[K] };
  /** The native launch while its child is suspended and undecided; cleared once the native side decided. */
  launchId: number | undefined;
  pid: number | undefined;
  handles: SpawnHandles | undefined;

  constructor(readonly request: LaunchRequest) {
    this.backend = launchBackend();
    this.native = this.backend.native();
    this.barriers = process.env.TURNKEEPER_TEST_BARRIERS === '1' ? (request.barriers ?? {}) : {};
    const { attestation } = request;
    this.partial = {
      digest: attestation.digest,
      identity: attestation.identity,
      cwd: request.cwd,
      ...(attestation.closure ? { closure: { digest: attestation.closure.digest, entry: attestation.closure.entry } } : {}),
    };
  }

  async refuse(reason: LaunchRefusal, detail: string): Promise<never> {
    if (this.launchId !== undefined) this.native.decide(this.launchId, 'kill', reason);
    await this.request.recordRefusal?.(reason, detail, { ...this.partial, pid: this.pid }).catch(() => undefined);
    throw new LaunchRefused(reason, detail);
  }

  async checkCancelled(): Promise<void> {
    if (this.request.signal?.aborted) {
      await this.barriers.cancel?.();
      await this.refuse('launch_verification_failed', 'cancelled by the caller before the agent ran');
    }
  }

  /** The native side already ended the launch (backstop, teardown): its refusal is the answer. */
  async refuseEnded(event: NativeEvent | undefined, detail?: string): Promise<never> {
    this.launchId = undefined;
    const timedOut = event?.type === 'refused' && event.reason === 'launch_timeout';
    return this.refuse(
      timedOut ? 'launch_timeout' : 'launch_verification_failed',
      detail ?? (event?.type === 'refused' ? event.detail : 'the launch ended early'),
    );
  }
}

type SpawnHandles = ReturnType<NativeLauncher['spawnParked']>;
interface Prepared {
  readonly argv: string[];
  readonly envp: string[];
}
interface Parked {
  readonly id: number;
  readonly pid: number;
  readonly exe: NativeStat | undefined;
  readonly events: EventQueue;
}

export async function launchAttested(request: LaunchRequest): Promise<RunningLaunch> {
  const launch = new Launch(request);
  try {
    const prepared = await prepare(launch);
    const parked = await spawn(launch, prepared);
    const facts = await verifyAtExec(launch, parked);
    const receipt = await commit(launch, parked, facts);
    return await release(launch, parked, facts, receipt);
  } catch (error) {
    // Whatever threw, a still-suspended child must not wait for the backstop: it never runs.
    if (launch.launchId !== undefined) launch.native.decide(launch.launchId, 'kill', 'launch_verification_failed');
    const { handles } = launch;
    for (const fd of [handles?.stdin, handles?.stdout, handles?.stderr, handles?.pty]) if (fd !== undefined) launch.native.closeFd(fd);
    throw error;
  } finally {
    launch.native.closeFd(request.attestation.fd);
  }
}

/**
 * Phase 1, prepare (state `prepared`): the descriptor's object is unchanged and the path still leads
 * to it (the last path check); the environment is copied once and its injection variables decided;
 * argv and env are checked and digested. Nothing is forked.
 */
async function prepare(launch: Launch): Promise<Prepared> {
  const { request, native, barriers } = launch;
  const { attestation } = request;
  await barriers.after_attestation?.();
  const now = native.fstatFd(attestation.fd);
  if (!now || !sameIdentity(attestation.identity, identityOf(now)))
    await launch.refuse('object_changed', `${attestation.resolved} changed since it was attested`);
  const again = native.openExecutable(attestation.launchPath);
  if (again.ok) native.closeFd(again.fd);
  if (!again.ok || again.stat.dev !== attestation.identity.dev || again.stat.ino !== attestation.identity.ino) {
    await launch.refuse('resolution_changed', `${attestation.launchPath} no longer resolves to the attested object`);
  }

  const env: Record<string, string> = { ...request.env };
  // What the agent's usual launcher (an npm shim) clears before setting its own variables; so do we.
  for (const prefix of attestation.clearedPrefixes ?? []) for (const name of Object.keys(env)) if (name.startsWith(prefix)) delete env[name];
  Object.assign(env, attestation.environment);
  // Code-injection variables of the loader and of every runtime (the closed list in environment.ts).
  const injection = decideInjection(env, request.allowLoaderVariables);
  launch.partial.loaderEnvironment = injection.record;
  if (injection.refused.length > 0) {
    await launch.refuse(
      'loader_environment_rejected',
      `code-injection variables set: ${describeVariables(injection.refused)}; unset them or allow each by name`,
    );
  }
  const argv = launchArgv(attestation, request.args);
  const envp = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  for (const item of [...argv, ...envp, request.cwd])
    if (item.includes('\0')) await launch.refuse('launch_verification_failed', 'NUL byte in argv, env or cwd');
  for (const name of Object.keys(env))
    if (name === '' || name.includes('=')) await launch.refuse('launch_verification_failed', `bad environment name ${JSON.stringify(name)}`);
  launch.partial.argv = argv;
  launch.partial.argvDigest = digestDocument(argv);
  launch.partial.envDigest = digestDocument(Object.fromEntries(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))));
  await barriers.after_argv_env?.();
  await launch.checkCancelled();
  return { argv, envp };
}

/**
 * Phase 2, spawn (states `forking` -> `parked`): the backend starts the child suspended at its exec
 * boundary (Linux: PTRACE_TRACEME + execveat on the retained descriptor, stopped by SIGTRAP) and
 * reports it parked; from then on the native backstop kills it at `timeoutMs` unless told otherwise.
 */
async function spawn(launch: Launch, prepared: Prepared): Promise<Parked> {
  const { request, native, barriers } = launch;
  await barriers.before_fork?.();
  const events = eventQueue();
  try {
    launch.handles = native.spawnParked(
      {
        fd: request.attestation.fd,
        argv: prepared.argv,
        env: prepared.envp,
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
    return await launch.refuse('launch_verification_failed', `could not prepare the launch: ${(error as Error).message}`);
  }
  launch.launchId = launch.handles.id;
  const parked = await events.next();
  if (parked.type === 'refused') return await launch.refuseEnded(parked);
  if (parked.type !== 'parked') return await launch.refuse('launch_verification_failed', `unexpected launch event ${parked.type}`);
  launch.pid = parked.pid;
  await barriers.parked?.();
  await launch.checkCancelled();
  // The backstop may have fired while we waited (timeout): its refusal is the answer.
  const early = events.peek();
  if (early?.type === 'refused') return await launch.refuseEnded(early);
  return { id: launch.handles.id, pid: parked.pid, exe: parked.exe, events };
}

/**
 * Phase 3, verify at exec (state `verified`): through the backend, the image the suspended child
 * mapped is the attested object and its loader the attested loader; the descriptor's object is still
 * unchanged; a racy attestation is re-hashed now that the image is write-denied; a closure's snapshot
 * still matches its manifest. Returns the facts the receipt records.
 */
async function verifyAtExec(launch: Launch, parked: Parked): Promise<LaunchFacts> {
  const { request, native, backend } = launch;
  const { attestation } = request;
  const image = backend.imageMismatch(parked.pid, attestation, parked.exe);
  if (image) await launch.refuse('launch_verification_failed', image);
  // Our unreaped, suspended child: its start time cannot belong to another process yet.
  launch.partial.pidStart = backend.processStart(parked.pid) ?? null;
  const atExec = native.fstatFd(attestation.fd);
  if (!atExec || !sameIdentity(attestation.identity, identityOf(atExec)))
    await launch.refuse('object_changed', `${attestation.resolved} changed before it was executed`);
  // A dynamic executable runs its loader first: the loader the kernel mapped must be the attested one.
  if (attestation.interpreter) {
    const loader = backend.loaderMismatch(parked.pid, attestation.interpreter);
    if (loader) await launch.refuse('object_changed', loader);
  }
  // A freshly written file cannot be trusted on identity alone: re-hash the image, now write-denied.
  if (attestation.racy && (await digestOfDescriptor(attestation.fd, attestation.identity.size)) !== attestation.digest) {
    await launch.refuse('object_changed', `${attestation.resolved} changed within its timestamp tick before it was executed`);
  }
  // A closure: the snapshot the runtime is about to read must still be exactly its manifest.
  if (attestation.closure) {
    try {
      verifySnapshot(attestation.closure.root, attestation.closure.digest);
    } catch (error) {
      if (!(error instanceof LaunchRefused)) throw error;
      await launch.refuse(error.reason, error.detail);
    }
  }
  return { ...launch.partial, pid: parked.pid } as LaunchFacts;
}

/**
 * Phase 4, commit (states `held` -> `committed`): take the deadline over from the native backstop,
 * then write the receipt. If the backstop already fired, the child is dead and no receipt may say
 * otherwise; a `CommitRefused` kills the held child and reaches the caller as it is.
 */
async function commit(launch: Launch, parked: Parked, facts: LaunchFacts): Promise<{ seq: number; hash: string }> {
  const { request, native } = launch;
  if (!native.decide(parked.id, 'hold'))
    return await launch.refuseEnded(await parked.events.next(), 'the parked launch ended before its receipt could be written');
  try {
    return await request.commit(facts);
  } catch (error) {
    if (error instanceof CommitRefused) {
      // The commit refused this launch (and recorded why): kill the held child, which never ran.
      native.decide(parked.id, 'kill', 'receipt_failed');
      launch.launchId = undefined;
      throw error;
    }
    return await launch.refuse('receipt_failed', (error as Error).message);
  }
}

/**
 * Phase 5, release (state `running`): the backend lets the child run its first instruction (Linux:
 * PTRACE_DETACH). After a hold only the environment's teardown or the last-resort bound can have
 * ended it first; then the receipt exists for an agent that never ran (docs/launcher.md §8).
 */
async function release(launch: Launch, parked: Parked, facts: LaunchFacts, receipt: { seq: number; hash: string }): Promise<RunningLaunch> {
  const { native } = launch;
  if (!native.decide(parked.id, 'detach')) return await launch.refuseEnded(await parked.events.next(), 'the launch was killed before it could be released');
  const running = await parked.events.next();
  if (running.type !== 'running') return await launch.refuse('launch_verification_failed', `unexpected launch event ${running.type}`);
  launch.launchId = undefined;
  let reaped = false;
  const exited = parked.events.next().then((event) => {
    reaped = true;
    return event.type === 'exit' ? { code: event.code, signal: event.signal } : { code: null, signal: null };
  });
  return {
    pid: running.pid,
    receipt,
    facts,
    ...streams(native, launch.handles!),
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
}

/** Native events arrive on the JS thread in order; this turns them into awaitable steps. */
interface EventQueue {
  push: (event: NativeEvent) => void;
  next: () => Promise<NativeEvent>;
  peek: () => NativeEvent | undefined;
}

function eventQueue(): EventQueue {
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

function streams(
  native: NativeLauncher,
  handles: { stdin?: number; stdout?: number; stderr?: number; pty?: number },
): Pick<RunningLaunch, 'stdin' | 'stdout' | 'stderr' | 'pty'> {
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
