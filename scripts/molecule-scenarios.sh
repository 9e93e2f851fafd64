#!/usr/bin/env bash
# Prints the molecule scenario files (roles/R/molecule/S/molecule.yml) scripts/molecule.sh runs,
# one a line, in the order it starts them.
# Usage: scripts/molecule-scenarios.sh [ROLE[/SCENARIO] ...]   (default: all scenarios)
# Env:   MOLECULE_SKIP: scenario files left out of a default run (space-separated)
set -euo pipefail
cd "$(dirname "$0")/.."
if (($#)); then
  for arg in "$@"; do
    if [[ $arg == */* ]]; then echo "roles/${arg%%/*}/molecule/${arg#*/}/molecule.yml"
    else for f in roles/"$arg"/molecule/*/molecule.yml; do echo "$f"; done; fi
  done
  exit 0
fi
# The longest scenarios first, so that none starts last and sets the total alone; then the rest in
# name order. By their times in the clean-clone suite at bb13337 (27 Nov, loaded): slurm 1,430 s
# (four containers installing Slurm; the only proof of placement across two SUs, `--switches=1`,
# which the one-SU e2e lab cannot give), cooling_monitor 1,121 s, nvidia_driver 584 s, acceptance
# 342 s, rail_network 333 s; the others 58-253 s (nvidia_driver, in name order, started 42 min in).
long_first=(roles/slurm/molecule/default/molecule.yml roles/cooling_monitor/molecule/default/molecule.yml
            roles/nvidia_driver/molecule/default/molecule.yml roles/acceptance/molecule/default/molecule.yml
            roles/rail_network/molecule/default/molecule.yml)
skip=" ${MOLECULE_SKIP-} "
for f in "${long_first[@]}"; do
  [[ -f $f ]] || { echo "molecule-scenarios.sh: long_first names $f, which does not exist" >&2; exit 2; }
  [[ $skip != *" $f "* ]] && echo "$f"
done
for f in roles/*/molecule/*/molecule.yml; do
  [[ -f $f && " ${long_first[*]} " != *" $f "* && $skip != *" $f "* ]] && echo "$f"
done
exit 0
