// Real programs and a real store for the launcher tests: tiny C programs compiled with `cc` into a
// temp dir, copied fresh for every scenario (attacks mutate them), and a SQLite authority whose
// commit callback writes the `launch_committed` receipt exactly as a caller of launchAttested would.
//
// The victim and the attacker are the same source compiled with a different TAG. When env
// TK_MARKER_DIR is set, the program first copies /proc/self/exe to <dir>/<tag>.exe (the bytes that
// actually ran) and then writes <dir>/<tag>.json atomically: tag, pid, exe link, cwd, argv, what fd 1
// is, isatty(0) and LD_PRELOAD. Its first argument selects a behaviour (exit N, sleep, echo, tty);
// env TK_MODE overrides it (a resumed agent's argv is the agent's own resume command line).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { openSqliteAuthority, type SqliteAuthority } from '../../src/ledger/open';
import type { LaunchFacts } from '../../src/launcher/launch';
import { makeWorld, type World } from '../support/world';

const PROGRAM = String.raw`
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void json_str(FILE *f, const char *s) {
  if (!s) { fputs("null", f); return; }
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); }
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void copy_self(const char *dst) {
  int in = open("/proc/self/exe", O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char buf[65536];
  ssize_t n;
  while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0) if (write(out, buf, (size_t)n) != n) break;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
}

static void link_of(const char *path, char *out, size_t size) {
  ssize_t n = readlink(path, out, size - 1);
  out[n < 0 ? 0 : n] = 0;
}

int main(int argc, char **argv) {
  const char *dir = getenv("TK_MARKER_DIR");
  if (dir) {
    char exe[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX], self[PATH_MAX], fd1[PATH_MAX], cwd[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/%s.exe", dir, TAG);
    copy_self(exe);
    link_of("/proc/self/exe", self, sizeof self);
    link_of("/proc/self/fd/1", fd1, sizeof fd1);
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    snprintf(tmp, sizeof tmp, "%s/%s.json.tmp", dir, TAG);
    snprintf(path, sizeof path, "%s/%s.json", dir, TAG);
    FILE *f = fopen(tmp, "w");
    if (f) {
      fprintf(f, "{\"tag\":\"%s\",\"pid\":%d,\"isatty\":%d,\"exe\":", TAG, (int)getpid(), isatty(0));
      json_str(f, self);
      fputs(",\"cwd\":", f); json_str(f, cwd);
      fputs(",\"stdout\":", f); json_str(f, fd1);
      fputs(",\"ldPreload\":", f); json_str(f, getenv("LD_PRELOAD"));
      fputs(",\"argv\":[", f);
      for (int i = 0; i < argc; i++) { if (i) fputc(',', f); json_str(f, argv[i]); }
      fputs("]}", f);
      fclose(f);
      rename(tmp, path);
    }
  }
  const char *mode = getenv("TK_MODE") ? getenv("TK_MODE") : argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "exit")) return argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "sleep")) { for (;;) pause(); }
  if (!strcmp(mode, "echo")) {
    static char buf[65536];
    size_t used = 0;
    ssize_t n;
    while (used < sizeof buf - 1 && (n = read(0, buf + used, sizeof buf - 1 - used)) > 0) used += (size_t)n;
    buf[used] = 0;
    printf("out:%s", buf);
    fprintf(stderr, "err:%s", buf);
    return 0;
  }
  if (!strcmp(mode, "tty")) {
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
      if (line[0] == 'q') return 0;
      struct winsize ws;
      memset(&ws, 0, sizeof ws);
      ioctl(0, TIOCGWINSZ, &ws);
      printf("[tty=%d cols=%d rows=%d]\n", isatty(0), ws.ws_col, ws.ws_row);
      fflush(stdout);
    }
    return 0;
  }
  return 0;
}
`;

