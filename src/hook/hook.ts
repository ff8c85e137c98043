// `turnkeeper hook`: the decision table of spec §2, in order, for one hook payload.
// Fail closed on authority (no claim without every check passing), fail open for the agent (the
// result is at most one JSON object on stdout, and the process always exits 0).
import { realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { buildCapture, type Binding } from '../core/capture';
import { digestText } from '../core/canonical';
import { isCaptureId, isLaunchId, isTodoId, isTurnId, malformedTodoMention, ownerOf, todoMentionedIn, type Agent, type Owner } from '../core/ids';
import { isFenced, isoTime, type Lease } from '../core/lease';
import { REASONS, renderGuidance, renderNotice, type GuidanceFacts, type ReasonCode } from '../core/reasons';
import { nearestTodoIds } from '../core/suggest';
import { blockOutput, contextOutput, denyToolOutput, type HookOutput } from '../agents/output';
import { InvalidHookInput, isWriteTool, parseHookInput, type HookEvent, type RejectionTrace } from '../agents/payload';
import type { Authority, ClaimResult, Placement, SessionState, SessionTouch, StoredReady } from '../store/authority';
import { faultPoint } from '../store/faults';
import type { Env } from '../store/location';
import { SchemaTooNewError, StoreUnavailableError } from '../store/authority';
import { openAuthority, selectStore } from '../ledger/open';
import { clientClock, hookBusyTimeoutMs, isTurnedOff, leaseTtlSeconds, onConflict } from '../config/settings';
import { branchOf, checkoutGit, preconditionsOf, type CheckoutGit } from '../checkout/workspace';
import type { Preconditions } from '../core/ready';
import { changesBetween, treeStateOf, type TreeState } from '../checkout/turnChanges';
import { turnUsageOf } from '../agents/transcriptTail';
import { placementOf, resolveGoal } from '../checkout/goal';
import { heldReminder, transcriptCarries } from './presentation';
import { findStart } from '../ledger/starts';
import { recordRejection } from './rejections';
import { GoalError } from '../core/goal';

/** All the git one hook runs per checkout shares this wall time (a claim: preconditions and turn base). */
const HOOK_GIT_BUDGET_MS = 8000;

/** lastHookAt is proof of life, not an audit trail: refreshing it at most this often keeps replays read-only. */
const SESSION_TOUCH_INTERVAL_MS = 15_000;

/** The live state each event kind puts its session in (spec §9 "Live status"); a SessionStart changes none. */
const STATE_OF: Readonly<Record<HookEvent['kind'], SessionState | undefined>> = {
  session_start: undefined,
  prompt: 'working',
  pre_tool: 'working',
  post_tool: 'working',
  notification: 'waiting',
  stop: 'stopped',
};

export interface HookRun {
  /** '' or exactly one JSON object followed by a newline. */
  readonly stdout: string;
  readonly stderr: readonly string[];
}

export interface HookOptions {
  readonly env: Env;
  readonly agent?: Agent | undefined;
  /** `--event <name>`: the event, for an agent whose payloads name none (Copilot). */
  readonly event?: string | undefined;
  /** The hook process's working directory: the cwd of an agent whose payloads name none (Goose). */
  readonly processCwd?: string | undefined;
  readonly now?: () => number;
  /** Lets tests and the extension share an open store; the CLI opens one per process. */
  readonly openStore?: (create: boolean) => Promise<Authority | undefined>;
}

const NOTHING: HookRun = { stdout: '', stderr: [] };

export async function runHook(raw: string | Buffer, options: HookOptions): Promise<HookRun> {
  const deadline = performance.now() + HOOK_DEADLINE_MS;
  const { env } = options;
  if (isTurnedOff(env)) return NOTHING;
  const stderr: string[] = [];
  const emit = (output: HookOutput | undefined): HookRun => ({ stdout: output ? JSON.stringify(output) + '\n' : '', stderr });

  let request: HookRequest;
  try {
    request = readRequest(raw, options);
  } catch (error) {
    if (!(error instanceof InvalidHookInput)) throw error;
    return { stdout: '', stderr: [`turnkeeper: ${error.message}; ignored${traceRejection(env, error, raw, options.now)}`] };
  }

  const now = options.now ?? decisionClock(env);
  // A claim may create the database; nothing else does (an unused workspace stays untouched).
  const mayCreate = request.boundTodo !== undefined || request.envCapture !== undefined;
  let store: Authority | undefined;
  try {
    const checkout = new CheckoutReads(request, env);
    if (claimsOnTeamStore(request, env)) checkout.claimReads();
    store = await (options.openStore ?? defaultOpener(env, deadline))(mayCreate);
    // No store: nothing is held, so a malformed mention can be answered without one (never silence).
    if (!store) return request.malformedMention === undefined ? NOTHING : emit(malformedMentionGuidance(request, env));
    const decider = new HookDecider(store, request, env, now, stderr, checkout);
    return emit(await decider.decide());
  } catch (error) {
    const unavailable = error instanceof StoreUnavailableError || error instanceof SchemaTooNewError;
    stderr.push(`turnkeeper: ${unavailable ? '' : 'internal error: '}${(error as Error).message}`);
    if (env.TURNKEEPER_DEBUG) stderr.push(String((error as Error).cause instanceof Error ? ((error as Error).cause as Error).stack : (error as Error).stack));
    if (!unavailable || !isContextEvent(request.event) || !mayCreate) return emit(undefined);
    return emit(guidanceOutput(request, env, 'store_unavailable', { todo: request.boundTodo, detail: (error as Error).message }));
  } finally {
    if (!options.openStore) store?.close();
  }
}

/**
 * Rule 2 leaves a trace for doctor (src/hook/rejections.ts), never the input itself. Fails open:
 * a home that cannot be written adds a note to the one stderr line, and the agent goes on all the same.
 */
function traceRejection(env: Env, error: InvalidHookInput, raw: string | Buffer, now: (() => number) | undefined): string {
  try {
    recordRejection(env, error.trace, typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.length, (now ?? Date.now)());
    return '';
  } catch (failure) {
    return ` (not recorded for doctor: ${(failure as NodeJS.ErrnoException).code ?? (failure as Error).message})`;
  }
}

/**
 * The clock a decision runs on. A SQLite ledger writes it into receipts and lease times, so it is this
 * process's own, whatever the environment says; a team server decides those times with its clock and
 * gets the client's (settings.ts clientClock), which tests may skew to show exactly that.
 */
function decisionClock(env: Env): () => number {
  // Only a skewed client clock can differ from Date.now: without one, no selection (config.json) is read.
  if (clientClock(env) === Date.now) return Date.now;
  try {
    return selectStore(env).kind === 'postgres' ? clientClock(env) : Date.now;
  } catch {
    return Date.now; // an unknown selection: the open fails and says why
  }
}

/**
 * A hook's own deadline, from the moment its payload arrived: every wait on a team store (a
 * connection slot, a write) ends by then. The agents give a hook 15 s from the moment they start it
 * (the timeout `hooks install` writes), and a hook reads its payload a moment after its start.
 */
const HOOK_DEADLINE_MS = 14_000;

const defaultOpener =
  (env: Env, deadline: number) =>
  (create: boolean): Promise<Authority | undefined> =>
    openAuthority(env, { create, busyTimeoutMs: hookBusyTimeoutMs(env), deadline });

/** The Goal of the hook's directory and where the checkout is. */
interface Located {
  readonly goal: string;
  readonly placement: Placement;
  /** The checkout's own git directory (null outside git, or when the hook runs inside a git directory). */
  readonly gitDir: string | null;
}

interface HookRequest {
  readonly event: HookEvent;
  readonly owner: Owner;
  readonly cwd: string;
  /**
   * The Goal, resolved once on first use. Context events resolve it before any store is opened (a
   * checkout that names its repository wrongly is rule 2 for them); tool and stop events never need
   * it to fence or renew, which depend on the Owner alone, so a broken `.turnkeeper.json` (which the
   * repository, or an evicted agent, can write) cannot turn fencing or renewal off. Throws
   * InvalidHookInput when the Goal cannot be named.
   */
  readonly located: () => Located;
  readonly boundTodo: string | undefined;
  /** A `#todo:` mention that is not a well-formed id, as written (guidance, never silence). */
  readonly malformedMention: string | undefined;
  readonly binding: Binding;
  readonly turn: string | undefined;
  /**
   * Whether `turn` is the agent's own id for this prompt (Codex `turn_id`, Claude `prompt_id`), which
   * a retry of the prompt repeats and the next prompt does not; else it is the launch's
   * TURNKEEPER_TURN, the same for every prompt of the process.
   */
  readonly turnFromPayload: boolean;
  readonly envCapture: string | undefined;
  readonly envLaunch: string | undefined;
  /**
   * A started agent (`turnkeeper start`): TURNKEEPER_LAUNCH and TURNKEEPER_TODO without a capture. Its
   * launch must be a committed start of this Todo (rule 3 for starts) before anything else happens.
   */
  readonly startTodo: string | undefined;
}

const isContextEvent = (event: HookEvent): boolean => event.kind === 'session_start' || event.kind === 'prompt';

/** Validates everything that comes from outside (payload and environment) before any store is opened. */
function readRequest(raw: string | Buffer, options: HookOptions): HookRequest {
  const { env } = options;
  const event = parseHookInput(raw, options.agent, { event: options.event, env, processCwd: options.processCwd });
  const about = { agent: event.agent, event: event.eventName };
  const envTodo = optionalEnv(env, 'TURNKEEPER_TODO', isTodoId, about);
  const envTurn = optionalEnv(env, 'TURNKEEPER_TURN', isTurnId, about);
  const envCapture = optionalEnv(env, 'TURNKEEPER_CAPTURE', isCaptureId, about);
  const envLaunch = optionalEnv(env, 'TURNKEEPER_LAUNCH', isLaunchId, about);
  let cwd: string;
  try {
    // One realpath(3) call; the JavaScript realpathSync lstats every component of the path.
    cwd = realpathSync.native(event.cwd);
  } catch {
    throw new InvalidHookInput(`cwd ${JSON.stringify(event.cwd)} does not exist`, { source: 'payload', fields: ['cwd'], reason: 'does not exist', ...about });
  }
  const located = once(() => locate(cwd, about));
  if (isContextEvent(event)) located();
  // Only prompts bind (spec §2 "Binding"); SessionStart never has a Turn.
  const mentioned = event.kind === 'prompt' ? todoMentionedIn(event.prompt ?? '') : undefined;
  const boundTodo = event.kind === 'prompt' ? (mentioned ?? envTodo) : undefined;
  // The launcher's environment binds as `launch`: a resumed capture, or the Todo of a start.
  const startTodo = envCapture === undefined && envLaunch !== undefined ? envTodo : undefined;
  const binding: Binding = mentioned !== undefined ? 'prompt' : envCapture !== undefined || startTodo !== undefined ? 'launch' : 'env';
  const turn = event.kind === 'session_start' ? undefined : (event.turn ?? envTurn);
  const malformedMention = event.kind === 'prompt' && boundTodo === undefined ? malformedTodoMention(event.prompt ?? '') : undefined;
  const turnFromPayload = turn !== undefined && event.turn !== undefined;
  return {
    event,
    owner: ownerOf(event.agent, event.session),
    cwd,
    located,
    boundTodo,
    malformedMention,
    binding,
    turn,
    turnFromPayload,
    envCapture,
    envLaunch,
    startTodo,
  };
}

/**
 * The Goal is the repository, whatever checkout (worktree, clone) the agent runs in; found from the
 * git layout without spawning git (docs/goals.md). A checkout that names its repository wrongly is
 * never filed under another rule's Goal: the hook says why on stderr and claims nothing.
 */
function locate(cwd: string, about: Pick<RejectionTrace, 'agent' | 'event'>): Located {
  let resolved;
  try {
    resolved = resolveGoal(cwd);
  } catch (error) {
    const trace = { source: 'checkout', fields: ['goal'], ...about } as const;
    if (error instanceof GoalError) throw new InvalidHookInput(`${error.message}; run turnkeeper goal`, { ...trace, reason: error.code });
    throw new InvalidHookInput(`the Goal of ${JSON.stringify(cwd)} cannot be read: ${(error as Error).message}`, { ...trace, reason: 'cannot be read' });
  }
  const { goal, ...placement } = placementOf(resolved);
  return { goal, placement, gitDir: resolved.inGitDir ? null : resolved.gitDir };
}

/** `make()` once; later calls give the same value, or throw the same error. */
function once<T>(make: () => T): () => T {
  let outcome: { value: T } | { error: unknown } | undefined;
  return () => {
    outcome ??= (() => {
      try {
        return { value: make() };
      } catch (error) {
        return { error };
      }
    })();
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  };
}

function optionalEnv(env: Env, name: string, valid: (value: string) => boolean, about: Pick<RejectionTrace, 'agent' | 'event'>): string | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!valid(value))
    throw new InvalidHookInput(`${name} is outside its grammar`, { source: 'environment', fields: [name], reason: 'outside its grammar', ...about });
  return value;
}

