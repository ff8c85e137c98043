// Every reason code of the spec (spec §2, §7) in one table of data: what it means, the facts it
// names, and the exact command that recovers. Guidance text is rendered from here and nowhere else;
// docs/recovery.md has one section per code (a test keeps the two in step).

import { TODO_ID_RULE } from './ids';
import { terminalSafe } from './terminal';

export const REASON_CODES = [
  'lease_held',
  'lease_expired_hold',
  'no_turn',
  'unknown_todo',
  'todo_not_open',
  'todo_blocked',
  'session_holds_other',
  'capture_released',
  'not_live_bound',
  'ready_corrupted',
  'store_unavailable',
  'precondition_changed',
  'lease_fenced',
  'transcript_missing',
  'goal_changed',
  'invalid_todo_mention',
] as const;
type HookReasonCode = (typeof REASON_CODES)[number];

/** Refusals that only `resume` gives (spec §7), beside the hook's closed set above. */
export const RESUME_REASON_CODES = ['unknown_capture', 'unbound_capture', 'lease_moved', 'launch_in_progress', 'checkout_missing'] as const;
export type ReasonCode = HookReasonCode | (typeof RESUME_REASON_CODES)[number];

/** Facts a guidance message may name. Only what is known is shown. */
export interface GuidanceFacts {
  readonly todo?: string | undefined;
  readonly heldTodo?: string | undefined;
  readonly holder?: string | undefined;
  readonly epoch?: number | undefined;
  readonly expiresAt?: string | undefined;
  readonly capture?: string | undefined;
  readonly status?: string | undefined;
  readonly agent?: string | undefined;
  readonly detail?: string | undefined;
  /** The checkout (worktree root) concerned: the holder's, or the one that is gone. */
  readonly checkout?: string | undefined;
  readonly goal?: string | undefined;
  readonly previousGoal?: string | undefined;
  /** A command the facts already spell out (e.g. the `git worktree add` that recreates a checkout). */
  readonly command?: string | undefined;
  /** The launch nonce a started agent carries (TURNKEEPER_LAUNCH), when no capture names the launch. */
  readonly launch?: string | undefined;
  /** `todo_blocked`: the Todo's undone dependencies, in id order. */
  readonly waitingOn?: readonly string[] | undefined;
  /** `todo_blocked`: the reason a person gave when they blocked it (stored text: shown quoted on one line). */
  readonly blockReason?: string | null | undefined;
  /** Open Todo ids of the Goal close to an unknown one, nearest first (src/core/suggest.ts). */
  readonly suggestions?: readonly string[] | undefined;
  /** `lease_held`: the holder's agent, launched by Turnkeeper, is gone (spec §9 "Live status"): its capture is resumed, not taken over. */
  readonly holderGone?: 'exited' | 'crashed' | undefined;
}

interface ReasonEntry {
  /** A conflict between agents: with `turnkeeper.onConflict=block` it stops the prompt instead of riding along. */
  readonly conflict: boolean;
  /** One sentence: what happened, with the facts filled in. */
  readonly explain: (facts: GuidanceFacts) => string;
  /** The exact command (or action) that recovers. */
  readonly recover: (facts: GuidanceFacts) => string;
  /**
   * What the person is told beside the model, in a few words, and the one thing to do (renderNotice
   * makes it one line). Present for the refusals the hook answers with context; a code without one is
   * never told to the person by the hook (a block's reason, a CLI's guidance and a denied tool's reason
   * reach them already, or the model alone needs it).
   */
  readonly notice?: (facts: GuidanceFacts) => string;
}

const q = (value: string | number | undefined, fallback = '<todo>'): string => (value === undefined ? fallback : String(value));

