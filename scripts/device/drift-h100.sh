#!/bin/bash
# `superpod drift` on the real one-GPU H100 node (no internet, no GRUB, no python3-apt, no systemd,
# no ConnectX): the lab plan's su01-node01 checked in place, EVERY role of the GPU-node play and
# node_check in ONE check-mode run. Expected: exit 1 (drift), the host "drift", node_check's
# mismatches named (8 GPUs planned, 1 present; the 8 rail netdevs missing), host_network's and
# rail_network's missing links named, and every role after them checked (issue 33: a node unlike
# its plan is drift with named items, never an error stop). Exit 2 would be a real error: the JSON's
# problems name it. Needs build/device/ (wheels for the node's Python 3.12, the Ansible collections
# the roles use). Outputs go to $OUT; the verdict is printed last. About 150 s on the node.
#
# Run from the repository root with build/device carried, e.g. (the run tool):
#   command: bash scripts/device/drift-h100.sh   carry: ["build/device"]   timeout_s: 300
set -u
O=${OUT:-/tmp/drift-out}; mkdir -p "$O"
log() { echo "== $(date -u +%T) $*"; }
log start
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  build/device/whl/*.whl build/device/whl2/*.whl > "$O/pip.log" 2>&1; echo "pip rc $?"
mkdir -p /tmp/coll && tar xzf build/device/collections.tgz -C /tmp/coll
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH ANSIBLE_STRATEGY=linear ANSIBLE_HOST_KEY_CHECKING=False \
  ANSIBLE_COLLECTIONS_PATH=/tmp/coll SUPERPOD_RECORD_KEY_FILE=/tmp/record.key
become=$([ "$(id -u)" = 0 ] && echo false || echo true)
cat > /tmp/h100-drift.yml <<YML
all:
  hosts:
    su01-node01:
      ansible_connection: local
      ansible_python_interpreter: /usr/bin/python3
      ansible_become: $become
      host_tuning_bootloader_method: none  # the VM boots a provisioned kernel: no GRUB to write
YML
python3 -m topology.cli plan --stack lab > "$O/plan.log" 2>&1; echo "plan rc $?"
cp /tmp/h100-drift.yml "$O/overlay.yml"
# Every role site.yml runs on a GPU node (the "GPU nodes - host, driver and fabric" play) and
# node_check; not slurm/munge (they need the pod's controller and vault secrets), and not
# fabric_telemetry: it builds its wheelhouse on the controller with pip (PyPI or the site's mirror),
# and here the controller is the node itself, which reaches neither (seen on the node 27 Nov:
# "Build the exporter wheel: non-zero return code"; the role's check mode is molecule's).
ROLES=${ROLES:-hugepages,host_tuning,rdma,nvidia_driver,cuda_toolkit,host_network,rail_network,roce_qos,nccl,dcgm_exporter,node_check}
drift() {  # name, timeout, tags
  timeout "$2" python3 -m topology.cli drift --stack lab --limit su01-node01 -i /tmp/h100-drift.yml --full --json \
    --no-progress --tags "$3" > "$O/drift-$1.json" 2> "$O/drift-$1.err"
  local rc=$?; echo "drift $1 rc $rc"; echo "$rc" > "$O/drift-$1.rc"; return $rc
}
verdict() {  # name: exit code, status, the named items and any error, from the JSON
  python3 - "$O/drift-$1.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no JSON report ({e}): see the .err file")
h = r["hosts"].get("su01-node01", {})
print(f"exit_code {r['exit_code']}, status {h.get('status')}, recap {h.get('recap')}")
print(f"{len(h.get('plan_mismatches', []))} plan mismatch(es):", *h.get("plan_mismatches", []), sep="\n  ")
roles = {}
for c in h.get("changes", []):
    roles[c["role"]] = roles.get(c["role"], 0) + 1
print("changes by role:", json.dumps(roles))
for p in h.get("problems", []):
    print(f"ERROR {p['role']} : {p['task']}: {p['message'][:600]}")
for e in r.get("errors", []):
    print("ERROR", e)
PY
}
log "drift: every GPU-node role and node_check, one run"
drift all "${DRIFT_TIMEOUT:-170}" "$ROLES"; rc=$?
if [ "$rc" -ne 1 ] && [ -z "${NO_FALLBACK:-}" ]; then
  # not the expected verdict: node_check alone still says how the node differs from its plan
  log "drift node_check alone (the run above was not exit 1)"
  drift node_check 60 node_check
fi
tar czf "$O/runs.tgz" .runs/lab 2>/dev/null  # the runs' events and stdout, as kept
log end
echo "---- verdict (expected: exit_code 1, status drift, node_check's and the network roles' items named)"
verdict all
[ -f "$O/drift-node_check.json" ] && { echo "---- node_check alone"; verdict node_check; }
exit 0