/**
 * Guidance for the model, and the one-line notice for the person where the agent shows one (spec §2
 * "Output"). A block needs no notice: its reason is what the agent shows the person instead of a turn.
 */
function guidanceOutput(request: HookRequest, env: Env, code: ReasonCode, facts: GuidanceFacts): HookOutput {
  const all: GuidanceFacts = { agent: request.event.agent, ...facts };
  const text = renderGuidance(code, all);
  if (REASONS[code].conflict && request.event.kind === 'prompt' && onConflict(env) === 'block') return blockOutput(request.event.agent, text);
  return contextOutput(request.event.agent, request.event.eventName, text, renderNotice(code, all));
}

/** `[invalid_todo_mention]`, quoting what was written and suggesting the id it may have meant. */
function malformedMentionGuidance(request: HookRequest, env: Env): HookOutput {
  const written = request.malformedMention ?? '#todo:';
  const guess = written
    .slice('#todo:'.length)
    .toLowerCase()
    .replace(/[^a-z0-9_-].*$/, '');
  return guidanceOutput(request, env, 'invalid_todo_mention', { detail: written, todo: isTodoId(guess) ? guess : undefined });
}

/**
 * Whether this event may claim on a team store: a prompt that names a Todo and has a Turn, not bound
 * by a launch. Its checkout is read (git) before the store is opened: a team server's connection
 * slots are few (max_connections), each hook holds one from its connect to its exit, and a claim's
 * git runs were most of that time under a burst (docs/testing.md, "The burst"). The price is those
 * runs for a prompt that turns out to be a holder's replay, which needs none; a SQLite store has no
 * slots to hold, so there the reads stay where the claim needs them.
 */
