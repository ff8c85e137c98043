// turnkeeper-hook: the native client of the warm hook path (spec §2 "The warm hook path";
// docs/architecture.md "Warm hook path").
//
// The shim `$TURNKEEPER_HOME/bin/turnkeeper` execs this instead of Node, so a hook costs a connect and a
// few syscalls instead of a Node start when a hook server is running:
//
//     argv: [0]=client [1]=runtime (node) [2]=script (dist/cli.js) [3]="hook" [4..]=hook args
//
// "Cold" is exactly what the shim ran before, execv(runtime, {runtime, script, "hook", args...}) with the
// same environment and stdin, and every problem here ends in it (or in exit 0): an agent must never see
// a broken prompt because of this optimisation. C11 and libc only, so it builds anywhere the addon does
// without a toolchain of its own, and starts in well under a millisecond.

// The build passes -D_GNU_SOURCE (memfd_create, struct ucred); a bare `cc` gets it too.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// The cold hook reads stdin the same way: the first 1 MiB + 1 bytes, so it can tell "too large" apart
// from "exactly 1 MiB"; whatever follows is drained and dropped so the writer never blocks on a pipe.
#define STDIN_KEEP ((size_t)1048577)
// The protocol's ceiling on a request body, and the one this client puts on a response: a peer that
// sends more is broken, and the cold hook can still answer.
#define MAX_BODY ((size_t)64 * 1024 * 1024)
// From the moment the request goes out (its record T): the server takes a request on (record K) only
// within 1 s of it (hookServer.ts TAKE_ON_WITHIN_MS), and this client waits half a second longer for
// the K, then runs the cold hook: a stopped or wedged server costs a hook 1.5 s, and never acts on a
// request this client gave up on. Once taken on, the answer is waited for until the hook's deadline
// (14 s, after which the server commits nothing) and a little more.
#define ACK_WAIT_MS 1500
#define RESPONSE_TIMEOUT_MS 14500
#define WAIT_START_MS 5000
#define WAIT_STEP_MS 10
// A server that could not start leaves <run>/failed; within this window no hook starts another one,
// or a broken installation would fork a doomed server for every single hook.
#define FAILED_FRESH_MS 60000

enum mode { MODE_DEFAULT, MODE_OFF, MODE_WAIT };

static enum mode g_mode = MODE_DEFAULT;
// argv + 1: {runtime, script, argv[3], ...}, NULL-terminated by the kernel: exactly the cold command.
static char **g_cold_argv;
static struct sigaction g_old_sigpipe;
static int g_sigpipe_changed;

// ---- small I/O helpers -----------------------------------------------------------------------------

static int64_t now_ms(void) {
  // CLOCK_MONOTONIC: deadlines must not move when the wall clock is set.
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Writes all of buf to fd, retrying EINTR and short writes and waiting out EAGAIN (an agent may hand
// us a non-blocking stdout). Errors are ignored by the callers: output that cannot be written is lost
// exactly as the cold hook's would be, and the exit code still stands.
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n > 0) {
      buf += n;
      len -= (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, 1000) < 0 && errno != EINTR) return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

// errno's symbolic name (ENOSPC), as Node's messages start with it: the cold hook's line names it too.
static const char *errno_name(int error) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  const char *name = strerrorname_np(error);
  if (name != NULL) return name;
#endif
  static char number[16];
  snprintf(number, sizeof number, "errno %d", error);
  return number;
}

// One stderr line, written in a single write(2) so concurrent hooks do not interleave within a line.
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line - 2 ? (size_t)n : sizeof line - 2;
  line[len++] = '\n';
  (void)write_all(2, line, len);
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v & 0xff);
  p[1] = (unsigned char)((v >> 8) & 0xff);
  p[2] = (unsigned char)((v >> 16) & 0xff);
  p[3] = (unsigned char)((v >> 24) & 0xff);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

// ---- the cold path -----------------------------------------------------------------------------------

// The cold hook must see the process the shim would have given it: SIGPIPE's disposition is inherited
// across execve, so the one this client changed goes back first.
static void restore_signals(void) {
  if (g_sigpipe_changed) sigaction(SIGPIPE, &g_old_sigpipe, NULL);
  g_sigpipe_changed = 0;
}