const PRELOAD = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
__attribute__((constructor)) static void injected(void) {
  const char *dir = getenv("TK_MARKER_DIR");
  if (!dir) return;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/preload.json", dir);
  FILE *f = fopen(path, "w");
  if (f) { fputs("{\"tag\":\"preload\"}", f); fclose(f); }
}
`;

export interface Fixtures {
  /** Root temp dir; everything else lives under it. */
  readonly root: string;
  readonly victim: string;
  readonly attacker: string;
  readonly preload: string;
  readonly victimDigest: string;
  readonly attackerDigest: string;
  cleanup(): void;
}

export const sha256File = (path: string): string => 'sha256:' + createHash('sha256').update(readFileSync(path)).digest('hex');

/** Compiles the victim, the attacker and an LD_PRELOAD library once per test file. */
export function buildFixtures(name = 'tk-launch'): Fixtures {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `${name}-`)));
  const src = join(root, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'program.c'), PROGRAM);
  writeFileSync(join(src, 'preload.c'), PRELOAD);
  const victim = join(src, 'victim');
  const attacker = join(src, 'attacker');
  const preload = join(src, 'preload.so');
  execFileSync('cc', ['-O1', '-DTAG="victim"', '-o', victim, join(src, 'program.c')]);
  execFileSync('cc', ['-O1', '-DTAG="attacker"', '-o', attacker, join(src, 'program.c')]);
  execFileSync('cc', ['-O1', '-shared', '-fPIC', '-o', preload, join(src, 'preload.c')]);
  return {
    root,
    victim,
    attacker,
    preload,
    victimDigest: sha256File(victim),
    attackerDigest: sha256File(attacker),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let counter = 0;

export interface Scene {
  /** Directory for this scenario: the executable copies, markers and the database live here. */
  readonly dir: string;
  /** Where the programs write their markers (passed as TK_MARKER_DIR). */
  readonly markers: string;
  /** A fresh copy of the victim (mode 0755), the path that gets attested. */
  readonly victim: string;
  /** A fresh copy of the attacker in the same directory (so rename(2) can replace the victim). */
  readonly attacker: string;
}

/** Fresh, private copies for one scenario. Waits a few ms so a later change cannot share a timestamp tick. */
export async function scene(fx: Fixtures): Promise<Scene> {
  const dir = join(fx.root, `scene-${process.pid}-${++counter}`);
  const markers = join(dir, 'markers');
  mkdirSync(markers, { recursive: true });
  const victim = join(dir, 'agent');
  const attacker = join(dir, 'evil');
  copyFileSync(fx.victim, victim);
  copyFileSync(fx.attacker, attacker);
  chmodSync(victim, 0o755);
  chmodSync(attacker, 0o755);
  await sleep(12);
  return { dir, markers, victim, attacker };
}

export interface Marker {
  readonly tag: string;
  readonly pid: number;
  readonly isatty: number;
  readonly exe: string;
  readonly cwd: string;
  readonly stdout: string;
  readonly ldPreload: string | null;
  readonly argv: string[];
}

export function readMarker(markers: string, tag: 'victim' | 'attacker'): Marker | undefined {
  const file = join(markers, `${tag}.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Marker) : undefined;
}

/** The sha256 of the bytes the program found at /proc/self/exe while it ran. */
export const ranDigest = (markers: string, tag: 'victim' | 'attacker'): string => sha256File(join(markers, `${tag}.exe`));

export const preloadRan = (markers: string): boolean => existsSync(join(markers, 'preload.json'));

export { waitFor } from '../support/waitFor';

interface LaunchReceipt {
  readonly seq: number;
  readonly kind: string;
  readonly detail: Record<string, string | number | boolean | null>;
}

/**
 * A real SQLite store and the commit/refusal callbacks a caller of launchAttested passes. The two
 * callbacks are function properties, not methods: tests hand them over detached (`commit: store.commit`).
 */
export interface ReceiptStore {
  readonly path: string;
  readonly store: SqliteAuthority;
  readonly commit: (facts: LaunchFacts) => Promise<{ seq: number; hash: string }>;
  readonly recordRefusal: (reason: string, detail: string, facts: Partial<LaunchFacts>) => Promise<void>;
  receipts(): Promise<LaunchReceipt[]>;
  committed(): Promise<LaunchReceipt[]>;
  close(): void;
}