function claimsOnTeamStore(request: HookRequest, env: Env): boolean {
  if (request.event.kind !== 'prompt' || request.boundTodo === undefined || request.turn === undefined) return false;
  if (request.envCapture !== undefined || request.startTodo !== undefined) return false;
  try {
    return selectStore(env).kind === 'postgres';
  } catch {
    return false; // an unknown selection: the open fails and says why
  }
}

/**
 * What a hook reads of its checkout through git, each once: one hardened git session per checkout (a
 * claim's preconditions and its turn base read HEAD and list the filter drivers once between them,
 * bench row 2; a stop's tree and diff too), and the claim's preconditions and branch, of the
 * checkout's own HEAD and status (another worktree of the Goal has its own).
 */
class CheckoutReads {
  private readonly gits = new Map<string, CheckoutGit | undefined>();
  private claim: { preconditions: Preconditions; branch: string | null } | undefined;

  constructor(
    private readonly request: HookRequest,
    private readonly env: Env,
  ) {}

  gitOf(checkout: string): CheckoutGit | undefined {
    if (!this.gits.has(checkout)) this.gits.set(checkout, checkoutGit(checkout, HOOK_GIT_BUDGET_MS, this.env));
    return this.gits.get(checkout);
  }

  claimReads(): { preconditions: Preconditions; branch: string | null } {
    if (!this.claim) {
      const { gitDir, placement } = this.request.located();
      const branch = branchOf(gitDir, placement.checkout, this.env);
      this.claim = { branch, preconditions: preconditionsOf(placement.checkout, this.env, this.gitOf(placement.checkout)) };
    }
    return this.claim;
  }
}

