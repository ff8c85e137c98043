// Every fact about one agent lives in its profile (src/agents/profiles/), every fact about one
// platform in its launch backend (src/launcher/backends/): docs/architecture.md. This test reads
// every source file's code (identifiers and string, template and regular-expression literals; not
// comments, which may name an agent as an example) and lists the files outside those folders that
// name an agent or a platform. The list must be empty but for the exceptions below, each with its
// reason. Adding an agent or a platform should then touch its profile or backend, its tests, and
// the one registry (profiles/index.ts, backends/index.ts) — nothing else.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import ts from 'typescript';
import { AGENTS } from '../../src/core/ids';

const ROOT = resolve(__dirname, '../..');

const AGENT_NAMES = new RegExp(AGENTS.join('|'), 'i');
// The platforms and the facts only one of them has: its process table, its executable format and
// the kernel interfaces the Linux backend parks a launch with.
const PLATFORM_NAMES = /\blinux\b|darwin|macos|win32|\/proc\b|\belf\b|\belf-|execveat|ptrace/i;

const AGENT_HOME = 'src/agents/profiles/';
const PLATFORM_HOME = 'src/launcher/backends/';
const EXCEPTIONS: Readonly<Record<string, string>> = {
  // The closed set of agent ids is a grammar of the spec (§1), checked before anything else; the
  // profiles are keyed by it and core may import nothing outside itself.
  'src/core/ids.ts': 'agent ids',
  // libpq's own rule, which Turnkeeper follows for its pgpass file: no permission check on Windows.
  // A fact of PostgreSQL's client, not of a launch platform.
  'src/store/pgPassword.ts': 'libpq on win32',
};

/** The names `pattern` finds in a file's code, not its comments. */
function namesInCode(file: string, pattern: RegExp): string[] {
  const source = ts.createSourceFile(file, readFileSync(resolve(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    const text =
      ts.isIdentifier(node) || ts.isStringLiteralLike(node) || ts.isRegularExpressionLiteral(node) || ts.isTemplateLiteralToken(node) ? node.text : undefined;
    const match = text === undefined ? null : pattern.exec(text);
    if (match) found.add(match[0].toLowerCase());
    if (ts.isTemplateExpression(node)) {
      visit(node.head);
      for (const span of node.templateSpans) visit(span.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort();
}

const sources = execFileSync('git', ['ls-files', 'src'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file.endsWith('.ts'));

/** `file: name, name` for each file outside `home` whose code names one of `pattern`. */
const outside = (home: string, pattern: RegExp): string[] =>
  sources
    .filter((file) => !file.startsWith(home) && !(file in EXCEPTIONS))
    .map((file) => [file, namesInCode(file, pattern)] as const)
    .filter(([, names]) => names.length > 0)
    .map(([file, names]) => `${file}: ${names.join(', ')}`);

describe('the house: one home per agent and per platform', () => {
  it('no source file outside src/agents/profiles names an agent', () => {
    expect(outside(AGENT_HOME, AGENT_NAMES)).toEqual([]);
  });

  it('no source file outside src/launcher/backends names a platform', () => {
    expect(outside(PLATFORM_HOME, PLATFORM_NAMES)).toEqual([]);
  });

  it('the scan sees what it is for (control: the profiles and backends do name them, and a comment does not count)', () => {
    expect(namesInCode('src/agents/profiles/codex.ts', AGENT_NAMES)).toContain('codex');
    expect(namesInCode('src/launcher/backends/linux.ts', PLATFORM_NAMES)).toEqual(expect.arrayContaining(['/proc', 'linux']));
    // src/launcher/attest.ts mentions Copilot CLI and ELF in comments only.
    expect(readFileSync(resolve(ROOT, 'src/launcher/attest.ts'), 'utf8')).toMatch(/Copilot/);
    expect(namesInCode('src/launcher/attest.ts', AGENT_NAMES)).toEqual([]);
    for (const file of Object.keys(EXCEPTIONS)) expect(sources).toContain(file);
  });
});