static void ignore_sigpipe(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPIPE, &sa, &g_old_sigpipe) == 0) g_sigpipe_changed = 1;
}

// In wait mode every fallback says why, so tests and `doctor`-style diagnostics can tell warm from cold;
// by default it is silent, because the agent shows a hook's stderr to the user.
static void note_cold(const char *why) {
  if (g_mode == MODE_WAIT) say("turnkeeper: warm hook path not used: %s; ran the cold hook", why);
}

static _Noreturn void exec_cold(void) {
  restore_signals();
  execv(g_cold_argv[0], g_cold_argv);
  // Fail open: a runtime that cannot be executed is an installation problem the agent cannot fix; the
  // prompt goes on and the line says what happened.
  say("turnkeeper: could not run the cold hook %s: %s", g_cold_argv[0], strerror(errno));
  exit(0);
}

static _Noreturn void cold(const char *why) {
  note_cold(why);
  exec_cold();
}

// The cold path after this client consumed stdin: the cold hook gets the very bytes it would have read.
// A memfd is a seekable regular file, so no process has to stay behind to feed a pipe.
static _Noreturn void cold_with_stdin(const char *why, const char *data, size_t len) {
  note_cold(why);
  int fd = memfd_create("turnkeeper-hook-stdin", 0);
  if (fd >= 0) {
    if (write_all(fd, data, len) == 0 && lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, 0) == 0) {
      if (fd != 0) close(fd);
      exec_cold();
    }
    close(fd);
  }
  // No memfd (old kernel, seccomp): a pipe fed by this process, which waits and passes the exit code on.
  int p[2];
  if (pipe(p) != 0) {
    say("turnkeeper: could not hand stdin to the cold hook: %s", strerror(errno));
    exit(0);
  }
  pid_t pid = fork();
  if (pid < 0) {
    say("turnkeeper: could not start the cold hook: %s", strerror(errno));
    exit(0);
  }
  if (pid == 0) {
    close(p[1]);
    if (p[0] != 0) {
      dup2(p[0], 0);
      close(p[0]);
    }
    exec_cold();
  }
  close(p[0]);
  // SIGPIPE stays ignored here, so a hook that stops reading early costs an EPIPE, not this process.
  (void)write_all(p[1], data, len);
  close(p[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  exit(WIFEXITED(status) ? WEXITSTATUS(status) : 0);
}

// ---- home, trust, socket ---------------------------------------------------------------------------

struct paths {
  char home[PATH_MAX];
  char run[PATH_MAX];
  char failed[PATH_MAX];
  struct sockaddr_un addr;
};

// The same rule as src/store/location.ts: an absolute TURNKEEPER_HOME, else $HOME/.turnkeeper, else the
// passwd entry's home. Returns 0, or -1 with *why set.
static int resolve_paths(struct paths *p, const char **why) {
  const char *env = getenv("TURNKEEPER_HOME");
  int n;
  if (env && env[0] == '/') {
    n = snprintf(p->home, sizeof p->home, "%s", env);
  } else {
    const char *home = getenv("HOME");
    if (!home || !home[0]) {
      struct passwd *pw = getpwuid(geteuid());
      home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !home[0]) {
      *why = "no home directory";
      return -1;
    }
    n = snprintf(p->home, sizeof p->home, "%s/.turnkeeper", home);
  }
  if (n < 0 || (size_t)n >= sizeof p->home) {
    *why = "the home path is too long";
    return -1;
  }
  n = snprintf(p->run, sizeof p->run, "%s/run", p->home);
  if (n < 0 || (size_t)n >= sizeof p->run) {
    *why = "the run path is too long";
    return -1;
  }
  n = snprintf(p->failed, sizeof p->failed, "%s/failed", p->run);
  if (n < 0 || (size_t)n >= sizeof p->failed) {
    *why = "the run path is too long";
    return -1;
  }
  memset(&p->addr, 0, sizeof p->addr);
  p->addr.sun_family = AF_UNIX;
  n = snprintf(p->addr.sun_path, sizeof p->addr.sun_path, "%s/hook.sock", p->run);
  if (n < 0 || (size_t)n >= sizeof p->addr.sun_path) {
    *why = "the socket path does not fit a unix socket address";
    return -1;
  }
  return 0;
}

enum trust { TRUST_OK, TRUST_NO_RUN_DIR, TRUST_BAD };

// Only a home and run dir that no other user can write are trusted: someone who can replace
// run/hook.sock could answer our hooks (SO_PEERCRED below is the second lock on the same door). lstat,
// not stat: a symlinked run dir may point anywhere.
static enum trust check_trust(const struct paths *p, const char **why) {
  struct stat st;
  uid_t me = geteuid();
  if (lstat(p->home, &st) != 0) {
    *why = "the home directory cannot be read";
    return TRUST_BAD;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 022) != 0) {
    *why = "the home is not a directory of ours that only we can write";
    return TRUST_BAD;
  }
  if (lstat(p->run, &st) != 0) {
    if (errno == ENOENT) return TRUST_NO_RUN_DIR;
    *why = "the run directory cannot be read";
    return TRUST_BAD;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 077) != 0) {
    *why = "the run directory is not a directory of ours with mode 0700";
    return TRUST_BAD;
  }
  return TRUST_OK;
}