class HookDecider {
  /** Set when the store refused a write in this run: later writes are skipped instead of waiting again. */
  private writesUnavailable: Error | undefined;
  /** Whether a write of this run already carried the proof of life (one write lock per hook). */
  private touched = false;
  /** What this run's claim came to, when it made one. */
  private claimOutcome: ClaimResult['kind'] | undefined;

  private gitOf(checkout: string): CheckoutGit | undefined {
    return this.checkout.gitOf(checkout);
  }

  constructor(
    private readonly store: Authority,
    private readonly request: HookRequest,
    private readonly env: Env,
    private readonly now: () => number,
    private readonly stderr: string[],
    private readonly checkout: CheckoutReads,
  ) {}

  async decide(): Promise<HookOutput | undefined> {
    const output = await this.decideEvent();
    // A turn of a lease holder begins at its prompt and ends at its stop event (spec §5 "turn_ended").
    if (this.request.event.kind === 'prompt') await this.beginTurn();
    if (this.request.event.kind === 'stop') await this.endTurn();
    if (!this.touched && !this.writesUnavailable) await this.touchSession();
    return output;
  }

  private decideEvent(): Promise<HookOutput | undefined> {
    switch (this.request.event.kind) {
      case 'pre_tool':
        return this.fence();
      case 'post_tool':
      case 'stop':
        return this.renew().then(() => undefined);
      case 'session_start':
      case 'prompt':
        return this.context();
      case 'notification':
        // Only the live state `waiting`, which the session touch records; the agent gets no output.
        return Promise.resolve(undefined);
    }
  }

