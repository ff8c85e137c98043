// `turnkeeper <command> --help` (spec §8): what the command does, what each of its flags means and
// an example, beside the usage lines main.ts keeps for every form. One entry per command; the test
// (test/integration/cli-help.test.ts) checks that every flag a command's usage names has a
// line here, so a new flag cannot ship without its meaning.
import { AGENTS } from '../core/ids';

export interface CommandHelp {
  /** One sentence: what the command is for. */
  readonly what: string;
  /** Each flag its usage lines name (`--limit`), with what it does for this command. */
  readonly flags: Readonly<Record<string, string>>;
  /** Commands a person would type, first the most common. */
  readonly examples: readonly string[];
}

/** The agents the examples name: the first two Turnkeeper knows (facts about agents live in their profiles). */
const [FIRST, SECOND] = AGENTS;

/** Flags that mean the same on every command that takes them. */
const JSON_FLAG = { '--json': 'print one JSON document (errors too: {"ok":false,"error":{…}}) instead of text' };
const GOAL_FLAG = { '--goal': "the Goal of this directory's repository instead of the current one's" };
const RELEASE_FLAGS = {
  '--owner': 'who asks, as <agent>:<session> (default: the agent session this runs in, if any)',
  '--force': "act on someone else's lease; needs --reason",
  '--reason': 'why, in words: it goes into the receipt',
};