enum conn { CONN_OK, CONN_NONE, CONN_BAD };

// Non-blocking from the start: a unix connect then never waits (a full backlog is EAGAIN, a busy server
// we treat as unavailable), and the exchange below runs on poll(2) with one deadline.
static enum conn try_connect(const struct paths *p, int *out, const char **why) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = "no socket could be created";
    return CONN_BAD;
  }
  int r;
  do {
    r = connect(fd, (const struct sockaddr *)&p->addr, sizeof p->addr);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    int e = errno;
    close(fd);
    if (e == ENOENT || e == ECONNREFUSED) return CONN_NONE;
    *why = e == EAGAIN ? "the hook server is busy" : "the hook server socket cannot be connected to";
    return CONN_BAD;
  }
  // With fd 0, 1 or 2 closed by the agent the socket would take its number, and the answer's stdout
  // or a stderr line would be written into the socket: move it out of their way (they stay closed).
  if (fd < 3) {
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    if (moved < 0) {
      *why = "no socket could be created";
      return CONN_BAD;
    }
    fd = moved;
  }
  // Defence in depth beside the trust check: whoever put the socket file there, only a server running
  // as our own uid gets our environment and stdin (they carry tokens).
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    close(fd);
    *why = "the hook server's credentials cannot be read";
    return CONN_BAD;
  }
  if (cred.uid != geteuid()) {
    close(fd);
    say("turnkeeper: the hook server socket %s is held by uid %u, not us; not used", p->addr.sun_path,
        (unsigned)cred.uid);
    *why = "the hook server socket is held by another user";
    return CONN_BAD;
  }
  *out = fd;
  return CONN_OK;
}

// A start that failed less than a minute ago (the server leaves <run>/failed) means the next start
// would fail too. A little future skew still counts as fresh (coarse file timestamps); a file far in
// the future does not, so a clock set back cannot disable the warm path for good.
static int failed_recently(const struct paths *p) {
  struct stat st;
  if (lstat(p->failed, &st) != 0) return 0;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t age = ((int64_t)now.tv_sec - (int64_t)st.st_mtim.tv_sec) * 1000 +
                ((int64_t)now.tv_nsec - (int64_t)st.st_mtim.tv_nsec) / 1000000;
  return age > -1000 && age < FAILED_FRESH_MS;
}

// Closes every fd from 3 up: close_range(2) where the kernel has it, else each possible descriptor.
static void close_from_3(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (long fd = 3; fd < max; fd++) close((int)fd);
}

// Starts `runtime script hook-server serve` detached: the double fork leaves it a child of init in a
// session of its own, so the agent's process group signals and its wait for our children never reach
// it. The intermediate child is reaped here, so no zombie outlives this (short) process either.
static int start_server(void) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setsid();
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
    // "/" so the server holds no directory of the agent's busy (an unmountable worktree); /dev/null so
    // it never writes into the agent's pipes, which would keep them open and stall the agent's read.
    if (chdir("/") != 0) _exit(1);
    int null = open("/dev/null", O_RDWR);
    if (null < 0) _exit(1);
    for (int fd = 0; fd < 3; fd++) {
      if (null != fd && dup2(null, fd) < 0) _exit(1);
    }
    close_from_3();
    restore_signals();
    char *argv[] = {g_cold_argv[0], g_cold_argv[1], "hook-server", "serve", NULL};
    execv(argv[0], argv);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    // ECHILD: the agent ignores SIGCHLD, so the kernel reaped the child itself; the fork happened.
    if (errno == ECHILD) return 0;
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