const GOAL = '/turnkeeper/launcher-tests';

export async function receiptStore(path: string, options: { busyTimeoutMs?: number; open?: typeof openSqliteAuthority } = {}): Promise<ReceiptStore> {
  const open = options.open ?? openSqliteAuthority;
  const store = (await open({ path, create: true, busyTimeoutMs: options.busyTimeoutMs ?? 5000 }))!;
  const receipts = async (): Promise<LaunchReceipt[]> => {
    // Read through a fresh connection: the receipt must be in the file, not only in this handle.
    const reader = await openSqliteAuthority({ path, create: false });
    if (!reader) return [];
    try {
      const rows = await reader.receipts({ limit: 100_000 });
      return rows
        .map((row) => JSON.parse(row.doc) as { seq: number; kind: string; detail?: LaunchReceipt['detail'] })
        .map((doc) => ({ seq: doc.seq, kind: doc.kind, detail: doc.detail ?? {} }))
        .sort((a, b) => a.seq - b.seq);
    } finally {
      reader.close();
    }
  };
  return {
    path,
    store,
    commit: (facts) =>
      store.appendReceipt(
        {
          kind: 'launch_committed',
          goal: GOAL,
          detail: {
            pid: facts.pid,
            digest: facts.digest,
            dev: facts.identity.dev,
            ino: facts.identity.ino,
            argv: JSON.stringify(facts.argv),
            argvDigest: facts.argvDigest,
            envDigest: facts.envDigest,
            cwd: facts.cwd,
            loaderEnvironment: facts.loaderEnvironment,
          },
        },
        Date.now(),
      ),
    recordRefusal: async (reason, detail, facts) => {
      await store.appendReceipt(
        {
          kind: 'launch_refused',
          goal: GOAL,
          detail: {
            reason,
            why: detail.slice(0, 300),
            digest: facts.digest ?? null,
            pid: facts.pid ?? null,
            loaderEnvironment: facts.loaderEnvironment ?? null,
          },
        },
        Date.now(),
      );
    },
    receipts,
    committed: async () => (await receipts()).filter((receipt) => receipt.kind === 'launch_committed'),
    close: () => store.close(),
  };
}

/** Is `pid` still a live (non-zombie) process? */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export interface LaunchScene {
  /** This test's world and scene (set before each test). */
  readonly current: { readonly world: World; readonly scene: Scene };
  /** Pids a test started: each is SIGKILLed after the test. */
  readonly pids: number[];
  /** A store of this test's world, closed after the test. A function property: test files destructure it. */
  readonly openStore: () => Promise<SqliteAuthority>;
}

/**
 * For a launcher test file: the compiled programs once (`name`), and before each test a fresh world
 * (prepared by `prepare`, e.g. a Todo added) and a fresh scene; after each test its launched pids are
 * killed, its stores closed and its world removed.
 */
export function useLaunchScene(name: string, prepare: (world: World) => void | Promise<void> = () => {}): LaunchScene {
  let fx: Fixtures | undefined;
  let world: World | undefined;
  let fresh: Scene | undefined;
  const pids: number[] = [];
  const stores: SqliteAuthority[] = [];
  beforeAll(() => {
    fx = buildFixtures(name);
  });
  afterAll(() => fx?.cleanup());
  beforeEach(async () => {
    world = makeWorld(name);
    await prepare(world);
    fresh = await scene(fx!);
  });
  afterEach(() => {
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const store of stores.splice(0)) store.close();
    world?.cleanup();
    world = fresh = undefined;
  });
  const launchScene: LaunchScene = {
    get current() {
      if (!world || !fresh) throw new Error('useLaunchScene: the world and scene exist only inside a test');
      return { world, scene: fresh };
    },
    pids,
    openStore: async () => {
      const store = await launchScene.current.world.store();
      stores.push(store);
      return store;
    },
  };
  return launchScene;
}