  /**
   * At the prompt of a session that holds a lease (just claimed or held before): the checkout's HEAD
   * and tree digest, the turn's base, which its stop event compares against. A write per prompt of a
   * holder; git runs only then, bounded (turnChanges.ts). Fails open: no base, and the hook goes on.
   */
  private async beginTurn(): Promise<void> {
    if (this.writesUnavailable) return;
    // A claim that was refused leaves its session holding nothing (rule 4 found nothing held before it).
    if (this.claimOutcome !== undefined && this.claimOutcome !== 'acquired' && this.claimOutcome !== 'replayed') return;
    try {
      // A claim this run acquired is this session's lease, and the first delivery of its Turn: no read
      // needed to know either (each was a round trip while the hook held its team-store connection).
      const acquired = this.claimOutcome === 'acquired';
      if (!acquired && !(await this.store.activeLeaseOfOwner(this.request.owner))) return;
      // A retried prompt of the same Turn (the agent sends it again; its capture replays) keeps the
      // base its first delivery recorded: the turn began then, and a replay runs no git (bench row 1).
      const turn = this.request.turn;
      if (!acquired && turn !== undefined && (await this.store.getSession(this.request.owner))?.turnBase?.turn === turn) return;
      const { gitDir, placement } = this.request.located();
      const at = this.now();
      const tree = treeStateOf(placement.checkout, gitDir, this.env, Date.now, this.gitOf(placement.checkout));
      await this.store.touchSession({ ...this.sessionTouch, turnBase: { turn: this.request.turn ?? null, at, ...tree } }, at, SESSION_TOUCH_INTERVAL_MS);
      this.touched = true;
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.writesUnavailable = error;
      this.stderr.push(`turnkeeper: turn start not recorded: ${(error as Error).message}`);
    }
  }

  /**
   * The stop event of a lease holder: a `turn_ended` receipt with the tree after, what changed since
   * the turn's base, and what the transcript says of the turn; the base is cleared in the same write,
   * so a second stop without a prompt has no before. Fails open like every write of a hook.
   */
  private async endTurn(): Promise<void> {
    if (this.writesUnavailable) return;
    try {
      const { owner, event } = this.request;
      const lease = await this.store.activeLeaseOfOwner(owner);
      if (!lease) return;
      const session = await this.store.getSession(owner);
      const base = session?.turnBase ?? null;
      let after: TreeState = { head: null, tree: null };
      let checkout: string | undefined;
      try {
        const { gitDir, placement } = this.request.located();
        checkout = placement.checkout;
        after = treeStateOf(checkout, gitDir, this.env, Date.now, this.gitOf(checkout));
      } catch (error) {
        if (!(error instanceof InvalidHookInput)) throw error;
        this.stderr.push(`turnkeeper: the turn's tree not recorded: ${error.message}`);
      }
      const changes = checkout === undefined ? null : changesBetween(checkout, base?.tree ?? null, after.tree, this.env, this.gitOf(checkout));
      const transcript = event.transcriptPath ?? session?.transcriptPath ?? null;
      const usage = turnUsageOf(event.agent, transcript, base?.at);
      const now = this.now();
      await this.store.appendReceipt(
        {
          kind: 'turn_ended',
          goal: lease.goal,
          todo: lease.todo,
          capture: lease.capture,
          owner,
          lease: { epoch: lease.epoch, version: lease.version },
          detail: {
            agent: event.agent,
            agentVersion: usage.agentVersion ?? null,
            model: usage.model ?? null,
            inputTokens: usage.inputTokens ?? null,
            outputTokens: usage.outputTokens ?? null,
            cachedInputTokens: usage.cachedInputTokens ?? null,
            session: event.session,
            turn: base?.turn ?? this.request.turn ?? null,
            event: event.eventName,
            startedAt: base ? new Date(base.at).toISOString() : null,
            durationMs: base ? Math.max(0, now - base.at) : null,
            headBefore: base?.head ?? null,
            treeBefore: base?.tree ?? null,
            headAfter: after.head,
            treeAfter: after.tree,
            changed: changes?.count ?? null,
            added: changes?.added ?? null,
            modified: changes?.modified ?? null,
            deleted: changes?.deleted ?? null,
            // `<status>\t<path>` names, the first MAX_CHANGED_PATHS (earlier builds wrote their JSON text).
            paths: changes ? changes.paths : null,
          },
        },
        now,
        { ...this.sessionTouch, turnBase: null },
      );
      this.touched = true;
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.writesUnavailable = error;
      this.stderr.push(`turnkeeper: turn receipt not recorded: ${(error as Error).message}`);
    }
  }