// ---- the warm exchange -----------------------------------------------------------------------------

struct buf {
  unsigned char *data;
  size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t extra) {
  if (b->cap - b->len >= extra) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < extra) {
    if (cap > SIZE_MAX / 2) return -1;
    cap *= 2;
  }
  unsigned char *d = realloc(b->data, cap);
  if (!d) return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

static void buf_record(struct buf *b, char tag, const void *data, size_t len) {
  // build_head reserved the space for every record up front, so this cannot fail.
  b->data[b->len] = (unsigned char)tag;
  put_u32(b->data + b->len + 1, (uint32_t)len);
  memcpy(b->data + b->len + 5, data, len);
  b->len += 5 + len;
}

// Reads stdin to EOF, keeping the first STDIN_KEEP bytes. A read error ends the input like EOF: the
// cold hook, reading the same descriptor, would have seen no more either.
static void read_stdin(struct buf *in) {
  static char drain[65536];
  in->data = malloc(STDIN_KEEP);
  in->cap = in->data ? STDIN_KEEP : 0;
  in->len = 0;
  for (;;) {
    char *dst = in->len < in->cap ? (char *)in->data + in->len : drain;
    size_t room = in->len < in->cap ? in->cap - in->len : sizeof drain;
    ssize_t n = read(0, dst, room);
    if (n > 0) {
      if (dst != drain) in->len += (size_t)n;
    } else if (n == 0) {
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      struct pollfd p = {.fd = 0, .events = POLLIN};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return;
    } else {
      return;
    }
  }
}

enum outcome { OUT_ANSWER, OUT_DECLINE, OUT_DIED, OUT_BROKEN, OUT_TIMEOUT, OUT_UNSENT, OUT_NOT_TAKEN };

struct response {
  struct buf raw;  // every byte the server sent: magic, then records
  size_t parsed;   // how far raw has been split into whole records
  int taken;       // the server took the request on (record K)
  int done;        // a terminal record was parsed
  char terminal;   // 'X' or 'D'
  size_t term_at;  // offset of the terminal record's header
};

// Splits what has arrived into whole records. Returns -1 when the bytes cannot be a v1 response.
static int parse_response(struct response *r) {
  const unsigned char *d = r->raw.data;
  if (r->parsed == 0) {
    if (r->raw.len < 4) return 0;
    if (memcmp(d, "TKR1", 4) != 0) return -1;
    r->parsed = 4;
  }
  while (!r->done && r->raw.len - r->parsed >= 5) {
    char tag = (char)d[r->parsed];
    uint32_t len = get_u32(d + r->parsed + 1);
    if (tag != 'O' && tag != 'E' && tag != 'X' && tag != 'D' && tag != 'K') return -1;
    if (tag == 'X' && len != 4) return -1;
    if (tag == 'K' && len != 0) return -1;
    if (tag == 'K') r->taken = 1;
    if (len > MAX_BODY) return -1;
    if (r->raw.len - r->parsed - 5 < len) return 0;
    if (tag == 'X' || tag == 'D') {
      r->done = 1;
      r->terminal = tag;
      r->term_at = r->parsed;
    }
    r->parsed += 5 + len;
  }
  return 0;
}