/** `a`, `a or b`, `a, b or c`. */
const either = (items: readonly string[]): string => (items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)!}`);
/** A person's text inside guidance: one line, quoted, bounded, nothing a terminal acts on. */
const quoted = (text: string): string => JSON.stringify(terminalSafe(text.replace(/\s+/g, ' ').trim()).slice(0, 200));
/** Why a Todo is blocked: a person's block (with its reason) and the dependencies it waits on. */
function blockers(f: GuidanceFacts): string {
  const waits = f.waitingOn?.length ? `waits on ${f.waitingOn.join(', ')} (not done yet)` : '';
  const person = f.status === 'blocked' ? `was blocked by a person${f.blockReason ? `: ${quoted(f.blockReason)}` : ''}` : '';
  return [person, waits].filter(Boolean).join(' and ') || 'is blocked';
}
const hasSuggestions = (f: GuidanceFacts): f is GuidanceFacts & { suggestions: readonly string[] } => (f.suggestions?.length ?? 0) > 0;

export const REASONS: Readonly<Record<ReasonCode, ReasonEntry>> = {
  lease_held: {
    conflict: true,
    explain: (f) =>
      f.holderGone
        ? `Todo ${q(f.todo)} is leased to ${q(f.holder, 'another agent')} (epoch ${q(f.epoch, '?')})${f.checkout ? ` in ${f.checkout}` : ''}, whose agent has ${f.holderGone === 'crashed' ? 'crashed mid-turn' : 'exited'}; the lease is kept for it, so nothing was started.`
        : `Todo ${q(f.todo)} is leased to ${q(f.holder, 'another agent')} (epoch ${q(f.epoch, '?')})${f.checkout ? ` in ${f.checkout}` : ''} until ${q(f.expiresAt, '?')}. This turn did not claim it; work on something else or wait.`,
    recover: (f) =>
      f.holderGone && f.capture
        ? `turnkeeper resume ${f.capture}   # pick its turn up; or take the Todo over: turnkeeper release ${q(f.todo)} --force --reason "<why>"`
        : `turnkeeper status   # if the holder is gone for good: turnkeeper release ${q(f.todo)} --force --reason "<why>"`,
    notice: (f) => `Todo ${q(f.todo)} is held by ${q(f.holder, 'another agent')}; nothing was claimed. See: turnkeeper status`,
  },
  lease_expired_hold: {
    conflict: true,
    explain: (f) =>
      `Todo ${q(f.todo)} is still held by ${q(f.holder, 'another agent')} (epoch ${q(f.epoch, '?')})${f.checkout ? ` in ${f.checkout}` : ''}; its lease expired at ${q(f.expiresAt, '?')} but expiry is a hold, not a release. Nothing was taken over automatically.`,
    recover: (f) => `turnkeeper release ${q(f.todo)} --force --reason "take over from ${q(f.holder, 'holder')}"   # then send the prompt again`,
    notice: (f) =>
      `Todo ${q(f.todo)} is still held by ${q(f.holder, 'another agent')} (its lease expired); nothing was claimed. Take it over: turnkeeper release ${q(f.todo)} --force --reason "<why>"`,
  },
  no_turn: {
    conflict: false,
    explain: (f) =>
      `The prompt names Todo ${q(f.todo)}, but ${q(f.agent, 'the agent')} gave this hook no Turn id, so no capture can be bound (a claim without a Turn could not be replayed safely).`,
    recover: () => `export TURNKEEPER_TURN=<unique-turn-id>   # or start the agent through Turnkeeper, which sets it`,
    notice: (f) => `Todo ${q(f.todo)} was not claimed: no Turn id. Start it with: turnkeeper start ${q(f.todo)} --agent ${q(f.agent, '<agent>')}`,
  },
  unknown_todo: {
    conflict: false,
    explain: (f) => `Todo ${q(f.todo)} does not exist in this workspace.${hasSuggestions(f) ? ` Did you mean ${either(f.suggestions)}?` : ''}`,
    recover: (f) =>
      hasSuggestions(f)
        ? `${f.command ?? `send the prompt again with #todo:${f.suggestions[0]!}`}   # or add it: turnkeeper todo add "<title>" --id ${q(f.todo)}`
        : `turnkeeper todo add "<title>" --id ${q(f.todo)}   # or: turnkeeper todo list`,
    notice: (f) =>
      `No Todo ${q(f.todo)} here; nothing was claimed. ${hasSuggestions(f) ? `Did you mean ${either(f.suggestions.map((id) => `#todo:${id}`))}?` : 'List them: turnkeeper todo list'}`,
  },
  todo_not_open: {
    conflict: false,
    explain: (f) => `Todo ${q(f.todo)} is ${q(f.status, 'not open')}; only open Todos can be claimed.`,
    recover: (f) => `turnkeeper todo reopen ${q(f.todo)}   # if it is not finished after all; or pick an open Todo: turnkeeper todo list`,
    notice: (f) => `Todo ${q(f.todo)} is ${q(f.status, 'not open')}; nothing was claimed. Reopen it: turnkeeper todo reopen ${q(f.todo)}`,
  },
  todo_blocked: {
    conflict: false,
    explain: (f) =>
      `Todo ${q(f.todo)} ${blockers(f)}; a blocked Todo is not claimed, so this turn holds no lease. Work on a ready Todo instead (turnkeeper next).`,
    recover: (f) =>
      f.status === 'blocked'
        ? `turnkeeper todo unblock ${q(f.todo)}   # when the block is over; then send the prompt again`
        : `turnkeeper todo done ${f.waitingOn?.[0] ?? '<dependency>'}   # when it is finished; or drop the dependency: turnkeeper todo unblock ${q(f.todo)} --after ${f.waitingOn?.join(' ') ?? '<dependency>'}`,
    notice: (f) => `Todo ${q(f.todo)} ${blockers(f)}; nothing was claimed. Ready Todos: turnkeeper next`,
  },
  session_holds_other: {
    conflict: true,
    explain: (f) =>
      `This session already holds Todo ${q(f.heldTodo)} (capture ${q(f.capture, '?')}, epoch ${q(f.epoch, '?')}); one session works on one Todo at a time, so ${q(f.todo)} was not claimed.`,
    recover: (f) => `turnkeeper todo done ${q(f.heldTodo)}   # or: turnkeeper release ${q(f.heldTodo)} --force --reason "switch"; then prompt again`,
    notice: (f) => `This session holds Todo ${q(f.heldTodo)}; ${q(f.todo)} was not claimed. Finish it: turnkeeper todo done ${q(f.heldTodo)}`,
  },
  capture_released: {
    conflict: true,
    explain: (f) => `Capture ${q(f.capture, '?')} of Todo ${q(f.todo)} (epoch ${q(f.epoch, '?')}) was released; a released capture never comes back.`,
    recover: (f) =>
      `start a new turn that names #todo:${q(f.todo)} (it acquires a new lease; if the Todo was marked done, first: turnkeeper todo reopen ${q(f.todo)}), or read it: turnkeeper show ${q(f.capture, '<captureId>')}`,
    notice: (f) => `Capture ${q(f.capture, '?')} of Todo ${q(f.todo)} was released; nothing was claimed. Name #todo:${q(f.todo)} in a new prompt`,
  },
  not_live_bound: {
    conflict: true,
    explain: (f) =>
      f.capture === undefined && f.launch !== undefined
        ? `TURNKEEPER_LAUNCH=${f.launch} and TURNKEEPER_TODO=${q(f.todo)} are set, but no committed start of ${q(f.todo)} by this agent ties that launch to this session: the environment was copied or is stale.`
        : `TURNKEEPER_CAPTURE=${q(f.capture, '?')} is set, but no committed launch ties that capture to this session: the environment was copied or is stale.`,
    recover: (f) =>
      f.capture === undefined && f.launch !== undefined
        ? `unset TURNKEEPER_LAUNCH TURNKEEPER_TODO TURNKEEPER_TURN   # or start it properly: turnkeeper start ${q(f.todo)} --agent ${q(f.agent, '<agent>')}`
        : `unset TURNKEEPER_CAPTURE TURNKEEPER_TURN   # or resume it properly: turnkeeper resume ${q(f.capture, '<captureId>')}`,
    notice: (f) =>
      f.capture === undefined && f.launch !== undefined
        ? `TURNKEEPER_LAUNCH is stale; nothing was claimed. Start it properly: turnkeeper start ${q(f.todo)} --agent ${q(f.agent, '<agent>')}`
        : `TURNKEEPER_CAPTURE is stale; nothing was claimed. Resume it properly: turnkeeper resume ${q(f.capture, '<captureId>')}`,
  },
  ready_corrupted: {
    conflict: false,
    explain: (f) => `The stored ready capture ${q(f.capture, '?')} no longer matches its digest; it is not re-rendered or re-claimed.`,
    recover: (f) =>
      `turnkeeper verify && turnkeeper show ${q(f.capture, '<captureId>')}   # then: turnkeeper release ${q(f.todo)} --force --reason "ready capture corrupted"`,
    notice: (f) => `Ready capture ${q(f.capture, '?')} fails its digest and was not presented. Check: turnkeeper verify`,
  },
  store_unavailable: {
    conflict: false,
    explain: (f) =>
      `The Turnkeeper store could not be used (${q(f.detail, 'locked or unreadable')}); nothing was claimed and the prompt goes on without context.`,
    recover: () => `turnkeeper doctor   # then send the prompt again`,
    notice: () => `The store could not be used; nothing was claimed. Check: turnkeeper doctor`,
  },
  precondition_changed: {
    conflict: false,
    explain: (f) => `The workspace of capture ${q(f.capture, '?')} changed since its session left it (${q(f.detail, 'git HEAD or status differs')}).`,
    recover: (f) => `turnkeeper resume ${q(f.capture, '<captureId>')} --accept-drift`,
  },
  lease_fenced: {
    conflict: false,
    explain: (f) =>
      `This session's lease on Todo ${q(f.todo)} (epoch ${q(f.epoch, '?')}) was released or taken over; writes from this session are refused so an evicted agent cannot keep editing.`,
    recover: (f) => `turnkeeper status   # then start a new turn that names #todo:${q(f.todo)}`,
  },
  unknown_capture: {
    conflict: false,
    explain: (f) => `There is no capture ${q(f.capture, '?')} in this store.`,
    recover: () => `turnkeeper status   # lists the captures that exist`,
  },
  unbound_capture: {
    conflict: false,
    explain: (f) => `Capture ${q(f.capture, '?')} has no Turn (legacy or imported): it is readable, never executable.`,
    recover: (f) => `turnkeeper show ${q(f.capture, '<captureId>')}   # then start a new turn that names #todo:${q(f.todo)}`,
  },
  lease_moved: {
    conflict: true,
    explain: (f) =>
      `Todo ${q(f.todo)} is now leased to ${q(f.holder, 'another agent')} (epoch ${q(f.epoch, '?')}); capture ${q(f.capture, '?')} lost its lease and cannot be resumed.`,
    recover: (f) => `turnkeeper status   # coordinate with ${q(f.holder, 'the holder')}, or start a new turn that names #todo:${q(f.todo)} once it is released`,
  },
  launch_in_progress: {
    conflict: true,
    explain: (f) =>
      f.capture
        ? `Capture ${f.capture} of Todo ${q(f.todo)} is already running (${q(f.detail, 'an earlier launch is still alive')}); a second agent under the same Owner could not be told apart by fencing, so nothing was started.`
        : `A turn started on Todo ${q(f.todo)} is already running and has not claimed it yet (${q(f.detail, 'an earlier start is still alive')}); a second start would only race it for the lease, so nothing was started.`,
    recover: (f) =>
      f.capture
        ? `use the running agent; once it has exited (or was stopped): turnkeeper resume ${f.capture}`
        : `use the running agent; once it has exited (or was stopped): turnkeeper start ${q(f.todo)} --agent ${q(f.agent, '<agent>')}`,
  },
  invalid_todo_mention: {
    conflict: false,
    explain: (f) =>
      `The prompt says ${q(f.detail, '#todo:…')}, which is not a Todo id, so no Todo was bound and nothing was claimed. A Todo id is ${TODO_ID_RULE}, and the mention is written in lower case: #todo:<id>.`,
    recover: (f) => `turnkeeper todo list   # then send the prompt again with #todo:<id>${f.todo ? ` (perhaps #todo:${f.todo})` : ''}`,
    notice: (f) =>
      `${q(f.detail, '#todo:…')} is not a Todo id; nothing was claimed. ${f.todo ? `Did you mean #todo:${f.todo}?` : 'List them: turnkeeper todo list'}`,
  },
  goal_changed: {
    conflict: true,
    explain: (f) =>
      `This repository (${q(f.checkout, 'this checkout')}) used Goal ${q(f.previousGoal, '?')} until now, but its key now gives Goal ${q(f.goal, '?')} (an origin was added or renamed, or .turnkeeper.json appeared). Nothing was claimed, so the repository is not split into two Goals.`,
    recover: (f) =>
      `turnkeeper goal move --from ${q(f.previousGoal, '<old goal>')}   # carries its Todos, leases and captures to the new Goal; then send the prompt again`,
    notice: (f) => `This repository's Goal changed; nothing was claimed. Carry it over: turnkeeper goal move --from ${q(f.previousGoal, '<old goal>')}`,
  },
  checkout_missing: {
    conflict: false,
    explain: (f) =>
      `Capture ${q(f.capture, '?')} of Todo ${q(f.todo)} ran in ${q(f.checkout, 'a checkout')}, which is gone (a removed worktree?); its agent must resume there, so nothing was started.`,
    recover: (f) =>
      `turnkeeper resume ${q(f.capture, '<captureId>')} --recreate-worktree   # recreates it at its branch (or captured HEAD), then resumes; by hand: ${q(f.command, 'git worktree add <path> <branch>')}`,
  },
  transcript_missing: {
    conflict: false,
    explain: (f) => `The agent's transcript for capture ${q(f.capture, '?')} is gone, so ${q(f.agent, 'the agent')} cannot resume that session.`,
    recover: (f) => `turnkeeper release ${q(f.todo)} --force --reason "transcript lost"   # then start a new turn that names #todo:${q(f.todo)}`,
  },
};

/** Guidance text: the reason code in brackets, the facts, the exact recovering command. */
export function renderGuidance(code: ReasonCode, facts: GuidanceFacts): string {
  const entry = REASONS[code];
  return [`Turnkeeper [${code}]: ${entry.explain(facts)}`, `Recover: ${entry.recover(facts)}`, `See docs/recovery.md#${code}`].join('\n');
}

/**
 * The person's line for a refusal the model is told about (spec §2 "Output"): `Turnkeeper [<code>]:`,
 * what happened in a few words and the one thing to do, on one line with nothing a terminal would act
 * on. Undefined for a code the hook never tells the person about.
 */
export function renderNotice(code: ReasonCode, facts: GuidanceFacts): string | undefined {
  const notice = REASONS[code].notice;
  return notice === undefined ? undefined : terminalSafe(`Turnkeeper [${code}]: ${notice(facts)}`.replace(/\s+/g, ' '));
}
