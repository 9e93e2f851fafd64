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
run_bg() { # name, command...
  local name=$1; shift
  ( "$@" >"$logdir/$name.log" 2>&1 ) & pids+=($!); names+=("$name")
}

# Container work is slow and mostly waits on I/O: start it first so it overlaps pytest.
[[ -x scripts/molecule.sh ]] && run_bg molecule scripts/molecule.sh
# End-to-end (superpod apply/drift on the lab pod's containers): its own job, started once
# molecule.sh has the base image (building it twice at once would race), overlapping molecule.
if [[ -x scripts/molecule.sh && -d tests/e2e ]]; then
  run_bg e2e bash -c 'for _ in $(seq 900); do scripts/ensure-image.sh --no-build >/dev/null 2>&1 && break; sleep 2; done
    pytest -q -p no:cacheprovider -m e2e tests/e2e'
fi

# Every step runs even when an earlier one fails (one CI run shows every failure), and the
# background jobs are always waited for. Interrupted, it signals them and their children and
# stops (containers a killed scenario started stay: scripts/molecule.sh destroys them next run).
status=0
step() { # name, command...
  local name=$1; shift
  echo "== $name"
  "$@" || { echo "== $name: FAILED"; status=1; }
}
trap 'for p in "${pids[@]}"; do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null; exit 130' INT TERM

step ruff ruff check .
lint_targets=()
for target in roles playbooks site.yml; do [[ -e $target ]] && lint_targets+=("$target"); done
if compgen -G "roles/*/tasks" >/dev/null; then
  step ansible-lint ansible-lint --profile production --offline -q "${lint_targets[@]}"
fi

step pytest pytest -q -n 2 -p no:cacheprovider -m "not e2e" tests  # the e2e runs as its own job above
# Each agent package is its own pytest run: its tests/ package would clash with ours.
for agent_tests in agents/*/tests; do
  step "pytest $agent_tests" pytest -q -n 2 -p no:cacheprovider "$agent_tests"
done

for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then echo "== ${names[$i]}: ok"; else
    echo "== ${names[$i]}: FAILED (last lines of $logdir/${names[$i]}.log)"; tail -n 80 "$logdir/${names[$i]}.log"; status=1
  fi
done
echo "== total: ${SECONDS}s"
exit $status
