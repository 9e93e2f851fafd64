#!/usr/bin/env bash
# The whole test suite: install what is needed, then lint, pytest and the
# container tests (molecule scenarios, end-to-end runs), the independent parts in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
containers=""
[[ -x scripts/molecule.sh ]] && containers="--with-containers"
scripts/bootstrap.sh $containers
export PATH="$PWD/.venv/bin:$PATH"

logdir=build/test-logs; mkdir -p "$logdir"
pids=(); names=()
# Where the suite's CPU goes (the budget is CPU on two cores): each step's and job's own processes'
# seconds (bash's `time`; the containers' processes are dockerd's children, counted apart below).
cpu_line() { TIMEFORMAT="== cpu $1: %R s wall, %U s user, %S s sys"; }
busy_seconds() { awk '/^cpu /{printf "%d %d\n", ($2+$3+$4+$7+$8+$9)/100, ($5+$6)/100}' /proc/stat; }
container_seconds() {
  local f=/sys/fs/cgroup/cpuacct/docker/cpuacct.usage
  [[ -r $f ]] && echo $(( $(cat "$f") / 1000000000 )) || echo "?"
}
read -r busy0 idle0 < <(busy_seconds); containers0=$(container_seconds)
run_bg() { # name, command...
  local name=$1; shift
  ( cpu_line "$name"; time "$@" ) >"$logdir/$name.log" 2>&1 & pids+=($!); names+=("$name")
}

# Container work is slow and mostly waits on I/O: start it first so it overlaps pytest.
[[ -x scripts/molecule.sh ]] && run_bg molecule scripts/molecule.sh
# End-to-end (superpod apply/drift on the lab pod's containers): its own job, started once
# molecule.sh has the base image (building it twice at once would race), overlapping molecule.
if [[ -x scripts/molecule.sh && -d tests/e2e ]]; then
  run_bg e2e bash -c 'for _ in $(seq 900); do scripts/ensure-image.sh --no-build >/dev/null 2>&1 && break; sleep 2; done
    pytest -q -p no:cacheprovider -m e2e tests/e2e'
fi

# Nautobot publish tests: a real Nautobot (scripts/nautobot-lab.sh: its own venv, PostgreSQL and Redis
# on loopback; migrations run once per Nautobot version, then a cached database is restored in ~30 s).
if [[ -d tests/nautobot ]]; then
  run_bg nautobot pytest -q -p no:cacheprovider -m nautobot tests/nautobot
fi

# Every step runs even when an earlier one fails (one CI run shows every failure), and the
# background jobs are always waited for. Interrupted, it signals them and their children and
# stops (containers a killed scenario started stay: scripts/molecule.sh destroys them next run).
status=0
step() { # name, command...
  local name=$1; shift
  echo "== $name"
  echo "$name" >"$logdir/.current-step"
  # In a subshell: its `time` counts this step's processes only. The main shell's own count also
  # takes in every background job that ends (is reaped) while the step runs.
  ( cpu_line "$name"; time "$@" ) || { echo "== $name: FAILED"; status=1; }
}
stop_jobs() { for p in "${pids[@]}"; do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null; }
trap 'stop_jobs; exit 130' INT TERM

# Watchdog: a hang must not eat CI's 90 minutes. After SUPERPOD_SUITE_LIMIT seconds it says
# which step and which background jobs were still running, with their last log lines, and
# stops the suite (pytest-timeout catches single hung tests long before this).
suite_limit=${SUPERPOD_SUITE_LIMIT:-5200}  # under CI's 90 minutes, bootstrap included
main_pid=$$
(
  sleep "$suite_limit"
  echo "== watchdog: the suite ran past ${suite_limit}s; still running: step '$(cat "$logdir/.current-step" 2>/dev/null)'"
  for i in "${!pids[@]}"; do
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "== watchdog: background job ${names[$i]} still running; last lines of its log:"
      tail -n 30 "$logdir/${names[$i]}.log"
    fi
  done
  kill -TERM "$main_pid"          # its trap stops the background jobs once the foreground step is gone
  # the foreground step's command (a grandchild: steps run in a subshell), then the step itself
  # (bash runs the trap only after it returns)
  for child in $(pgrep -P "$main_pid"); do [[ $child == "$BASHPID" ]] || pkill -TERM -P "$child"; done
  pkill -TERM -P "$main_pid"
) & watchdog=$!

step ruff ruff check .
lint_targets=()
for target in roles playbooks site.yml topology/operate/playbooks; do [[ -e $target ]] && lint_targets+=("$target"); done
if compgen -G "roles/*/tasks" >/dev/null; then
  step ansible-lint ansible-lint --profile production --offline -q "${lint_targets[@]}"
fi

step pytest pytest -q -n 2 -p no:cacheprovider -m "not e2e and not nautobot" tests  # those two: own jobs above
# Each agent package is its own pytest run: its tests/ package would clash with ours.
for agent_tests in agents/*/tests; do
  step "pytest $agent_tests" pytest -q -n 2 -p no:cacheprovider "$agent_tests"
done

echo "background jobs: ${names[*]}" >"$logdir/.current-step"
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then echo "== ${names[$i]}: ok"; else
    echo "== ${names[$i]}: FAILED (last lines of $logdir/${names[$i]}.log)"; tail -n 80 "$logdir/${names[$i]}.log"; status=1
  fi
done
echo "waiting" >"$logdir/.current-step"
watchdog_sleep=$(pgrep -P "$watchdog"); kill "$watchdog" $watchdog_sleep 2>/dev/null  # no orphaned sleep
grep -h "^== cpu " "$logdir"/*.log 2>/dev/null || true
read -r busy1 idle1 < <(busy_seconds); containers1=$(container_seconds)
echo "== cpu machine: $((busy1 - busy0)) core-s busy, $((idle1 - idle0)) idle;" \
  "containers: $([[ $containers0 == "?" ]] && echo "?" || echo $((containers1 - containers0))) core-s"
echo "== total: ${SECONDS}s"
exit $status
