#!/usr/bin/env bash
# Gives the containers' cpu cgroup the weight of several busy processes (scripts/molecule.sh runs it
# before any scenario, so the e2e lab's containers get it too).
# Why: with cgroup v1 and dockerd's cgroupfs driver (the CI machine), every container sits under one
# /docker cgroup whose cpu.shares (1024) equal one root-cgroup process's; pytest, the e2e controller
# and each scenario's ansible-playbook run in the root cgroup, so under the suite's load ALL
# containers together got one process's CPU. Measured there at load 30-90 (27 Nov): the same apt
# install took 334 s in a container under /docker and 8 s beside it under a cgroup of 16384 shares.
# Env: SUPERPOD_CONTAINER_CPU_SHARES (default 8192: eight busy processes; 0 leaves it alone),
#      SUPERPOD_CONTAINER_CPU_CGROUP (default /sys/fs/cgroup/cpu/docker, used only when dockerd
#      reports cgroupfs on cgroup v1; with cgroup v2 or the systemd driver containers sit elsewhere).
# Never fails: without the cgroup (or rights to it) the containers only keep their share; it says so.
# The weight stays after the job: the e2e may still be running.
set -uo pipefail
shares=${SUPERPOD_CONTAINER_CPU_SHARES:-8192}
cgroup=${SUPERPOD_CONTAINER_CPU_CGROUP:-}
sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo -n"
say() { echo "container-cpu-weight: $*"; }
((shares > 0)) || exit 0
if [[ -z $cgroup ]]; then
  [[ "$(docker info --format '{{.CgroupDriver}} {{.CgroupVersion}}' 2>/dev/null)" == "cgroupfs 1" ]] || exit 0
  cgroup=/sys/fs/cgroup/cpu/docker
  $sudo_cmd mkdir -p "$cgroup" 2>/dev/null  # dockerd makes it only at its first container
fi
if ! now=$(cat "$cgroup/cpu.shares" 2>/dev/null); then
  say "no $cgroup/cpu.shares: the containers keep one process's CPU share"; exit 0
fi
((now < shares)) || exit 0
if echo "$shares" | $sudo_cmd tee "$cgroup/cpu.shares" >/dev/null 2>&1; then
  say "$cgroup cpu.shares $now -> $(cat "$cgroup/cpu.shares")"
else
  say "could not set $cgroup/cpu.shares: the containers keep one process's CPU share"
fi
exit 0