// Sends the request (head, then the stdin bytes) and reads the response at the same time, so a server
// that answers (a decline, say) before it has read everything cannot deadlock against us.
static enum outcome exchange(int fd, const struct buf *head, const struct buf *in, int64_t sent_at,
                             struct response *r) {
  size_t total = head->len + in->len, sent = 0;
  int sending = 1;
  memset(r, 0, sizeof *r);
  while (!r->done) {
    if (sent == total) sending = 0;
    int64_t left = sent_at + (r->taken ? RESPONSE_TIMEOUT_MS : ACK_WAIT_MS) - now_ms();
    if (left <= 0) return sent < total ? OUT_UNSENT : r->taken ? OUT_TIMEOUT : OUT_NOT_TAKEN;
    struct pollfd p = {.fd = fd, .events = (short)(POLLIN | (sending ? POLLOUT : 0))};
    int pr = poll(&p, 1, (int)left);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return OUT_DIED;
    }
    if (pr == 0) continue;
    if (sending && (p.revents & POLLOUT)) {
      const unsigned char *src = sent < head->len ? head->data + sent : in->data + (sent - head->len);
      size_t n_left = sent < head->len ? head->len - sent : total - sent;
      ssize_t n = send(fd, src, n_left, MSG_NOSIGNAL);
      if (n > 0) {
        sent += (size_t)n;
      } else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        // EPIPE/ECONNRESET: the server is gone, but it may have answered (a decline) before it went:
        // what it sent is still queued for us, so stop sending and read it (then EOF ends the loop).
        sending = 0;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      if (buf_reserve(&r->raw, 65536) != 0) return OUT_BROKEN;
      ssize_t n = recv(fd, r->raw.data + r->raw.len, r->raw.cap - r->raw.len, 0);
      if (n > 0) {
        r->raw.len += (size_t)n;
        if (r->raw.len > MAX_BODY + 4) return OUT_BROKEN;
        if (parse_response(r) != 0) return OUT_BROKEN;
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
        return OUT_DIED;
      }
    }
  }
  return r->terminal == 'X' ? OUT_ANSWER : OUT_DECLINE;
}

// Builds everything of the request but the stdin bytes: magic, body length, A, C, V and T records and the
// I record's header. Returns -1 (with *why) when the body would pass the protocol's 64 MiB.
static int build_head(struct buf *head, char **hook_args, int n_args, size_t stdin_len, int64_t sent_at,
                      const char **why) {
  char *cwd = getcwd(NULL, 0);  // absent when it fails (a deleted directory): the server then knows
  char sent[24];
  int sent_len = snprintf(sent, sizeof sent, "%lld", (long long)sent_at);
  size_t body = 5 + (size_t)sent_len;
  for (int i = 0; i < n_args; i++) body += 5 + strlen(hook_args[i]);
  if (cwd) body += 5 + strlen(cwd);
  for (char **e = environ; *e; e++) {
    body += 5 + strlen(*e);
    if (body > MAX_BODY) break;
  }
  body += 5 + stdin_len;
  if (body > MAX_BODY) {
    free(cwd);
    *why = "the request would be larger than 64 MiB";
    return -1;
  }
  memset(head, 0, sizeof *head);
  if (buf_reserve(head, 8 + body - stdin_len) != 0) {
    free(cwd);
    *why = "out of memory";
    return -1;
  }
  memcpy(head->data, "TKW1", 4);
  put_u32(head->data + 4, (uint32_t)body);
  head->len = 8;
  for (int i = 0; i < n_args; i++) buf_record(head, 'A', hook_args[i], strlen(hook_args[i]));
  if (cwd) buf_record(head, 'C', cwd, strlen(cwd));
  free(cwd);
  for (char **e = environ; *e; e++) buf_record(head, 'V', *e, strlen(*e));
  buf_record(head, 'T', sent, (size_t)sent_len);
  head->data[head->len] = 'I';
  put_u32(head->data + head->len + 1, (uint32_t)stdin_len);
  head->len += 5;
  return 0;
}

