#!/usr/bin/env bash
# Runs every role's molecule scenario in Debian 12 systemd containers, on a fresh machine or in CI.
#   1. installs and starts what molecule needs (docker.io, debootstrap; dockerd if not running),
#   2. builds the base image once, content-keyed: superpod-debian12:<hash of molecule/image/*>,
#   3. runs `molecule test` for each roles/*/molecule/*/molecule.yml, at most
#      MOLECULE_JOBS (default 2) at a time, one log per scenario under build/molecule-logs/,
#      a summary line per scenario; exits non-zero if any failed. Each run gets a fresh molecule
#      state directory (build/molecule-state/ROLE-SCENARIO); the containers come from
#      molecule/create.yml and go with molecule/destroy.yml (molecule/base.yml).
# Usage: scripts/molecule.sh [ROLE[/SCENARIO] ...]   (default: all scenarios)
# Order and MOLECULE_SKIP: scripts/molecule-scenarios.sh (longest first).
# Env:   MOLECULE_JOBS=2  MOLECULE_IMAGE (override the image)  MOLECULE_KEEP_LOGS_QUIET=1
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/.venv/bin:$PATH"
export NO_COLOR=1 PY_COLORS=0 ANSIBLE_NOCOLOR=1
export MOLECULE_NO_LOG=${MOLECULE_NO_LOG:-false}  # show docker create/destroy errors in the logs
jobs_max=${MOLECULE_JOBS:-2}
logdir=$root/build/molecule-logs
statedir=$root/build/molecule-state  # each scenario's MOLECULE_EPHEMERAL_DIRECTORY
mkdir -p "$logdir" "$statedir"
t_start=$(date +%s)
log() { printf '[molecule.sh %(%H:%M:%S)T] %s\n' -1 "$*"; }
sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"

# ---------------------------------------------------------------- 1. tools and dockerd
need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v openssl >/dev/null || need_apt+=(openssl)
# The Redfish BMC emulator (sushy-tools) serves BIOS attributes only from its libvirt driver;
# libvirt's built-in test:///default hypervisor needs no daemon, just the Python binding.
/usr/bin/python3 -c 'import libvirt' 2>/dev/null || need_apt+=(python3-libvirt)
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if ((${#need_apt[@]})); then
  log "apt-get install ${need_apt[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
[[ -x .venv/bin/molecule ]] || { echo "no .venv/bin/molecule: run scripts/bootstrap.sh first" >&2; exit 2; }

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  $sudo_cmd sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start:" >&2; tail -n 30 /var/log/dockerd.log >&2; exit 2; }
fi

# Containers' CPU weight: on cgroup v1 all containers had one process's CPU share (see the script).
weight=$(scripts/container-cpu-weight.sh); [[ -z $weight ]] || log "$weight"

# Redfish emulator in its own venv on the system python (where python3-libvirt lives).
sushy_venv=$root/build/sushy-venv
sushy_key="sushy-tools>=2.0,<3"
if [[ "$(cat "$sushy_venv/.stamp" 2>/dev/null)" != "$sushy_key" ]]; then
  log "installing sushy-tools into $sushy_venv"
  rm -rf "$sushy_venv"
  /usr/bin/python3 -m venv --system-site-packages "$sushy_venv"
  "$sushy_venv/bin/pip" install -q "$sushy_key" 2>&1 | grep -v '^WARNING: Location' || true
  "$sushy_venv/bin/python" -c 'import sushy_tools, libvirt'
  echo "$sushy_key" >"$sushy_venv/.stamp"
fi
export SUPERPOD_SUSHY_VENV=$sushy_venv

# ---------------------------------------------------------------- 2. base image
image_key=$(cd molecule/image && cat $(ls | sort) | sha256sum | cut -c1-12)
export MOLECULE_IMAGE=${MOLECULE_IMAGE:-superpod-debian12:$image_key}
t_image=$(date +%s)
if docker image inspect "$MOLECULE_IMAGE" >/dev/null 2>&1; then
  log "base image $MOLECULE_IMAGE present (reused)"
else
  log "building base image $MOLECULE_IMAGE (debootstrap)"
  molecule/image/build-image.sh "$MOLECULE_IMAGE"
  log "base image built in $(( $(date +%s) - t_image ))s"
fi

# ---------------------------------------------------------------- 3. scenarios
scenario_list=$(scripts/molecule-scenarios.sh "$@")
mapfile -t scenarios < <(printf '%s\n' "$scenario_list" | sed '/^$/d')
((${#scenarios[@]})) || { log "no molecule scenarios found"; exit 0; }

run_one() { # roles/R/molecule/S/molecule.yml -> writes $logdir/R-S.{log,result}
  local f=$1 role scenario name t0 rc
  role=$(cut -d/ -f2 <<<"$f"); scenario=$(cut -d/ -f4 <<<"$f"); name=$role/$scenario
  t0=$(date +%s)
  # A fresh molecule state directory each run: a killed run's state ("created") would make create
  # skip; its leftover containers are replaced by molecule/create.yml (no leading destroy).
  rm -rf "$statedir/$role-$scenario"
  ( cd "roles/$role" && MOLECULE_EPHEMERAL_DIRECTORY="$statedir/$role-$scenario" \
      molecule -c "$root/molecule/base.yml" test -s "$scenario" ) \
    </dev/null >"$logdir/$role-$scenario.log" 2>&1 && rc=0 || rc=$?
  echo "$rc $(( $(date +%s) - t0 ))" >"$logdir/$role-$scenario.result"
  if ((rc == 0)); then log "PASS $name ($(( $(date +%s) - t0 ))s)"
  else log "FAIL $name ($(( $(date +%s) - t0 ))s, rc=$rc) log: $logdir/$role-$scenario.log"; fi
}

log "running ${#scenarios[@]} scenario(s), $jobs_max at a time"
rm -f "$logdir"/*.result
running=0
for f in "${scenarios[@]}"; do
  if ((running >= jobs_max)); then wait -n || true; running=$((running - 1)); fi
  run_one "$f" & running=$((running + 1))
done
wait || true

echo
echo "== molecule summary (image $MOLECULE_IMAGE)"
failed=0
for f in "${scenarios[@]}"; do
  role=$(cut -d/ -f2 <<<"$f"); scenario=$(cut -d/ -f4 <<<"$f")
  read -r rc secs <"$logdir/$role-$scenario.result" 2>/dev/null || { rc=99; secs=0; }
  if ((rc == 0)); then status=PASS; else status=FAIL; failed=$((failed + 1)); fi
  printf '%-4s %-32s %5ss\n' "$status" "$role/$scenario" "$secs"
done
passed=$(( ${#scenarios[@]} - failed ))
echo "molecule: ${#scenarios[@]} scenarios in $(( $(date +%s) - t_start ))s"
for f in "${scenarios[@]}"; do
  role=$(cut -d/ -f2 <<<"$f"); scenario=$(cut -d/ -f4 <<<"$f")
  read -r rc _ <"$logdir/$role-$scenario.result" 2>/dev/null || rc=99
  if ((rc != 0)); then echo "---- last lines of $role/$scenario"; tail -n 60 "$logdir/$role-$scenario.log"; fi
done
echo "$passed passed, $failed failed"
((failed == 0))
