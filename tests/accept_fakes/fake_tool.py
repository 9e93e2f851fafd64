#!/usr/bin/env python3
"""Stand-ins for nvidia-smi, nvbandwidth, all_reduce_perf, ib_write_bw and mpirun for the
localhost acceptance test: each prints what the real tool prints (built from the real outputs
in testdata/h100-node/ and the tools' sources), for the node named in ACCEPT_FAKE_NODE, hurt as
the scenario (ACCEPT_FAKE_SCENARIO, JSON) says:
  {"gpus": 8, "throttled": {node: gpu}, "lost": {node: gpu}, "slow_rail": {node: hca},
   "addresses": {address: node}}
Standard library only: it runs under whatever python3 the node has."""

import json
import os
import re
import sys
from pathlib import Path

TESTDATA = Path(__file__).resolve().parents[2] / "testdata" / "h100-node"
SCEN = json.loads(Path(os.environ["ACCEPT_FAKE_SCENARIO"]).read_text())
NODE = os.environ.get("ACCEPT_FAKE_NODE", "")
HEALTHY = {"busbw_node": 382.0, "busbw_net": 371.0, "h2d": 55.2, "d2h": 55.4, "d2d": 389.1, "rail": 392.1}


def gpus_of(node):
    lost = SCEN.get("lost", {}).get(node)
    return [i for i in range(SCEN.get("gpus", 8)) if i != lost]


def nvidia_smi(args):
    """nvidia-smi -q -x: the real node's <gpu> block once per GPU, renumbered."""
    xml = (TESTDATA / "nvidia-smi-q.xml").read_text()
    head, gpu, tail = re.match(r"(.*?)(\t<gpu id=.*?</gpu>\n)(.*)", xml, re.S).groups()
    blocks = []
    for i in gpus_of(NODE):
        b = gpu.replace('id="00000000:00:06.0"', f'id="00000000:{0x18 + i:02X}:00.0"')
        b = re.sub(r"<minor_number>\d+</minor_number>", f"<minor_number>{i}</minor_number>", b)
        if SCEN.get("throttled", {}).get(NODE) == i:
            b = b.replace("<clocks_event_reason_hw_thermal_slowdown>Not Active",
                          "<clocks_event_reason_hw_thermal_slowdown>Active")
        blocks.append(b)
    head = re.sub(r"<attached_gpus>\d+</attached_gpus>", f"<attached_gpus>{len(blocks)}</attached_gpus>", head)
    sys.stdout.write(head + "".join(blocks) + tail)


def nvbandwidth(args):
    n = len(gpus_of(NODE))  # CUDA renumbers what is left: 0..n-1
    cases = []
    for name in [args[i + 1] for i, a in enumerate(args) if a == "-t"]:
        if name == "device_to_device_memcpy_read_ce":
            m = [["N/A" if i == j else f"{HEALTHY['d2d']}" for j in range(n)] for i in range(n)]
            desc = "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)"
        else:
            key = "h2d" if name.startswith("host") else "d2h"
            m = [[f"{HEALTHY[key]}" for _ in range(n)]]
            desc = "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
        cases.append({"name": name, "status": "Passed", "bandwidth_description": desc, "bandwidth_matrix": m,
                      "sum": sum(float(v) for r in m for v in r if v != "N/A")})
    doc = {"nvbandwidth": {"CUDA Runtime Version": 13000, "Driver Version": "580.159.04", "git_version": "v0.8",
                           "version": "v0.8", "testcases": cases}}
    print(json.dumps(doc, indent=3))


def nccl_output(ranks, busbw, hosts):
    """all_reduce_perf's output in the real file's layout, with this run's ranks and bandwidth."""
    real = (TESTDATA / "nccl-tests-all_reduce_perf-1gpu.txt").read_text().splitlines()
    out = []
    for line in real:
        if line.startswith("#  Rank  0"):
            for r in range(ranks):
                host = hosts[r // 8] if hosts else NODE
                out.append(f"#  Rank {r:2d} Group  0 Pid {1225 + r:6d} on {host:>12} device {r % 8:2d} "
                           f"[0000:{0x18 + r % 8:02x}:00] NVIDIA H100 80GB HBM3")
        elif re.match(r"^\s+\d+\s+\d+\s+float", line):
            size = int(line.split()[0])
            factor = 2 * (ranks - 1) / ranks
            bw = busbw * min(1.0, size / 2**28)
            t = size / (bw / factor * 1e3) if bw else 1.0
            out.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {t:8.2f} {bw / factor:7.2f} {bw:7.2f}"
                       f"       0 {t:8.2f} {bw / factor:7.2f} {bw:7.2f}       0")
        elif line.startswith("# nThread"):
            out.append(line.replace("nGpus 1", "nGpus 1"))
        elif line.startswith("# Avg bus bandwidth"):
            out.append(f"# Avg bus bandwidth    : {busbw / 2:.3f} ")
        else:
            out.append(line)
    print("\n".join(out))


def all_reduce_perf(args):
    want = int(args[args.index("-g") + 1])
    have = len(gpus_of(NODE))
    if want > have:
        print("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803")
        print(f"{NODE}: Test CUDA failure common.cu:1026 'invalid device ordinal'")
        sys.exit(2)
    slow = 251.0 if SCEN.get("throttled", {}).get(NODE) is not None else HEALTHY["busbw_node"]
    nccl_output(want, slow, None)


def ib_write_bw(args):
    hca = args[args.index("-d") + 1]
    server = args[-1] if not args[-1].startswith("-") and args[-2] not in ("-D", "-q", "-p", "-d") else None
    if server is None:
        return  # the server side prints its own table; the client's is kept
    peer = SCEN["addresses"].get(server, server)
    slow = SCEN.get("slow_rail", {})
    bw = 181.4 if slow.get(NODE) == hca or slow.get(peer) == hca else HEALTHY["rail"]
    print(f"""---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : {hca}
 Number of qps   : 4\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      2993130          {bw + 0.4:.2f}             {bw:.2f}  \t\t   0.747856
---------------------------------------------------------------------------------------""")


def mpirun(args):
    hosts = [h.split(":")[0] for h in args[args.index("-H") + 1].split(",")]
    nodes = [SCEN["addresses"].get(h, h) for h in hosts]
    ranks = int(args[args.index("-np") + 1])
    if any(len(gpus_of(n)) < SCEN.get("gpus", 8) for n in nodes):
        print("[fake] all_reduce_perf: Test CUDA failure common.cu:1026 'invalid device ordinal'", file=sys.stderr)
        print("prterun detected that one or more processes exited with non-zero status", file=sys.stderr)
        sys.exit(1)
    slow = any(n in SCEN.get("slow_rail", {}) for n in nodes) or any(n in SCEN.get("throttled", {}) for n in nodes)
    nccl_output(ranks, 187.3 if slow else HEALTHY["busbw_net"], nodes)


if __name__ == "__main__":
    tool = sys.argv[1]
    {"nvidia-smi": nvidia_smi, "nvbandwidth": nvbandwidth, "all_reduce_perf": all_reduce_perf,
     "ib_write_bw": ib_write_bw, "mpirun": mpirun}[tool](sys.argv[2:])
