// The packaged .vsix for tests: build it with scripts/package-vsix.mjs, and read it without `unzip`
// (not on every CI image): a vsix is a plain zip, so its central directory and raw-deflate entries are
// enough.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { inflateRawSync } from 'node:zlib';

const ROOT = resolve(__dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
export const vsixPath = (target: string): string => join(ROOT, `${manifest.name}-${target}-${manifest.version}.vsix`);
export const VSIX = vsixPath('linux-x64');

/**
 * Packages the current dist/ (already built by the test run's global setup; `--no-build` so that
 * tests running in parallel never see a bundle being rewritten under them).
 */
export function buildVsix(target = 'linux-x64'): string {
  execFileSync(process.execPath, [join(ROOT, 'scripts/package-vsix.mjs'), '--no-build', '--target', target], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  if (!existsSync(vsixPath(target))) throw new Error(`scripts/package-vsix.mjs did not write ${vsixPath(target)}`);
  return vsixPath(target);
}

export interface ZipEntry {
  readonly name: string;
  readonly method: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localHeader: number;
}

/** Entries of the central directory (no zip64: a vsix is far below 4 GB). */
export function zipEntries(zip: Buffer): ZipEntry[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip: no end-of-central-directory record');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central directory entry at ${at}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    entries.push({
      method: zip.readUInt16LE(at + 10),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      localHeader: zip.readUInt32LE(at + 42),
      name: zip.toString('utf8', at + 46, at + 46 + nameLength),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

export function readEntry(zip: Buffer, entry: ZipEntry): Buffer {
  const header = entry.localHeader;
  const start = header + 30 + zip.readUInt16LE(header + 26) + zip.readUInt16LE(header + 28);
  const raw = zip.subarray(start, start + entry.compressedSize);
  if (entry.method === 0) return Buffer.from(raw);
  if (entry.method === 8) return inflateRawSync(raw);
  throw new Error(`${entry.name}: unsupported compression method ${entry.method}`);
}

/** Extracts every entry under `dir` (modes are not restored: dlopen and node need only read access). */
export function extractZip(zip: Buffer, dir: string): void {
  for (const entry of zipEntries(zip)) {
    if (entry.name.endsWith('/')) continue;
    const target = resolve(dir, entry.name);
    if (!target.startsWith(resolve(dir) + '/')) throw new Error(`zip entry escapes the target: ${entry.name}`);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, readEntry(zip, entry));
  }
}
