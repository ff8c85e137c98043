// The closed list of code-injection variables (spec §6): environment variables that make the
// launched process run code, or load code from a place, that is not the attested executable. Each
// one is refused unless the caller allows it by name (`--allow-loader-env NAME`), and the decision
// is recorded in the receipt (`loaderEnvironment`). This table is the only place the list lives;
// docs/launcher.md §3 "Injection variables" explains every entry and what was left out.
//
// It covers every runtime a supported agent is built on (Codex: native Rust; Claude Code: Bun;
// Gemini CLI and Copilot CLI: Node) and the runtimes an agent's own tools start (Python, Ruby,
// Perl, Java, Deno): the agent passes its environment on to every command it runs.

export interface InjectionGroup {
  readonly runtime: string;
  /** Exact variable names. */
  readonly names: readonly string[];
  /** Every variable whose name starts with one of these. */
  readonly prefixes: readonly string[];
}

export const INJECTION_VARIABLES: readonly InjectionGroup[] = [
  {
    // ld.so and glibc: preload/audit libraries, library search, loader debugging output files, the
    // tunables parser (CVE-2023-4911), iconv modules (shared objects), locale and message catalogs,
    // malloc's debugging and tracing modes. macOS dyld's equivalents.
    runtime: 'dynamic loader',
    names: ['GLIBC_TUNABLES', 'GCONV_PATH', 'LOCPATH', 'NLSPATH', 'MALLOC_CHECK_', 'MALLOC_PERTURB_', 'MALLOC_TRACE'],
    prefixes: ['LD_', 'DYLD_'],
  },
  {
    // --require/--import and every other flag; module search; a module run instead of the REPL; a
    // directory of V8 code caches the runtime trusts.
    runtime: 'node',
    names: ['NODE_OPTIONS', 'NODE_PATH', 'NODE_REPL_EXTERNAL_MODULE', 'NODE_COMPILE_CACHE'],
    prefixes: [],
  },
  {
    // Claude Code is a Bun executable: BUN_OPTIONS prepends command-line flags (--preload);
    // BUN_INSPECT_PRELOAD preloads a script; the inspector variables open or connect a debugger,
    // which evaluates code; BUN_BE_BUN makes a compiled executable run as the bun CLI.
    runtime: 'bun',
    names: ['BUN_OPTIONS', 'BUN_INSPECT', 'BUN_INSPECT_CONNECT_TO', 'BUN_INSPECT_PRELOAD', 'BUN_BE_BUN'],
    prefixes: [],
  },
  {
    // Deno reads DENO_DIR (its module cache), DENO_V8_FLAGS and more; spec §6 names the prefix.
    runtime: 'deno',
    names: [],
    prefixes: ['DENO_'],
  },
  {
    runtime: 'python',
    names: [
      'PYTHONSTARTUP',
      'PYTHONPATH',
      'PYTHONHOME',
      'PYTHONINSPECT',
      'PYTHONUSERBASE',
      'PYTHONEXECUTABLE',
      'PYTHONPLATLIBDIR',
      'PYTHONBREAKPOINT',
      'PYTHONPYCACHEPREFIX',
    ],
    prefixes: [],
  },
  { runtime: 'ruby', names: ['RUBYOPT', 'RUBYLIB'], prefixes: [] },
  { runtime: 'perl', names: ['PERL5OPT', 'PERL5LIB', 'PERLLIB', 'PERL5DB'], prefixes: [] },
  { runtime: 'java', names: ['JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS', 'CLASSPATH'], prefixes: [] },
];

/** The group a variable name belongs to, or undefined when it is not an injection variable. */
function injectionGroupOf(name: string): InjectionGroup | undefined {
  return INJECTION_VARIABLES.find(
    (group) => group.names.includes(name) || group.prefixes.some((prefix) => name.startsWith(prefix) && name.length > prefix.length),
  );
}

export interface InjectionDecision {
  readonly refused: readonly string[];
  readonly allowed: readonly string[];
  /** What the receipt records: `none`, `allowed: A, B`, or `refused: C; allowed: A` (names only, never values). */
  readonly record: string;
}

/** Sorts the environment's injection variables into refused and explicitly allowed. */
export function decideInjection(env: Readonly<Record<string, string>>, allow: readonly string[] = []): InjectionDecision {
  const allowedNames = new Set(allow);
  const found = Object.keys(env)
    .filter((name) => injectionGroupOf(name) !== undefined)
    .sort();
  const refused = found.filter((name) => !allowedNames.has(name));
  const allowed = found.filter((name) => allowedNames.has(name));
  const parts = [...(refused.length > 0 ? [`refused: ${refused.join(', ')}`] : []), ...(allowed.length > 0 ? [`allowed: ${allowed.join(', ')}`] : [])];
  return { refused, allowed, record: parts.length === 0 ? 'none' : parts.join('; ') };
}

/** `BUN_OPTIONS (bun), LD_PRELOAD (dynamic loader)`: for a refusal's detail. */
export const describeVariables = (names: readonly string[]): string => names.map((name) => `${name} (${injectionGroupOf(name)?.runtime ?? '?'})`).join(', ');
