// Fails when a command in package.json `contributes.commands` has no registration in
// src/extension/commands.ts, or a registered command is not contributed (as
// vscode-pull-request-github's scripts/check-commands.js does). Menus may only name known commands.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
const source = readFileSync('src/extension/commands.ts', 'utf8');
const table = source.slice(source.indexOf('export const COMMANDS'), source.indexOf('};', source.indexOf('export const COMMANDS')));
const registered = new Set([...table.matchAll(/^\s*'(turnkeeper\.[A-Za-z]+)':/gm)].map((match) => match[1]));
const contributed = new Set(manifest.contributes.commands.map((command) => command.command));
const inMenus = Object.values(manifest.contributes.menus)
  .flat()
  .map((entry) => entry.command);

const problems = [
  ...[...contributed].filter((id) => !registered.has(id)).map((id) => `contributed but never registered: ${id}`),
  ...[...registered].filter((id) => !contributed.has(id)).map((id) => `registered but not contributed: ${id}`),
  ...inMenus.filter((id) => !contributed.has(id)).map((id) => `a menu names an unknown command: ${id}`),
];
if (registered.size === 0) problems.push('found no registrations in src/extension/commands.ts: has the COMMANDS table moved?');
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`commands check: ${registered.size} commands, each registered and contributed`);
