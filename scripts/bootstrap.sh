#!/usr/bin/env bash
# Installs what superpod needs on a fresh Debian 12 / Ubuntu 22.04+ machine:
# system packages, then a virtualenv in .venv with the project and its tools.
# Idempotent: a second run only checks.  Usage: scripts/bootstrap.sh [--with-containers]
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v git >/dev/null || need_apt+=(git)
command -v yanglint >/dev/null || need_apt+=(libyang-tools)  # SONiC config_db checked against SONiC's YANG models
command -v vtysh >/dev/null || need_apt+=(frr)  # every frr.conf checked by FRR's own parser (vtysh -C, no daemons)
command -v netplan >/dev/null || need_apt+=(netplan.io)  # host_network's netplan files judged by netplan generate
# the plan's Slurm files read by Slurm's own slurmctld/scontrol (tests/test_slurm_plan.py), with munge
command -v slurmctld >/dev/null || need_apt+=(slurmctld slurm-client)
command -v munged >/dev/null || need_apt+=(munge)
if [[ "${1:-}" == "--with-containers" ]]; then
  command -v dockerd >/dev/null || need_apt+=(docker.io)
  command -v debootstrap >/dev/null || need_apt+=(debootstrap)
  command -v ip >/dev/null || need_apt+=(iproute2)
  command -v chromium >/dev/null || need_apt+=(chromium)  # headless: the report's browser test
  command -v pdftotext >/dev/null || need_apt+=(poppler-utils)  # reads the report's printed sheets back
  # the Nautobot publish tests' server (scripts/nautobot-lab.sh): PostgreSQL and Redis on loopback
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need_apt+=(postgresql)
  command -v redis-server >/dev/null || need_apt+=(redis-server)
fi
if ((${#need_apt[@]})); then
  sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The install is keyed on the files that define it, so a second run is instant.
stamp=.venv/.superpod-install
shopt -s nullglob
agents=(agents/*/pyproject.toml)
key=$(cat pyproject.toml "${agents[@]}" | sha256sum | cut -c1-16)
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
if [[ "$(cat "$stamp" 2>/dev/null)" != "$key" ]]; then
  .venv/bin/pip install -q -U pip
  extra=()
  for agent in "${agents[@]}"; do
    extra+=(-e "$(dirname "$agent")[test]")
  done
  .venv/bin/pip install -q -e '.[test,pulumi,ansible]' "${extra[@]}"
  echo "$key" > "$stamp"
fi

# promtool (checks and unit-tests the cooling agent's alert rules).  Only the binary is
# taken out of Debian's prometheus package: installing the package would also start a
# Prometheus server.  It goes into .venv/bin, which scripts/test.sh puts on PATH.
if ! command -v promtool >/dev/null && [[ ! -x .venv/bin/promtool ]] && command -v apt-get >/dev/null; then
  deb_dir=$(mktemp -d)
  if ! (cd "$deb_dir" && apt-get download -qq prometheus 2>/dev/null); then
    sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    (cd "$deb_dir" && apt-get download -qq prometheus)
  fi
  dpkg-deb -x "$deb_dir"/prometheus_*.deb "$deb_dir/root"
  install -m 0755 "$deb_dir/root/usr/bin/promtool" .venv/bin/promtool
  rm -rf "$deb_dir"
fi

# Alertmanager (the health watcher's alerts are posted to a real one on loopback in its tests).
# Only the binary, out of Debian's package, for the same reason as promtool: the package would
# start a daemon.
if { { ! command -v alertmanager >/dev/null && [[ ! -x .venv/bin/alertmanager ]]; } \
     || [[ ! -f /usr/share/prometheus/alertmanager/email.tmpl ]]; } && command -v apt-get >/dev/null; then
  deb_dir=$(mktemp -d)
  if ! (cd "$deb_dir" && apt-get download -qq prometheus-alertmanager 2>/dev/null); then
    sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    (cd "$deb_dir" && apt-get download -qq prometheus-alertmanager)
  fi
  dpkg-deb -x "$deb_dir"/prometheus-alertmanager_*.deb "$deb_dir/root"
  install -m 0755 "$deb_dir/root/usr/bin/prometheus-alertmanager" .venv/bin/alertmanager
  # Debian's build reads its notification templates from this path (it refuses its config without them)
  sudo_cmd=""; [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd install -d /usr/share/prometheus/alertmanager
  $sudo_cmd install -m 0644 "$deb_dir"/root/usr/share/prometheus/alertmanager/*.tmpl /usr/share/prometheus/alertmanager/
  rm -rf "$deb_dir"
fi
