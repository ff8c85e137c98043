// entryShape (src/launcher/backends/elf.ts) on real files: a dynamic ELF (/bin/sh), the static-pie Codex
// binary, scripts, random bytes, and every truncation of a real ELF header.
import { closeSync, openSync, readFileSync, readSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { entryShape, type EntryShape } from '../../src/launcher/backends/elf';

const REPO = resolve(__dirname, '../..');
const CODEX_BINARY = join(REPO, 'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');

/** What attest() does: the first 64 KiB, and reads past it on demand. */
function shapeOfFile(path: string, headBytes = 65536): { shape: EntryShape; reads: [number, number][] } {
  const fd = openSync(path, 'r');
  const reads: [number, number][] = [];
  try {
    const head = Buffer.alloc(headBytes);
    const got = readSync(fd, head, 0, headBytes, 0);
    const shape = entryShape(head.subarray(0, got), (offset, length) => {
      reads.push([offset, length]);
      const more = Buffer.alloc(length);
      readSync(fd, more, 0, length, offset);
      return more;
    });
    return { shape, reads };
  } finally {
    closeSync(fd);
  }
}

const noRead = (): Buffer => {
  throw new Error('unexpected read past the head');
};

describe('entryShape', () => {
  it('/bin/sh is a dynamic ELF whose PT_INTERP names the system loader', () => {
    const { shape, reads } = shapeOfFile('/bin/sh');
    expect(shape.kind).toBe('elf-dynamic');
    const interpreter = (shape as { interpreter: string }).interpreter;
    expect(interpreter).toMatch(/^\/lib(64)?\/.*ld-linux-x86-64\.so\.2$/);
    expect(interpreter).not.toContain('\0');
    expect(realpathSync(interpreter)).toMatch(/ld-linux-x86-64\.so\.2$/);
    expect(reads).toEqual([]);
  });

  it('the Codex binary is static-pie: ET_DYN without PT_INTERP → elf-static', () => {
    const bytes = Buffer.alloc(64);
    const fd = openSync(CODEX_BINARY, 'r');
    readSync(fd, bytes, 0, 64, 0);
    closeSync(fd);
    expect(bytes.readUInt16LE(16)).toBe(3); // ET_DYN: position independent
    expect(shapeOfFile(CODEX_BINARY).shape).toEqual({ kind: 'elf-static' });
  });

  it('the program headers are read past a short head when needed', () => {
    // A head holding only the ELF header: the table (and PT_INTERP) come through readAt.
    const { shape, reads } = shapeOfFile('/bin/sh', 64);
    expect(shape).toEqual(shapeOfFile('/bin/sh').shape);
    expect(reads.length).toBeGreaterThanOrEqual(2);
  });

  it('shebang scripts report their interpreter line', () => {
    expect(entryShape(Buffer.from('#!/bin/sh\necho hi\n'), noRead)).toEqual({ kind: 'shebang', interpreter: '/bin/sh' });
    expect(entryShape(Buffer.from('#!/usr/bin/env node\nconsole.log(1)\n'), noRead)).toEqual({ kind: 'shebang', interpreter: '/usr/bin/env node' });
    expect(entryShape(Buffer.from('#!'), noRead)).toEqual({ kind: 'shebang', interpreter: '' });
    const shim = readFileSync(join(REPO, 'node_modules/@openai/codex/bin/codex.js'));
    expect(entryShape(shim, noRead).kind).toBe('shebang');
  });

  it('random bytes, empty input and other ELF classes are unknown', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) & 0xff;
    for (let n = 0; n < 200; n += 1) {
      const bytes = Buffer.from(Array.from({ length: 1 + (n % 300) }, random));
      if (bytes[0] === 0x23 && bytes[1] === 0x21) continue;
      expect(entryShape(bytes, () => Buffer.alloc(0)).kind).toBe('unknown');
    }
    expect(entryShape(Buffer.alloc(0), noRead)).toEqual({ kind: 'unknown' });
    const sh = readFileSync('/bin/sh').subarray(0, 65536);
    const elf32 = Buffer.from(sh);
    elf32[4] = 1; // ELFCLASS32
    expect(entryShape(elf32, noRead)).toEqual({ kind: 'unknown' });
    const bigEndian = Buffer.from(sh);
    bigEndian[5] = 2;
    expect(entryShape(bigEndian, noRead)).toEqual({ kind: 'unknown' });
    const relocatable = Buffer.from(sh);
    relocatable.writeUInt16LE(1, 16); // ET_REL
    expect(entryShape(relocatable, noRead)).toEqual({ kind: 'unknown' });
  });

  it('every truncation of a real ELF is either unknown or throws nothing worse than a typed shape', () => {
    const sh = readFileSync('/bin/sh');
    const full = shapeOfFile('/bin/sh').shape;
    // Truncated files: readAt returns what a short file returns (fewer bytes than asked).
    for (let length = 0; length <= 4096; length += length < 128 ? 1 : 61) {
      const file = sh.subarray(0, length);
      const readAt = (offset: number, size: number) => file.subarray(offset, offset + size);
      const shape = entryShape(file, readAt);
      if (length < 64) expect(shape, `length ${length}`).toEqual({ kind: 'unknown' });
      else expect([full.kind, 'unknown', 'elf-static'], `length ${length}`).toContain(shape.kind);
      // A truncated PT_INTERP must never produce a different loader path than the real one.
      if (shape.kind === 'elf-dynamic')
        expect(full).toMatchObject({ interpreter: like.stringMatching(new RegExp(`^${shape.interpreter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)) });
    }
  });

  it('a header claiming an absurd program header table is unknown, not a crash', () => {
    const sh = Buffer.from(readFileSync('/bin/sh').subarray(0, 65536));
    const many = Buffer.from(sh);
    many.writeUInt16LE(5000, 56); // phnum
    expect(entryShape(many, noRead)).toEqual({ kind: 'unknown' });
    const small = Buffer.from(sh);
    small.writeUInt16LE(32, 54); // phentsize too small for Elf64_Phdr
    expect(entryShape(small, noRead)).toEqual({ kind: 'unknown' });
  });
});
