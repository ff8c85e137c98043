// Entry-point shapes (spec §6) from the first bytes of a file: pure parsing, no I/O.
export type EntryShape =
  | { readonly kind: 'elf-static' }
  | { readonly kind: 'elf-dynamic'; readonly interpreter: string }
  | { readonly kind: 'shebang'; readonly interpreter: string }
  | { readonly kind: 'unknown' };

/**
 * `head` must hold the ELF header and program headers (the first 64 KiB is plenty for any real
 * binary); `readAt` reads further when PT_INTERP points past it.
 */
export function entryShape(head: Buffer, readAt: (offset: number, length: number) => Buffer): EntryShape {
  if (head.length >= 2 && head[0] === 0x23 && head[1] === 0x21) {
    const line = head.subarray(2, Math.min(head.length, 256)).toString('latin1').split('\n')[0] ?? '';
    return { kind: 'shebang', interpreter: line.trim() };
  }
  if (head.length < 64 || head.readUInt32BE(0) !== 0x7f454c46) return { kind: 'unknown' };
  if (head[4] !== 2 || head[5] !== 1) return { kind: 'unknown' }; // 64-bit little-endian only (x64, arm64)
  const type = head.readUInt16LE(16);
  if (type !== 2 && type !== 3) return { kind: 'unknown' }; // ET_EXEC or ET_DYN
  const phoff = Number(head.readBigUInt64LE(32));
  const phentsize = head.readUInt16LE(54);
  const phnum = head.readUInt16LE(56);
  if (phentsize < 56 || phnum > 4096) return { kind: 'unknown' };
  const table = phoff + phnum * phentsize <= head.length ? head.subarray(phoff, phoff + phnum * phentsize) : readAt(phoff, phnum * phentsize);
  for (let i = 0; i < phnum; i += 1) {
    const entry = table.subarray(i * phentsize, (i + 1) * phentsize);
    if (entry.length < 56) return { kind: 'unknown' };
    if (entry.readUInt32LE(0) === 3) {
      // PT_INTERP: the dynamic loader, a NUL-terminated path.
      const offset = Number(entry.readBigUInt64LE(8));
      const size = Number(entry.readBigUInt64LE(32));
      if (size === 0 || size > 4096) return { kind: 'unknown' };
      const bytes = offset + size <= head.length ? head.subarray(offset, offset + size) : readAt(offset, size);
      return { kind: 'elf-dynamic', interpreter: bytes.toString('latin1').replace(/\0.*$/s, '') };
    }
  }
  return { kind: 'elf-static' };
}