  /** The Goal (context events resolved it before the store opened; a tool event only when it touches). */
  private get goal(): string {
    return this.request.located().goal;
  }

  private get placement(): Placement {
    return this.request.located().placement;
  }

  private get sessionTouch(): SessionTouch {
    const { event, owner, cwd } = this.request;
    return {
      owner,
      agent: event.agent,
      session: event.session,
      goal: this.goal,
      cwd,
      transcriptPath: event.transcriptPath ?? null,
      state: STATE_OF[event.kind],
    };
  }

  private async touchSession(): Promise<void> {
    let touch: SessionTouch;
    try {
      touch = this.sessionTouch;
    } catch (error) {
      // A tool event in a checkout whose Goal cannot be named: fenced and renewed all the same, but
      // its proof of life has no Goal to be filed under.
      if (!(error instanceof InvalidHookInput)) throw error;
      this.stderr.push(`turnkeeper: proof of life not recorded: ${error.message}`);
      return;
    }
    try {
      await this.store.touchSession(touch, this.now(), SESSION_TOUCH_INTERVAL_MS);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.writesUnavailable = error;
      this.stderr.push(`turnkeeper: could not record proof of life: ${error.message}`);
    }
  }

  private guidance(code: ReasonCode, facts: GuidanceFacts): HookOutput {
    return guidanceOutput(this.request, this.env, code, facts);
  }

  /** Rules 3–7 for context events. */
  private async context(): Promise<HookOutput | undefined> {
    const { envCapture, owner, event } = this.request;
    // Rule 3: an agent Turnkeeper launched names its capture; accept it only if the launch is live.
    if (envCapture !== undefined) {
      const capture = await this.store.getCapture(envCapture);
      const launches = capture ? await this.store.launchReceipts(envCapture) : [];
      const { envLaunch } = this.request;
      const committed = launches.some((r) => r.kind === 'launch_committed' && (envLaunch === undefined || r.launch === envLaunch));
      const live = capture !== undefined && capture.agent === event.agent && capture.session === event.session && committed;
      if (!live) return this.guidance('not_live_bound', { capture: envCapture, todo: capture?.todo });
      const lease = await this.store.leaseOfCapture(envCapture);
      if (!lease || lease.status !== 'active' || lease.owner !== owner) {
        return this.guidance('capture_released', { capture: envCapture, todo: capture.todo, epoch: lease?.epoch });
      }
      if (envLaunch !== undefined && !launches.some((r) => r.kind === 'launch_hooked' && r.launch === envLaunch)) {
        await this.recordLaunchHooked(capture.goal, capture.todo, envCapture, envLaunch, lease);
      }
      return this.present(envCapture, lease.todo, lease.epoch);
    }
    const held = await this.store.activeLeaseOfOwner(owner);
    const { startTodo, envLaunch } = this.request;
    if (startTodo !== undefined && envLaunch !== undefined && !held) {
      // Rule 3 for a started agent: its launch must be a committed start of this Todo by this agent,
      // and a start belongs to the first session that hooked it (a child agent inherits the variables).
      const start = await findStart(this.store, envLaunch, { goal: this.goal, todo: startTodo });
      const ours =
        start !== undefined && start.goal === this.goal && start.todo === startTodo && start.agent === event.agent && (start.hookedBy ?? owner) === owner;
      if (!ours) return this.guidance('not_live_bound', { launch: envLaunch, todo: startTodo });
      const output = await this.sessionRules(undefined);
      if (start.hookedBy === undefined) {
        const claimed = await this.store.activeLeaseOfOwner(owner);
        await this.recordLaunchHooked(this.goal, startTodo, claimed?.capture, envLaunch, claimed);
      }
      return output;
    }
    return this.sessionRules(held);
  }

