// A read-only npm registry on 127.0.0.1 that serves the packages package-lock.json pins, each from the
// very tarball `npm ci` left in npm's cache (content-addressed by the lockfile's integrity), so a test
// can run a real `npm install` without the network.
//
// Why not `npm install --offline` against that cache: `npm ci` fetches the abbreviated ("corgi")
// packuments, and npm 11's install builds its tree from the full ones (build-ideal-tree asks for
// fullMetadata), which its cache keeps apart by Accept header: on a machine whose cache only `npm ci`
// filled, `--offline` fails with ENOTCACHED. Here the packument is written from the lockfile (name,
// version, integrity) and the installed package.json (dependencies, engines, bin), and the tarball
// is the cached original, whose integrity npm checks as it would from the registry.
//
// Packages the lockfile does not pin, or whose tarball is not in the cache, are 404 and listed in
// `missing`, so a test can say what it would have fetched.
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLoopbackServer } from './loopbackServer';

export interface LockfileRegistry {
  /** http://127.0.0.1:<port>/ (for --registry). */
  readonly url: string;
  /** Every request path, in order. */
  readonly requests: string[];
  /** Packument or tarball requests it could not answer. */
  readonly missing: string[];
  close(): Promise<void>;
}

interface Pinned {
  manifest: Record<string, unknown>;
  integrity: string;
}

/** `sha512-<base64>` → the file in npm's content-addressed cache (cacache's content-v2 layout). */
function cachedTarball(npmCache: string, integrity: string): string {
  const [algorithm, digest] = integrity.split(/\s+/)[0]!.split(/-(.*)/s) as [string, string];
  const hex = Buffer.from(digest, 'base64').toString('hex');
  return join(npmCache, '_cacache', 'content-v2', algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

const compareVersions = (a: string, b: string): number => {
  const parts = (v: string) => v.split(/[-+]/)[0]!.split('.').map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
};

/**
 * `checkout`: the directory of package-lock.json and its installed node_modules; `npmCache`: npm's
 * cache directory (`npm config get cache`).
 */
export async function startLockfileRegistry(checkout: string, npmCache: string): Promise<LockfileRegistry> {
  const lock = JSON.parse(readFileSync(join(checkout, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; integrity?: string; name?: string }>;
  };
  const pinned = new Map<string, Map<string, Pinned>>();
  for (const [key, entry] of Object.entries(lock.packages)) {
    const name = entry.name ?? /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key)?.[1];
    const installed = join(checkout, key, 'package.json');
    if (!name || !entry.version || !entry.integrity || !existsSync(installed)) continue;
    const manifest = JSON.parse(readFileSync(installed, 'utf8')) as Record<string, unknown>;
    for (const field of Object.keys(manifest)) if (field.startsWith('_')) delete manifest[field];
    if (!pinned.has(name)) pinned.set(name, new Map());
    pinned.get(name)!.set(entry.version, { manifest: { ...manifest, name, version: entry.version }, integrity: entry.integrity });
  }

  const requests: string[] = [];
  const missing: string[] = [];
  let base = '';
  const server = await startLoopbackServer((req, _raw, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    const notFound = () => {
      missing.push(path);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not pinned by package-lock.json, or not in the npm cache"}');
    };
    const tarball = /^\/-\/tarball\/(.+)\/([^/]+)\.tgz$/.exec(path);
    if (tarball) {
      const pin = pinned.get(decodeURIComponent(tarball[1]!))?.get(decodeURIComponent(tarball[2]!));
      const file = pin && cachedTarball(npmCache, pin.integrity);
      if (!file || !existsSync(file)) return notFound();
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      createReadStream(file).pipe(res);
      return;
    }
    const versions = pinned.get(decodeURIComponent(path.slice(1)));
    if (!versions) return notFound();
    const name = decodeURIComponent(path.slice(1));
    const documents = Object.fromEntries(
      [...versions].map(([version, pin]) => [
        version,
        { ...pin.manifest, dist: { integrity: pin.integrity, tarball: `${base}-/tarball/${encodeURIComponent(name)}/${version}.tgz` } },
      ]),
    );
    const latest = [...versions.keys()].sort(compareVersions).at(-1)!;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, 'dist-tags': { latest }, versions: documents }));
  });
  base = `http://127.0.0.1:${server.port}/`;
  return { url: base, requests, missing, close: () => server.close() };
}
