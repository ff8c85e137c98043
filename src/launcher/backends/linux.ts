// The Linux launch backend, JavaScript half (docs/launcher.md §2, §3): ELF entry shapes read through
// the retained descriptor, the /proc checks at the exec boundary (the mapped image and loader), the
// process facts liveness needs (/proc/<pid>/stat start time, the boot id), and the process list
// doctor searches for an agent's shared daemon (/proc/<pid>/cmdline, environ). The native half is
// native/src/linux_spawn.cc.
import { readdirSync, readFileSync, readSync } from 'node:fs';
import { entryShape } from './elf';
import { sameIdentity } from '../identity';
import { nativeLauncher } from '../native';
import type { LaunchBackend } from './index';

/** The Rust target triples native agents vendor for Linux (statically linked musl builds). */
const RUST_TARGETS: Readonly<Record<string, string>> = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };

let bootId: string | null | undefined;
let machine: string | null | undefined;

export const linuxBackend: LaunchBackend = {
  name: 'linux',
  native: nativeLauncher,
  entryShape(fd, size) {
    const head = Buffer.alloc(Math.min(65536, size));
    readSync(fd, head, 0, head.length, 0);
    const shape = entryShape(head, (offset, length) => {
      const more = Buffer.alloc(length);
      readSync(fd, more, 0, length, offset);
      return more;
    });
    if (shape.kind === 'elf-static') return { kind: 'native', entrypoint: shape.kind };
    if (shape.kind === 'elf-dynamic') return { kind: 'native', entrypoint: shape.kind, interpreter: shape.interpreter };
    return shape.kind === 'shebang' ? { kind: 'script', interpreter: shape.interpreter } : { kind: 'unknown' };
  },
  imageMismatch(pid, attestation, parkedExe) {
    // Checked now, not only when it parked: a child that died meanwhile (a zombie has no exe) gets no receipt.
    const exeNow = nativeLauncher().statPath(`/proc/${pid}/exe`);
    for (const exe of [parkedExe, exeNow]) {
      if (!exe || exe.dev !== attestation.identity.dev || exe.ino !== attestation.identity.ino)
        return `/proc/${pid}/exe is not the attested object (or the child is gone)`;
    }
    return undefined;
  },
  loaderMismatch(pid, loader) {
    const now = nativeLauncher().statPath(loader.path);
    if (!mappedObjects(pid).has(`${loader.identity.dev}:${loader.identity.ino}`) || !now || !sameIdentity(loader.identity, now)) {
      return `the dynamic loader ${loader.path} mapped at the exec boundary is not the attested one`;
    }
    return undefined;
  },
  processStart(pid) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return undefined;
    }
    // The command name (field 2) is in parentheses and may hold spaces or ')': split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    if (state === 'Z' || state === 'X' || state === 'x') return undefined;
    return fields[19];
  },
  processStopped(pid) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return /^[Tt]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
    } catch {
      return undefined;
    }
  },
  currentBoot() {
    if (bootId === undefined) {
      try {
        bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
      } catch {
        bootId = null;
      }
    }
    return bootId;
  },
  packagePlatform: () => ({ npm: `linux-${process.arch}`, rustTarget: RUST_TARGETS[process.arch] }),
  machineId() {
    // systemd's, else D-Bus's copy (older or non-systemd systems): unique per installation, unlike a
    // host name that cloned VMs and containers share.
    if (machine === undefined) {
      machine = null;
      for (const path of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
        try {
          machine = readFileSync(path, 'utf8').trim() || null;
        } catch {
          // not here
        }
        if (machine) break;
      }
    }
    return machine;
  },
  processes() {
    let names: string[];
    try {
      names = readdirSync('/proc');
    } catch {
      return undefined;
    }
    const found = [];
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      let cmdline: string;
      try {
        cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      // NUL-terminated arguments; a kernel thread has none.
      const argv = cmdline.split('\0');
      if (argv.at(-1) === '') argv.pop();
      if (argv.length === 0) continue;
      const pid = Number(name);
      found.push({ pid, argv, environ: () => environOf(pid) });
    }
    return found;
  },
};

/** /proc/<pid>/environ as variables; undefined when it cannot be read (another user's process, or gone). */
function environOf(pid: number): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  const environ: Record<string, string> = {};
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) environ[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return environ;
}

/**
 * The files a parked process has mapped, as `dev:ino` with dev in the kernel's st_dev encoding
 * (/proc/<pid>/maps prints it as hex major:minor). At the exec boundary that is the image and its loader.
 */
function mappedObjects(pid: number): Set<string> {
  const objects = new Set<string>();
  let maps = '';
  try {
    maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {
    return objects;
  }
  for (const line of maps.split('\n')) {
    const [, , , device, inode] = line.split(/\s+/);
    if (!device || !inode || inode === '0') continue;
    const [major, minor] = device.split(':').map((part) => BigInt(parseInt(part, 16)));
    // glibc's makedev for a 64-bit dev_t.
    const dev = ((major! & 0xfffff000n) << 32n) | ((major! & 0xfffn) << 8n) | ((minor! & 0xffffff00n) << 12n) | (minor! & 0xffn);
    objects.add(`${dev}:${inode}`);
  }
  return objects;
}
