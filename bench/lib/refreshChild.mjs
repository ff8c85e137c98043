// One process of row L2: opens a store and runs `iterations` extension refreshes in a row, as
// src/extension/ctx.ts doRefresh reads and shows them (the status snapshot of the Goal with its page
// of captures, open, blocked and a page of done Todos, the three views' nodes, TreeModel.update),
// then prints each refresh's wall time and the process's peak RSS. Run by bench/lib/live.mjs, in
// its own process so the RSS is the refresh's, not the seeding's.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const [bundle, db, goal, iterations] = process.argv.slice(2);
const product = createRequire(import.meta.url)(bundle);
const DONE_PAGE = 50; // as ctx.ts
const store = await product.openSqliteAuthority({ path: db, create: false });
const models = { todos: new product.TreeModel(), captures: new product.TreeModel(), leases: new product.TreeModel() };
const times = [];
let shown = 0;
for (let i = 0; i < Number(iterations); i += 1) {
  const started = performance.now();
  const now = Date.now();
  const snapshot = await product.statusSnapshot(store, now, { goal, recent: product.RECENT_CAPTURES });
  const [open, blocked, done] = await Promise.all([
    store.todosWithStatus('open', goal),
    store.todosWithStatus('blocked', goal),
    store.todosWithStatus('done', goal, DONE_PAGE + 1),
  ]);
  const olderDone = done.length > DONE_PAGE;
  if (olderDone) done.shift();
  const todos = [...open, ...blocked, ...done];
  models.todos.update(product.todoNodes(todos, snapshot, now, olderDone));
  models.captures.update(product.captureNodes(snapshot, now));
  models.leases.update(product.leaseNodes(snapshot, now));
  times.push(performance.now() - started);
  shown = todos.length + snapshot.captures.length + snapshot.leases.length;
}
store.close();
// VmHWM, this process's own peak since its exec. getrusage's maxrss is kept across execve on Linux:
// it starts at the RSS of the bench process that spawned this one, the seeding's, whenever that was
// the larger (test/integration/bundle-memory.test.ts found it so).
function ownPeakKiB() {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (hwm !== undefined) return Number(hwm);
  } catch {
    // no /proc: getrusage's figure, with the caveat above
  }
  return process.resourceUsage().maxRSS;
}
const peakKiB = ownPeakKiB();
process.stdout.write(JSON.stringify({ times, shown, maxRssKiB: peakKiB }) + '\n');