  /** Rules 4–7, for a hook that is not bound by a resumed capture. */
  private async sessionRules(held: Lease | undefined): Promise<HookOutput | undefined> {
    const { boundTodo } = this.request;
    // Rule 4: the session already holds a lease: present its stored ready capture, claim nothing.
    if (held) {
      if (boundTodo !== undefined && (boundTodo !== held.todo || this.goal !== held.goal)) {
        // The claim's own order: a repository whose Goal key changed is [goal_changed] first. Its holder
        // naming its own Todo holds it under the Goal the repository used until now, not "another Todo".
        const { placement, goal } = this;
        const known = await this.store.goalOfPlace(placement.place);
        if (known && known.goal !== goal) {
          await this.recordRefusal('goal_changed', { previous: known.goal });
          return this.guidance('goal_changed', { todo: boundTodo, previousGoal: known.goal, goal, checkout: placement.checkout });
        }
        await this.recordRefusal('session_holds_other', { held: held.todo });
        return this.guidance('session_holds_other', { todo: boundTodo, heldTodo: held.todo, capture: held.capture, epoch: held.epoch });
      }
      return this.present(held.capture, held.todo, held.epoch);
    }
    // Rule 7: nothing bound, nothing held; but a mention that is not a Todo id is said, never silence.
    if (boundTodo === undefined) return this.request.malformedMention === undefined ? undefined : malformedMentionGuidance(this.request, this.env);
    // Rule 5: a claim needs a Turn, or it could not be replayed.
    if (this.request.turn === undefined) {
      await this.recordRefusal('no_turn', {});
      return this.guidance('no_turn', { todo: boundTodo });
    }
    return this.claim(boundTodo, this.request.turn);
  }

  /** Rule 6. */
  private async claim(todo: string, turn: string): Promise<HookOutput> {
    const { event, owner, cwd, binding } = this.request;
    const { goal, placement } = this;
    const capture = buildCapture({ goal, todo, agent: event.agent, session: event.session, turn });
    const reads = this.checkout.claimReads();
    const result = await this.store.claim(
      {
        capture,
        cwd,
        binding,
        placement,
        branch: reads.branch,
        owner,
        preconditions: reads.preconditions,
        ttlSeconds: leaseTtlSeconds(this.env),
        session: this.sessionTouch,
      },
      this.now(),
    );
    this.touched = true;
    this.claimOutcome = result.kind;
    faultPoint('claim.after_commit');
    await this.noteClockSkew();
    switch (result.kind) {
      case 'acquired':
      case 'replayed':
        // The claim read (or wrote) the ready capture in its transaction: presented without reading it again.
        return this.present(result.lease.capture, todo, undefined, result.ready);
      case 'unknown_todo':
        return this.guidance('unknown_todo', { todo, suggestions: await this.nearTodoIds(goal, todo) });
      case 'todo_not_open':
        return this.guidance('todo_not_open', { todo, status: result.status });
      case 'todo_blocked':
        return this.guidance('todo_blocked', { todo, status: result.status, waitingOn: result.waitingOn, blockReason: result.blockReason });
      case 'capture_released':
        return this.guidance('capture_released', { todo, capture: result.capture, epoch: result.epoch });
      case 'session_holds_other':
        return this.guidance('session_holds_other', { todo, heldTodo: result.held.todo, capture: result.held.capture, epoch: result.held.epoch });
      case 'goal_changed':
        return this.guidance('goal_changed', { todo, previousGoal: result.previous, goal: result.current, checkout: placement.checkout });
      case 'lease_held':
      case 'lease_expired_hold':
        return this.guidance(result.kind, {
          todo,
          holder: result.holder.owner,
          epoch: result.holder.epoch,
          expiresAt: isoTime(result.holder.expiresAt),
          checkout: result.holderCheckout,
        });
    }
  }

  /**
   * "Did you mean": the Goal's open Todo ids near an unknown one (src/core/suggest.ts). Read only on
   * this path, after the refused claim; a store that fails the read gives no suggestion, not an error.
   */
  private async nearTodoIds(goal: string, todo: string): Promise<string[]> {
    try {
      const todos = await this.store.listTodos(goal);
      return nearestTodoIds(
        todo,
        todos.filter((row) => row.status === 'open').map((row) => row.id),
      );
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.stderr.push(`turnkeeper: no Todo ids to suggest: ${error.message}`);
      return [];
    }
  }

  /**
   * A team server decides lease times with its own clock; a client clock that disagrees by more than
   * 1 s is worth a receipt (at most hourly per host). One extra round trip, on claims only; a local
   * store has one clock and answers without any I/O.
   */
  private async noteClockSkew(): Promise<void> {
    if (this.writesUnavailable) return;
    try {
      const client = clientClock(this.env);
      const skew = await this.store.measureClockSkew(client);
      if (skew) await this.store.noteClockSkew(skew, hostname(), client());
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.stderr.push(`turnkeeper: clock skew not measured: ${error.message}`);
    }
  }

