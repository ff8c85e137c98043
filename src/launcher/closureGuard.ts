// The load guard of an attested closure (docs/launcher.md §9): a small ES module Node runs before the
// agent's first module, given as a `data:` URL so that its code is part of the attested argv. Its own
// file because it is a program of its own, in its own language (plain JavaScript for the agent's Node,
// no TypeScript, no imports of ours), and because any change to its bytes changes every launch's argv
// digest.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Closure } from './closure';

/**
 * The load guard, passed to Node as `--import data:…` (so its code is part of the attested argv, not
 * a file anyone can rewrite). Before the agent's first module it reads manifest.json, checks that it
 * hashes to the closure digest, and registers synchronous module hooks (module.registerHooks, Node
 * ≥ 22.15): every resolution must land on a file the manifest names (or a `node:` builtin), and every
 * module's source is hashed as loaded and must equal the manifest's digest. Native addons are
 * refused. A runtime without registerHooks exits 78 before any agent code runs.
 */
export function closureGuard(closure: Pick<Closure, 'root' | 'digest'>): string {
  const filesUrl = pathToFileURL(join(closure.root, 'files')).href + '/';
  const code = `import * as m from 'node:module';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
const FILES = ${JSON.stringify(filesUrl)};
const DIGEST = ${JSON.stringify(closure.digest)};
const die = (why) => { process.stderr.write('turnkeeper closure guard: ' + why + '\\n'); process.exit(78); };
if (typeof m.registerHooks !== 'function') die('this Node has no module.registerHooks (needs Node >= 22.15)');
const sha = (bytes) => 'sha256:' + createHash('sha256').update(bytes).digest('hex');
const text = readFileSync(new URL('../manifest.json', FILES));
if (sha(text) !== DIGEST) die('manifest.json does not hash to ' + DIGEST);
const files = new Map(JSON.parse(text.toString('utf8')).map((e) => [e[0], e[1]]));
const refuse = (why) => { const error = new Error('turnkeeper closure guard: ' + why); error.code = 'ERR_TURNKEEPER_CLOSURE'; throw error; };
const named = (url) => {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  if (u.protocol !== 'file:' || !u.href.startsWith(FILES)) return undefined;
  return decodeURIComponent(u.href.slice(FILES.length));
};
m.registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    if (result.url.startsWith('node:')) return result;
    const relative = named(result.url);
    if (relative === undefined || !files.has(relative)) refuse('resolved outside the attested closure: ' + result.url);
    return result;
  },
  load(url, context, next) {
    if (url.startsWith('node:')) return next(url, context);
    const relative = named(url);
    const want = relative === undefined ? undefined : files.get(relative);
    if (want === undefined) refuse('load outside the attested closure: ' + url);
    const result = next(url, context);
    if (result.format === 'addon' || result.format === 'wasm') refuse('native or wasm module not allowed: ' + url);
    const source = result.source == null ? readFileSync(new URL(url)) : result.source;
    const bytes = typeof source === 'string' ? Buffer.from(source) : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
    if (sha(bytes) !== want) refuse('source differs from the attested closure: ' + relative);
    return { ...result, source, shortCircuit: true };
  },
});
`;
  return 'data:text/javascript,' + encodeURIComponent(code);
}
