#!/bin/bash
# One cold hook alone, in CPU-seconds (docs/testing.md, "One cold claim, alone"): 12 claims of fresh
# sessions and 12 next Turns of their holders on SQLite, in a 200-file repository, each
# `node dist/cli.js hook` under /usr/bin/time; prints the medians and the git runs of a refused claim.
#   bash bench/cold-claim.sh [label]      (after npm run build; needs strace for the last line)
set -e
TK=$(cd "$(dirname "$0")/.." && pwd); N=$TK/node_modules/.bin/node; CLI=$TK/dist/cli.js
W=$(mktemp -d "${TMPDIR:-/tmp}/tk-cold-claim.XXXXXX"); trap 'rm -rf "$W"' EXIT; export HOME=$W/home TURNKEEPER_HOME=$W/tkhome; mkdir -p $HOME
git init -q $W/repo; cd $W/repo; git config user.email a@b; git config user.name a
for i in $(seq 1 200); do echo $i > f$i; done; git add .; git commit -qm init
git remote add origin https://example.invalid/x.git
for i in $(seq 1 12); do $N $CLI todo add "todo $i" --id todo-$i >/dev/null; done
p() { printf '{"session_id":"%s","turn_id":"%s","transcript_path":"/tmp/x.jsonl","cwd":"%s","hook_event_name":"UserPromptSubmit","model":"m","permission_mode":"default","prompt":"%s"}' "$1" "$2" "$W/repo" "$3"; }
claims=(); nexts=()
for i in $(seq 1 12); do
  c=$( { p s$i turn-1 "#todo:todo-$i" | /usr/bin/time -f "%U %S" $N $CLI hook >/dev/null; } 2>&1 | tail -1 | awk '{print $1+$2}')
  n=$( { p s$i turn-2 "go on" | /usr/bin/time -f "%U %S" $N $CLI hook >/dev/null; } 2>&1 | tail -1 | awk '{print $1+$2}')
  claims+=($c); nexts+=($n)
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print (a[int((NR+1)/2)]+a[int(NR/2)+1])/2}'; }
echo "${1:-cold} claim median $(med ${claims[@]}) CPU-s; next-turn median $(med ${nexts[@]}) CPU-s"
strace -f -e trace=execve -o $W/strace.txt sh -c "$(declare -f p); W=$W; p s99 turn-1 '#todo:todo-1' | $N $CLI hook >/dev/null" 2>/dev/null || true
echo "git execs in a refused claim: $(grep -c 'execve(\"[^\"]*git\"' $W/strace.txt)"