  /**
   * Presents the stored bytes after checking their digest; a mismatch is never repaired. A holder's
   * later context event (rules 3 and 4, `heldEpoch` given) whose agent transcript already carries
   * those bytes gets a one-line reminder instead, except a retry of the claiming Turn, which always
   * gets the bytes (presentation.ts; docs/hook-protocol.md, "How often the full capture is presented").
   * Only a Turn from the payload tells a retry from the next prompt: a launch's TURNKEEPER_TURN is the
   * same for every prompt of the session (Gemini CLI, Copilot CLI: their payloads carry no Turn), so
   * there the transcript alone decides, and a retry whose first output the agent dropped is not in it.
   */
  private async present(captureId: string, todo: string, heldEpoch?: number, claimed?: StoredReady): Promise<HookOutput> {
    const ready = claimed ?? (await this.store.readReady(captureId));
    if (!ready || digestText(ready.presentation) !== ready.readyDigest) {
      return this.guidance('ready_corrupted', { capture: captureId, todo });
    }
    const { event } = this.request;
    if (heldEpoch !== undefined && (transcriptCarries(event.transcriptPath, captureId) || (await this.resumedTranscriptCarries(captureId)))) {
      // Only a prompt can be a retry of the claiming Turn (SessionStart has no Turn): only then is the capture read.
      const sameTurn =
        event.kind === 'prompt' &&
        this.request.turnFromPayload &&
        this.request.turn !== undefined &&
        (await this.store.getCapture(captureId))?.turn === this.request.turn;
      if (!sameTurn) return contextOutput(this.request.event.agent, this.request.event.eventName, heldReminder(todo, captureId, heldEpoch));
    }
    return contextOutput(this.request.event.agent, this.request.event.eventName, ready.presentation);
  }

  /**
   * A SessionStart of a resumed session continues the conversation its earlier events wrote, and some
   * agents name another file in this payload: Gemini CLI 0.61 fires a headless resume's SessionStart
   * before it reopens the session, so `transcript_path` is the fresh file of a throwaway chat named by
   * the current minute (the session's own file only when the resume starts in the minute the session
   * did). So a resume's SessionStart also checks the transcript this session last reported (read
   * before this event's touch replaces it). Only `source: "resume"`: after a clear the old file is
   * no longer the conversation.
   */
  private async resumedTranscriptCarries(captureId: string): Promise<boolean> {
    const { event, owner } = this.request;
    if (event.kind !== 'session_start' || event.sessionSource !== 'resume') return false;
    const recorded = (await this.store.getSession(owner))?.transcriptPath ?? undefined;
    return recorded !== undefined && recorded !== event.transcriptPath && transcriptCarries(recorded, captureId);
  }

  /** The first hook event of a launch: proof that the launched agent's hooks fire (doctor checks it). */
  private async recordLaunchHooked(goal: string, todo: string, capture: string | undefined, launch: string, lease: Lease | undefined): Promise<void> {
    if (this.writesUnavailable) return;
    try {
      await this.store.appendReceipt(
        {
          kind: 'launch_hooked',
          goal,
          todo,
          // A start's first hook before (or without) a claim names no capture yet.
          ...(capture !== undefined ? { capture } : {}),
          owner: this.request.owner,
          ...(lease ? { lease: { epoch: lease.epoch, version: lease.version } } : {}),
          detail: { launch, event: this.request.event.eventName },
        },
        this.now(),
        this.sessionTouch,
      );
      this.touched = true;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.stderr.push(`turnkeeper: launch proof of life not recorded: ${error.message}`);
    }
  }

  private async recordRefusal(reason: ReasonCode, detail: Record<string, string>): Promise<void> {
    if (this.writesUnavailable) return;
    const { boundTodo, owner } = this.request;
    const { goal } = this;
    try {
      await this.store.appendReceipt({ kind: 'claim_refused', goal, todo: boundTodo, owner, detail: { reason, ...detail } }, this.now(), this.sessionTouch);
      this.touched = true;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.stderr.push(`turnkeeper: refusal not recorded: ${error.message}`);
    }
  }

  /** Fencing: an evicted session may not keep writing. */
  private async fence(): Promise<HookOutput | undefined> {
    const { event, owner } = this.request;
    if (!isWriteTool(event.agent, event.toolName)) return undefined;
    const latest = await this.store.latestLeaseOfOwner(owner);
    if (!latest || !isFenced(latest.lease, latest.currentEpoch)) return undefined;
    const text = renderGuidance('lease_fenced', { todo: latest.lease.todo, epoch: latest.lease.epoch, agent: event.agent });
    return denyToolOutput(event.agent, event.eventName, text);
  }

  private async renew(): Promise<void> {
    if (this.writesUnavailable) return;
    try {
      await this.store.renew(this.request.owner, this.now(), leaseTtlSeconds(this.env));
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.stderr.push(`turnkeeper: lease not renewed: ${error.message}`);
    }
  }
}