export const HELP: Readonly<Record<string, CommandHelp>> = {
  hook: {
    what: "Runs one agent hook: reads the agent's JSON event on stdin, claims or refuses, answers on stdout. Agents run it; `hooks install` sets it up. It always exits 0.",
    flags: {
      '--agent': 'which agent sent the event (default: recognised from the event itself)',
      '--event': "the event's name, for agents whose events do not carry it (the installed command gives it)",
    },
    examples: [`echo '{"hook_event_name":"UserPromptSubmit",…}' | turnkeeper hook --agent ${FIRST}`],
  },
  'hook-server': {
    what: 'The warm hook server: one per home, started by the first hook and gone when idle, so later hooks answer in milliseconds. `status` says whether it runs, `stop` ends it, `serve` runs it in the foreground.',
    flags: { ...JSON_FLAG },
    examples: ['turnkeeper hook-server status', 'turnkeeper hook-server stop'],
  },
  todo: {
    what: "The Goal's Todos: add them, list them, mark them done (merging their branch back), reopen, block and unblock them.",
    flags: {
      '--id': "the Todo's id (default: made from the title)",
      '--body': 'more text for the agent that works on it',
      '--after': 'the Todos it waits on (it is not ready until they are done); repeat it or give a comma list',
      '--all': 'list the Todos of every Goal in the store',
      '--limit': 'how many done Todos to list (default 50), or all',
      ...RELEASE_FLAGS,
      '--reason': 'why, in words: it goes into the receipt (todo block: why it is blocked)',
      '--merge': "merge the Todo's branch into the main checkout's branch with a merge commit, then mark it done",
      '--squash': "put the Todo's branch on the main checkout's branch as one commit, then mark it done",
      '--rebase': "rebase the Todo's branch onto the main checkout's branch and fast-forward it, then mark it done",
      '--keep-branch': 'mark it done and merge nothing',
      '--remove-worktree': "remove the Todo's worktree, and its branch once all of it is merged (a commit made meanwhile is kept)",
      '--branch': "the Todo's branch (default: todo/<id>, or the branchPrefix of worktrees in config.json)",
      ...GOAL_FLAG,
      ...JSON_FLAG,
    },
    examples: [
      'turnkeeper todo add "Fix login" --id fix-login',
      'turnkeeper todo list',
      'turnkeeper todo done fix-login --merge --remove-worktree',
      'turnkeeper todo block fix-login --reason "waiting for the API"',
    ],
  },
  next: {
    what: 'The Todos an agent could start now (open, dependencies done, not held), oldest first; when none is, why.',
    flags: { '--limit': 'how many to show (default 10)', ...GOAL_FLAG, ...JSON_FLAG },
    examples: ['turnkeeper next', 'turnkeeper next --limit 3 --json'],
  },
  status: {
    what: 'The leases held now and the captures of recent turns, with their Goal, checkout and state (working, waiting, crashed).',
    flags: { '--limit': 'how many captures to show (default 50)', '--all': 'every capture', ...JSON_FLAG },
    examples: ['turnkeeper status', 'turnkeeper status --all --json'],
  },
  show: {
    what: "A capture and its ready capture exactly as the agent was given it, or a Todo's timeline: its claims, its turns and what each changed, its releases.",
    flags: { ...JSON_FLAG },
    examples: ['turnkeeper show fix-login', 'turnkeeper show cap_0123456789abcdef01234567'],
  },
  receipts: {
    what: 'The receipt log, newest first; and what proves it to others: an exported bundle, an attestation of one receipt, inclusion and consistency proofs.',
    flags: {
      '--limit': 'how many receipts to show (default 20)',
      '--before': 'show the receipts before this seq (the next page)',
      '--from': 'export: the first seq to include; consistency: the smaller tree size',
      '--out': 'write to this file instead of stdout',
      '--size': 'prove against the tree of this many receipts (default: the latest checkpoint)',
      '--to': 'consistency: the larger tree size',
      ...JSON_FLAG,
    },
    examples: ['turnkeeper receipts --limit 10', 'turnkeeper receipts export --out chain.bundle', 'turnkeeper receipts prove 42 --json'],
  },
  verify: {
    what: 'Checks the receipt chain here (hashes, signatures, anchor and witness), or an exported bundle or one proof with no store at all.',
    flags: {
      '--bundle': 'check this exported bundle (receipts export) instead of the store',
      '--proof': 'check this inclusion proof (receipts prove --json) against --document',
      '--document': 'the receipt the proof is about',
      '--key': 'a public key (or a file holding one) to trust for checkpoints; repeat it for several',
      ...JSON_FLAG,
    },
    examples: ['turnkeeper verify', 'turnkeeper verify --bundle chain.bundle --key teammate.pub'],
  },
  checkpoint: {
    what: "Signs the chain's head now, into the store and the witness file, so a later rewrite of the chain is caught.",
    flags: { ...JSON_FLAG },
    examples: ['turnkeeper checkpoint'],
  },
  keys: {
    what: "This installation's public key (the private key is never shown), and the teammates' keys it trusts for checkpoints.",
    flags: { '--pem': 'print the public key as PEM', ...JSON_FLAG },
    examples: ['turnkeeper keys show', 'turnkeeper keys trust teammate.pub'],
  },
  release: {
    what: "Releases a Todo's lease: the holder's own release, or a take-over with --force and a reason in the receipt.",
    flags: { ...RELEASE_FLAGS, ...GOAL_FLAG, ...JSON_FLAG },
    examples: ['turnkeeper release fix-login', 'turnkeeper release fix-login --force --reason "the agent crashed"'],
  },
  attest: {
    what: 'What the native launcher would run for this agent binary (the resolved file, its interpreter and closure) and its digest.',
    flags: { ...JSON_FLAG },
    examples: [`turnkeeper attest "$(command -v ${FIRST})"`],
  },
  closures: {
    what: 'The attested snapshots of script-shaped agents (Node and Bun packages) and the disk they use; `prune` removes those nothing uses.',
    flags: { '--all': 'prune: every snapshot no running agent uses, those of agents still installed too', ...JSON_FLAG },
    examples: ['turnkeeper closures', 'turnkeeper closures prune'],
  },
  resume: {
    what: 'Picks an interrupted turn up: the same agent session on the same capture and lease, through the native launcher, or says why it cannot and how to recover.',
    flags: {
      '--dry-run': 'say what would happen, start nothing',
      '--accept-drift': 'resume although the checkout changed since the capture (the change is named first)',
      '--recreate-worktree': "recreate the capture's worktree if it was removed",
      '--agent-bin': 'the agent binary to run (default: found on PATH or in the settings)',
      '--interactive': "the agent's own UI in this terminal (the default at a terminal)",
      '--headless': 'one turn with no UI, its output here (the default in a pipe or CI, with --json and with --prompt)',
      '--prompt': 'the prompt to resume with (default: continue the interrupted turn from where it stopped)',
      '--allow-loader-env': 'let this loader variable (NODE_OPTIONS, LD_PRELOAD, …) through to the agent; repeat for several',
      ...JSON_FLAG,
    },
    examples: ['turnkeeper resume cap_0123456789abcdef01234567', 'turnkeeper resume cap_0123456789abcdef01234567 --dry-run'],
  },
  start: {
    what: 'Starts an agent on a Todo through the native launcher: it attests the binary, commits a launch receipt, then runs the agent, whose first prompt claims the Todo.',
    flags: {
      '--agent': 'which agent to start',
      '--worktree':
        "run it in a worktree of its own, on the Todo's branch (default: <repo>.worktrees/<id> beside the repository; worktrees.location in config.json)",
      '--branch': "the worktree's branch (default: todo/<id>, or the branchPrefix of worktrees in config.json)",
      '--prompt': "the first prompt: the agent runs headless on it, unless --interactive (default: the agent's own UI, you type it)",
      '--interactive': "the agent's own UI in this terminal, --prompt as its first prompt",
      '--headless': 'one turn on --prompt with no UI (what --prompt alone does)',
      '--agent-bin': 'the agent binary to run (default: found on PATH or in the settings)',
      '--allow-loader-env': 'let this loader variable (NODE_OPTIONS, LD_PRELOAD, …) through to the agent; repeat for several',
      ...JSON_FLAG,
    },
    examples: [`turnkeeper start fix-login --agent ${FIRST}`, `turnkeeper start fix-login --agent ${SECOND} --worktree`],
  },
  hooks: {
    what: "Installs, removes or shows Turnkeeper's hooks in an agent's own configuration, for this user or this project.",
    flags: {
      '--agent': 'which agent (status: every agent when left out)',
      '--scope': "user (the agent's config in your home, the default) or project (the repository's)",
      ...GOAL_FLAG,
      ...JSON_FLAG,
    },
    examples: [`turnkeeper hooks install --agent ${FIRST}`, 'turnkeeper hooks status'],
  },
  doctor: {
    what: 'What is installed and what each agent will do with it: hooks, trust, versions, the store, the warm server; each problem with its fix.',
    flags: { ...GOAL_FLAG, ...JSON_FLAG },
    examples: ['turnkeeper doctor'],
  },
  goal: {
    what: "Which Goal (repository) this directory belongs to and why; `init` pins a key for it, `move` carries another Goal's Todos over to it.",
    flags: {
      '--dir': 'the directory to ask about (default: the current one)',
      '--key': 'init: the Goal key to pin in the repository (default: from its origin)',
      '--from': 'move: the Goal whose Todos come over',
      '--rename': 'move: a suffix for the ids that exist in both (they become <id>-<suffix>)',
      ...JSON_FLAG,
    },
    examples: ['turnkeeper goal', 'turnkeeper goal move --from goal_0123456789abcdef01234567'],
  },
  store: {
    what: 'Creates or migrates the store TURNKEEPER_STORE names (SQLite here by default, or a PostgreSQL team store), or copies Todos into another store.',
    flags: {
      '--hook-role': 'a PostgreSQL team store: the role hooks connect as, given only the rights they need',
      '--to': 'copy: the store to copy into (postgres://… or sqlite:<path>)',
      ...JSON_FLAG,
    },
    examples: [
      'TURNKEEPER_STORE=postgres://turnkeeper@db/turnkeeper turnkeeper store init --hook-role tk_hooks',
      'turnkeeper store copy --to sqlite:/tmp/copy.db',
    ],
  },
};
