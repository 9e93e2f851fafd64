#!/bin/bash
# Builds nccl-tests and nvbandwidth from their release tarballs on a real H100 node, runs them,
# runs `superpod accept --nodes-only` on the node itself (scripts/device/h100-overlay.yml), and
# captures host facts other checks need. Run from the repository root; DEVICE_KIT (default
# build/device) holds vendor/ (the two tarballs, Boost program_options' static library) and whl/,
# whl2/ (the wheels the CLI needs for the node's Python 3.12: the node has no internet).
# Everything it keeps goes to $OUT (testdata/h100-node/ and docs/acceptance.md take it from there).
set -u
P=$(cd "${DEVICE_KIT:-build/device}" && pwd)
O=${OUT:-/tmp/accept-out}
W=/tmp/acc
mkdir -p "$O" "$W"
# (no `exec > >(tee ...)`: bash's `wait` waits for a process substitution too, and tee never ends)
log() { echo "== $(date -u +%T) $*"; }
log start; nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader

left() { echo $(( ${BUDGET:-125} - SECONDS )); }  # seconds left of the run's budget
( python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$P"/whl/*.whl "$P"/whl2/*.whl \
  > "$W/pip.log" 2>&1; echo "pip rc $?" >> "$W/pip.log" ) &
PIP=$!

# nccl-tests against the system NCCL (headers in /usr/include, library in /usr/lib/x86_64-linux-gnu)
mkdir -p "$W/nccl/include" "$W/nccl/lib" "$W/nccl-tests" "$W/nvbandwidth"
ln -sf /usr/include/nccl*.h "$W/nccl/include/"; ln -sf /usr/lib/x86_64-linux-gnu/libnccl* "$W/nccl/lib/"
tar xzf "$P/vendor/nccl-tests-2.19.6.tar.gz" -C "$W/nccl-tests" --strip-components=1
( cd "$W/nccl-tests" && /usr/bin/time -f "nccl-tests build %e s" make -j10 CUDA_HOME=/usr/local/cuda \
  NCCL_HOME="$W/nccl" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$W/nccl-build.log" 2>&1;
  echo "nccl-tests make rc $?" >> "$W/nccl-build.log" ) &
NCCLB=$!

# nvbandwidth: what its CMakeLists builds, by hand (Boost program_options static, NVML and the driver API)
tar xzf "$P/vendor/nvbandwidth-0.8.tar.gz" -C "$W/nvbandwidth" --strip-components=1
CUDALIB=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
NVMLLIB=$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')
( cd "$W/nvbandwidth" && start=$(date +%s) &&
  for f in testcase testcases_ce testcases_sm memcpy nvbandwidth multinode_memcpy multinode_testcases output json_output json/jsoncpp; do
    g++ -O3 -std=c++17 -I. -I/usr/local/cuda/include -DGIT_VERSION='"v0.8"' -c "$f.cpp" -o "$(basename $f).o" & done;
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90 -I. -c kernels.cu -o kernels.o; wait;
  g++ -o nvbandwidth ./*.o "$P/vendor/libboost_program_options.a" -L/usr/local/cuda/lib64 -lcudart_static \
    "$CUDALIB" "$NVMLLIB" -lpthread -ldl -lrt && echo "nvbandwidth build $(( $(date +%s) - start )) s" ) > "$W/nvb-build.log" 2>&1 &
NVBB=$!
# Facts for other checks: the GPU's PCIe link from sysfs, boot id, python apt bindings
BUS=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | sed 's/^0000//' | tr 'A-F' 'a-f')
{ echo "## GPU $BUS: /sys/bus/pci/devices/$BUS/{current,max}_link_{speed,width}"
  for f in current_link_speed max_link_speed current_link_width max_link_width; do
    echo "$f: $(cat /sys/bus/pci/devices/$BUS/$f 2>&1)"; done
  echo "## cat /proc/sys/kernel/random/boot_id"; cat /proc/sys/kernel/random/boot_id
  echo "## dpkg -l | grep -E 'python3-apt|python3-debian'"; dpkg -l | grep -E 'python3-apt|python3-debian' || echo "(none installed)"
  echo "## command -v dcgmi ib_write_bw mpirun"; for t in dcgmi ib_write_bw mpirun; do echo "$t: $(command -v $t || echo absent)"; done
} > "$O/host-facts.txt" 2>&1
cat "$O/host-facts.txt"
wait $PIP $NCCLB $NVBB
log builds done; tail -3 "$W/nccl-build.log" "$W/nvb-build.log" "$W/pip.log"
cat "$W/nccl-build.log" | tail -20; cat "$W/nvb-build.log"


log nvbandwidth; timeout 25 "$W/nvbandwidth/nvbandwidth" -j -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce \
  -t device_to_device_memcpy_read_ce > "$O/nvbandwidth.json" 2>&1; echo "rc $?"
log all_reduce_perf; timeout 25 "$W/nccl-tests/build/all_reduce_perf" -b 8 -e 8G -f 2 -g 1 > "$O/all_reduce_perf-1gpu.txt" 2>&1; echo "rc $?"

log superpod accept
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH ANSIBLE_STRATEGY=linear ANSIBLE_HOST_KEY_CHECKING=False
python3 -m topology.cli plan --stack lab > /dev/null && \
timeout $(( $(left) - 12 )) python3 -m topology.cli accept --stack lab --limit su01-node01 --nodes-only \
  -i scripts/device/h100-overlay.yml --json > "$O/accept.json"; echo "accept rc $?"
R=$(ls -d .runs/lab/accept/*/ | tail -1)
tar czf "$O/accept-run.tgz" "$R" .runs/lab/*-accept/artifacts/run/stdout 2>/dev/null
log "nvbandwidth text ($(left) s left)"
[ "$(left)" -gt 8 ] && timeout $(( $(left) - 3 )) "$W/nvbandwidth/nvbandwidth" -t host_to_device_memcpy_ce \
  -t device_to_host_memcpy_ce -t device_local_copy > "$O/nvbandwidth.txt" 2>&1
log end