// A decline's reason goes into one stderr line: printable ASCII only, and not too long.
static void decline_reason(const struct response *r, char *out, size_t size) {
  const unsigned char *d = r->raw.data + r->term_at;
  uint32_t len = get_u32(d + 1);
  size_t o = 0;
  for (uint32_t i = 0; i < len && o + 1 < size; i++) {
    unsigned char c = d[5 + i];
    out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  out[o] = 0;
}

static _Noreturn void serve_warm(int fd, char **hook_args, int n_args) {
  struct buf in;
  read_stdin(&in);
  if (!in.data) {
    // Out of memory before anything was kept, and stdin is drained: the cold hook gets what we have.
    cold_with_stdin("out of memory", "", 0);
  }
  struct buf head;
  const char *why = NULL;
  // The request's time (record T): the server takes it on only while this client still waits for that.
  int64_t sent_at = now_ms();
  if (build_head(&head, hook_args, n_args, in.len, sent_at, &why) != 0)
    cold_with_stdin(why, (char *)in.data, in.len);
  ignore_sigpipe();
  struct response r;
  enum outcome o = exchange(fd, &head, &in, sent_at, &r);
  close(fd);
  switch (o) {
    case OUT_ANSWER: {
      // Only now, with the whole answer in hand, does anything reach the agent: a server that died
      // half-way must leave no half of an answer in front of the cold hook's.
      const unsigned char *d = r.raw.data;
      int lost = 0;
      for (size_t at = 4; at < r.term_at;) {
        uint32_t len = get_u32(d + at + 1);
        if (d[at] == 'O') {
          if (!lost && write_all(1, (const char *)d + at + 5, len) != 0) lost = errno;
        } else {
          (void)write_all(2, (const char *)d + at + 5, len);
        }
        at += 5 + len;
      }
      // As the cold hook says it (src/cli/hookCommand.ts): whatever was decided stands, and the
      // session's next hook presents it again.
      if (lost)
        say("turnkeeper hook: could not write the hook output: %s: %s", errno_name(lost), strerror(lost));
      exit((int)(get_u32(d + r.term_at + 5) & 0xff));
    }
    case OUT_DECLINE: {
      char reason[300], line[400];
      decline_reason(&r, reason, sizeof reason);
      snprintf(line, sizeof line, "the hook server declined: %s", reason);
      cold_with_stdin(line, (char *)in.data, in.len);
    }
    case OUT_TIMEOUT:
      // Not cold: the server took the request on and may have committed it before the hook's deadline
      // (after it, it commits nothing); the agent's next hook replays whatever it decided.
      say("turnkeeper: the hook server did not answer within %d s; the hook did nothing this time",
          RESPONSE_TIMEOUT_MS / 1000);
      exit(0);
    case OUT_NOT_TAKEN:
      // The server takes a request on within 1 s of it or never (it declines it then): cold is safe.
      cold_with_stdin("the hook server did not take the request on within 1.5 s (stopped or wedged?)",
                      (char *)in.data, in.len);
    case OUT_UNSENT:
      // The server never received the whole request, so it cannot have acted on it.
      cold_with_stdin("the hook server did not take the request", (char *)in.data, in.len);
    case OUT_BROKEN:
      cold_with_stdin("the hook server's answer was not a v1 response", (char *)in.data, in.len);
    case OUT_DIED:
    default:
      cold_with_stdin("the hook server closed the connection before answering", (char *)in.data, in.len);
  }
}

// ---- main ------------------------------------------------------------------------------------------

int main(int argc, char **argv) {
  if (argc < 3) {
    say("turnkeeper-hook: usage: turnkeeper-hook <runtime> <script> hook [args...]");
    return 0;
  }
  g_cold_argv = argv + 1;
  // Anything but a hook (the shim passes every subcommand through) is not ours to serve.
  if (argc < 4 || strcmp(argv[3], "hook") != 0) exec_cold();

  const char *mode = getenv("TURNKEEPER_WARM");
  if (mode && strcmp(mode, "off") == 0) exec_cold();
  g_mode = mode && strcmp(mode, "wait") == 0 ? MODE_WAIT : MODE_DEFAULT;

  struct paths paths;
  const char *why = NULL;
  if (resolve_paths(&paths, &why) != 0) cold(why);

  enum trust t = check_trust(&paths, &why);
  if (t == TRUST_BAD) cold(why);
  int fd = -1;
  enum conn c = CONN_NONE;
  if (t == TRUST_OK) c = try_connect(&paths, &fd, &why);
  if (c == CONN_BAD) cold(why);

  if (c == CONN_NONE) {
    if (failed_recently(&paths)) cold("a hook server failed to start less than 60 s ago");
    if (start_server() != 0) cold("the hook server could not be started");
    // Default mode: this hook does not pay for the server's start; the next one finds it running.
    if (g_mode != MODE_WAIT) exec_cold();
    int64_t deadline = now_ms() + WAIT_START_MS;
    for (;;) {
      struct timespec step = {0, WAIT_STEP_MS * 1000000L};
      nanosleep(&step, NULL);
      t = check_trust(&paths, &why);
      if (t == TRUST_BAD) cold(why);
      if (t == TRUST_OK) {
        c = try_connect(&paths, &fd, &why);
        if (c == CONN_BAD) cold(why);
        if (c == CONN_OK) break;
      }
      if (now_ms() >= deadline) cold("the hook server did not start within 5 s");
    }
  }
  serve_warm(fd, argv + 4, argc - 4);
}
