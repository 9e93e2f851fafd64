#!/bin/bash
# The roles' check mode and node_check on the real one-GPU H100 node (no internet, no GRUB, no
# python3-apt): `superpod drift` of the lab plan's su01-node01 run in place. Expected: drift reported
# with named items (exit 1), never an error stop (exit 2) at the first missing package; node_check
# names its mismatches (8 GPUs planned, 1 present; no rail NICs in a VM). Needs build/device/ (wheels
# for the node's Python 3.12, the Ansible collections the roles use). Outputs go to $OUT.
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
log "drift (roles' check mode, node_check excluded)"
# ROLES: host_tuning stops at its systemd tasks on this VM (no systemd: "Failed to find required
# executable systemctl"), which a real node has; a second run leaves it out to check the roles after it.
for roles in ${ROLES:-hugepages,host_tuning,nvidia_driver,cuda_toolkit,rdma,host_network,rail_network,roce_qos,nccl}; do
  timeout 110 python3 -m topology.cli drift --stack lab --limit su01-node01 -i /tmp/h100-drift.yml --full --json \
    --tags "$roles" > "$O/drift-${roles//,/_}.json" 2> "$O/drift-${roles//,/_}.err"; echo "drift $roles rc $?"
done
log "drift node_check"
timeout 40 python3 -m topology.cli drift --stack lab --limit su01-node01 -i /tmp/h100-drift.yml --full --json \
  --tags node_check > "$O/drift-node_check.json" 2> "$O/drift-node_check.err"; echo "drift node_check rc $?"
tar czf "$O/runs.tgz" .runs/lab 2>/dev/null  # the runs' events and stdout, as kept
log end
