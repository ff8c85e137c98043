// docs/spec.md is the specification the code cites (`spec §2 rule 4`, `spec §4 "Selection"`). Every
// citation in src must land on something that exists: the section's heading, the rule in §2's
// decision table, the named paragraph in that section. And nothing cites the old contract by section.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const spec = readFileSync(join(ROOT, 'docs/spec.md'), 'utf8');

/** Section number -> its text (from its `## n. Title` heading to the next `## `). */
const sections = new Map<number, string>();
for (const match of spec.matchAll(/^## (\d+)\. .*$/gm)) {
  const start = match.index;
  const next = spec.indexOf('\n## ', start + 1);
  sections.set(Number(match[1]), spec.slice(start, next === -1 ? undefined : next));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|cjs|mjs|js|cc|h)$/.test(name))
    .map((name) => join(dir, name));
}

interface Citation {
  readonly where: string;
  readonly section: number;
  readonly rule?: number;
  readonly name?: string;
}

/** `spec §2`, `spec §2 rule 4`, `spec §2, §7`, `spec §4 "Selection"`, `Spec §6 …` (any case). */
function citations(): Citation[] {
  const found: Citation[] = [];
  for (const file of [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'native/src'))]) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, index) => {
      for (const match of line.matchAll(/spec ((?:§\d+(?:,\s*|\s+and\s+)?)+)(?:\s+rule\s+(\d+))?(?:\s+"([^"]+)")?/gi)) {
        const numbers = [...match[1]!.matchAll(/§(\d+)/g)].map((number) => Number(number[1]));
        const where = `${relative(ROOT, file)}:${index + 1}`;
        numbers.forEach((section, position) => {
          const last = position === numbers.length - 1;
          found.push({ where, section, ...(last && match[2] ? { rule: Number(match[2]) } : {}), ...(last && match[3] ? { name: match[3] } : {}) });
        });
      }
    });
  }
  return found;
}

describe('docs/spec.md', () => {
  it('has the ten numbered sections, in order', () => {
    expect([...sections.keys()]).toStrictEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('has every section, rule and named paragraph that src cites', () => {
    const all = citations();
    expect(all.length).toBeGreaterThan(20); // the code does cite it
    const missing = all.filter((citation) => {
      const text = sections.get(citation.section);
      if (text === undefined) return true;
      if (citation.rule !== undefined && !new RegExp(`^${citation.rule}\\. \\*\\*`, 'm').test(text)) return true;
      if (citation.name !== undefined && !text.includes(`**${citation.name}`)) return true;
      return false;
    });
    expect(missing).toStrictEqual([]);
  });

  it('is what src cites: no comment cites the old contract by section any more', () => {
    const stale = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'native/src'))].flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, index) => ({ where: `${relative(ROOT, file)}:${index + 1}`, line }))
        .filter(({ line }) => /contract\b[^.\n]{0,12}§|contract rule/i.test(line)),
    );
    expect(stale).toStrictEqual([]);
  });
});
