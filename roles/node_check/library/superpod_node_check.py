#!/usr/bin/python
# Read-only check of a GPU node against its plan. Gathering (nvidia-smi, /proc, /sys) is kept
# apart from comparing: the compare_* functions are pure and unit-tested on recorded output
# (tests/roles/test_node_check.py), so the logic is proven without a GPU.
from __future__ import annotations

import glob
import json
import os
import re
import xml.etree.ElementTree as ET

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: superpod_node_check
short_description: Compare a GPU node's live state with its plan (read-only)
description:
  - Reads nvidia-smi, /proc/cmdline, the bootloader command line stamp, /proc/meminfo and the
    HugePages sysfs pools, cpufreq governors, cpuidle states, rail NIC link state and each rail's
    LLDP neighbor (lldpctl), which must be the rail's planned leaf port.
  - PCIe ACS control of every PCI bridge (setpci) against host_tuning's plan (off on bare metal).
  - GPU health from `nvidia-smi -q -x`: NVLink fabric registration (state/status, where the plan has
    NVSwitches) and row remapping (pending, failed); XIDs in the kernel log since boot; the
    GPUDirect RDMA path nvidia_driver chose (nvidia_peermem loaded, or open modules for DMA-BUF).
  - Each rail HCA's port state, physical state, rate and link layer (/sys/class/infiniband).
  - Returns one row per check (expected, actual, status). Never changes the node.
options:
  expected:
    description: The plan (see roles/node_check/tasks/main.yml); a value of null means not planned.
    type: dict
    required: true
  require_gpu:
    description: A node without an NVIDIA GPU is a mismatch (else the GPU checks are skipped).
    type: bool
    default: true
  require_rail_links:
    description: A missing rail netdev is a mismatch (else its check is skipped).
    type: bool
    default: true
  host_kernel_checks:
    description: Check running-kernel state (false in a container, where it is the host's).
    type: bool
    default: true
  nvidia_smi:
    description: nvidia-smi command (name or path).
    type: str
    default: nvidia-smi
  bootloader_stamp:
    description: File holding the command line last handed to the bootloader.
    type: path
    default: /var/lib/superpod/bootloader-cmdline
  rail_lldp:
    description:
      - Each rail's LLDP neighbor must be its planned leaf and port (links[].leaf, links[].leaf_port).
      - auto checks when lldpctl answers and says why it skipped otherwise; required makes a missing
        lldpd a mismatch; off does not check.
    type: str
    choices: [auto, required, "off"]
    default: auto
  lldpctl:
    description: lldpctl command (name or path); lldpd comes from the lldp role.
    type: str
    default: lldpctl
  xid_allowed:
    description: XIDs that applications cause (not a node fault); any other XID since boot is a mismatch.
    type: list
    elements: int
    default: []
  recorded_plans:
    description:
      - The plans other roles recorded on this node (local fact files, JSON), by owner
        (host_tuning, hugepages, rdma, nvidia_driver). Read here, in the same call as the checks,
        and merged into I(expected) (recorded_expectations): the command line parameters they
        planned are added to expected.cmdline, and governor, C-states, PCIe ACS, ConnectX firmware
        and the GPUDirect RDMA path come from them where expected leaves them null. A missing file
        is an owner that did not run here (its values stay not planned).
    type: dict
    default: {}
author: superpod
"""

RETURN = r"""
checks:
  description: One row per check.
  type: list
  elements: dict
  returned: always
mismatches:
  description: The rows whose status is MISMATCH.
  type: list
  elements: dict
  returned: always
report:
  description: The rows as an aligned text table.
  type: list
  elements: str
  returned: always
"""

OK = "ok"
MISMATCH = "MISMATCH"
SKIPPED = "skipped"
NOT_PLANNED = "not planned"

# nvidia-smi --query-gpu fields, in the order the parser expects them.
GPU_FIELDS = (
    "index",
    "name",
    "driver_version",
    "persistence_mode",
    "ecc.mode.current",
    "pstate",
    # the link as trained now (the GPU's PCIe LnkSta) and the best it can train at: nvidia-smi's
    # max is the lower of the GPU's and the slot's capability (LnkCap), so current < max is a
    # link that trained down (a bad riser, a dirty connector), not a slower slot
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "mig.mode.current",
)
SIZE_NAMES = {2048: "2M", 1048576: "1G"}
# Idle states that keep wake-up latency at C1 level (what max_cstate=1 / intel_idle off give).
SHALLOW_IDLE_STATES = {"POLL", "C1", "C1_ACPI", "C1-ACPI"}
NOT_AVAILABLE = {"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]"}


def row(check, expected, actual, status, detail=""):
    return {"check": check, "expected": str(expected), "actual": str(actual), "status": status, "detail": detail}


def planned(value):
    return value is not None and value != "" and value != [] and value != {}


# ----------------------------------------------------------------------------- parsing


def parse_gpu_csv(text):
    """Parse `nvidia-smi --query-gpu=<GPU_FIELDS> --format=csv,noheader,nounits` output."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(GPU_FIELDS):
            raise ValueError(f"nvidia-smi line has {len(values)} fields, expected {len(GPU_FIELDS)}: {line!r}")
        gpus.append({k: (None if v in NOT_AVAILABLE else v) for k, v in zip(GPU_FIELDS, values, strict=True)})
    return gpus


def parse_meminfo(text):
    info = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value:
            info[key.strip()] = int(value.split()[0])
    return info


def parse_cmdline(text):
    return text.split()


def recorded_expectations(expected, recorded):
    """`expected` with what the owning roles recorded on the node (recorded: owner -> its plan,
    as read from its fact file; an owner that did not run is absent). Values expected sets win,
    except the command line: the recorded parameters come first, then expected's own."""
    ht = recorded.get("host_tuning") or {}
    hp = recorded.get("hugepages") or {}
    out = dict(expected)
    cmdline = list(ht.get("cmdline_params") or []) + list(hp.get("cmdline_params") or [])
    out["cmdline"] = list(dict.fromkeys(cmdline + list(expected.get("cmdline") or [])))

    def fill(key, value):
        if out.get(key) is None or out.get(key) == "":
            out[key] = value

    fill("governor", ht.get("governor_wanted") or None)
    fill("cstates_limited", any("max_cstate" in str(p) for p in ht.get("cmdline_params") or []) if ht else None)
    fill("pcie_acs_disabled", (ht.get("pcie_acs") or {}).get("disable"))
    fill("firmware", (recorded.get("rdma") or {}).get("firmware"))
    fill("gpudirect_rdma", (recorded.get("nvidia_driver") or {}).get("gpudirect_rdma"))
    return out


# ----------------------------------------------------------------------------- comparing


def _version_matches(pin, actual):
    """A pin "535" or "535.183" matches 535.183.01 (branch or prefix); "535.183.01" only itself."""
    return actual == pin or actual.startswith(pin + ".")


def _per_gpu(gpus, field, want, label, check):
    bad = [g["index"] for g in gpus if (g[field] or "n/a") != want]
    if not bad:
        return row(check, f"{want} on all", f"{want} on {len(gpus)}/{len(gpus)}", OK)
    seen = sorted({g[field] or "n/a" for g in gpus if g["index"] in bad})
    return row(check, f"{want} on all", f"{'/'.join(seen)} on GPU {','.join(bad)}", MISMATCH, label)


def compare_gpus(gpus, expected, require_gpu, absent_reason=""):
    """GPU rows. gpus is None or [] when no NVIDIA GPU was found (absent_reason says why)."""
    if not gpus:
        status = MISMATCH if require_gpu else SKIPPED
        detail = "" if require_gpu else "node_check_require_gpu is false: GPU checks skipped"
        return [row("gpu present", expected.get("gpu_count") or ">= 1",
                    f"no NVIDIA GPU found ({absent_reason or 'nvidia-smi lists none'})", status, detail)]
    rows = []
    count = expected.get("gpu_count")
    if planned(count):
        rows.append(row("gpu count", count, len(gpus), OK if len(gpus) == int(count) else MISMATCH,
                        "superpod_gpu_count of the node model"))
    else:
        rows.append(row("gpu count", "not planned", len(gpus), NOT_PLANNED))

    model = expected.get("gpu_model")
    if planned(model):
        # catalog ids look like h100-sxm5-80gb; nvidia-smi names like "NVIDIA H100 80GB HBM3"
        family = str(model).split("-")[0].upper()
        names = sorted({g["name"] or "n/a" for g in gpus})
        ok = all(re.search(r"\b" + re.escape(family) + r"\b", n, re.IGNORECASE) for n in names)
        rows.append(row("gpu model", f"{model} (name has {family})", "; ".join(names), OK if ok else MISMATCH))
    else:
        rows.append(row("gpu model", "not planned", "; ".join(sorted({g["name"] or "n/a" for g in gpus})), NOT_PLANNED))

    pin = expected.get("driver_version")
    versions = sorted({g["driver_version"] or "n/a" for g in gpus})
    if planned(pin):
        ok = all(_version_matches(str(pin), v) for v in versions)
        rows.append(row("driver version", pin, ", ".join(versions), OK if ok else MISMATCH, "nvidia_driver pin"))
    else:
        rows.append(row("driver version", "not planned", ", ".join(versions), NOT_PLANNED))

    for key, field, check in (("persistence_mode", "persistence_mode", "persistence mode"),
                              ("ecc", "ecc.mode.current", "ECC mode"),
                              ("mig", "mig.mode.current", "MIG mode")):
        want = expected.get(key)
        if want is None:
            rows.append(row(check, "not planned", ", ".join(sorted({g[field] or "n/a" for g in gpus})), NOT_PLANNED))
            continue
        wanted = "Enabled" if want else "Disabled"
        if key == "mig" and not want and all(g[field] is None for g in gpus):
            # GPUs without MIG support report N/A: that is "not in MIG mode"
            rows.append(row(check, wanted, "n/a (no MIG support)", OK))
            continue
        rows.append(_per_gpu(gpus, field, wanted, "", check))

    rows.append(compare_pcie_link(gpus, "gen", expected.get("pcie_gen"), "PCIe link generation"))
    rows.append(compare_pcie_link(gpus, "width", expected.get("pcie_width"), "PCIe link width"))
    return rows


def compare_pcie_link(gpus, what, planned_value, check):
    """The trained link (current) of every GPU against its capability (max: GPU and slot) and the
    plan. A generation below the capability on a GPU in a power-saving P-state is no finding:
    GPUs lower the link speed when idle (P8), never in P0 (the real H100 node idles in P0 at
    Gen5); the width is not lowered for power."""
    cur_f, max_f = f"pcie.link.{what}.current", f"pcie.link.{what}.max"
    low, capped, resting = [], [], []
    for g in gpus:
        cur, cap = g[cur_f], g[max_f]
        if cur is None:
            low.append(g["index"])
        elif planned(planned_value) and cap is not None and int(cap) < int(planned_value):
            capped.append(g["index"])  # the slot (or GPU) cannot reach the plan: no training fixes it
        elif cap is not None and int(cur) < int(cap) or planned(planned_value) and int(cur) < int(planned_value):
            (resting if what == "gen" and (g.get("pstate") or "P0") != "P0" else low).append(g["index"])
    want = (f">= {planned_value}, " if planned(planned_value) else "") + "as capable (max)"
    actual = ", ".join(sorted({f"{g[cur_f] or 'n/a'} of {g[max_f] or 'n/a'}" for g in gpus}))
    details = ([f"trained below its capability on GPU {','.join(low)}"] if low else []) \
        + ([f"capability below the plan on GPU {','.join(capped)} (slot or riser)"] if capped else [])
    if details:
        return row(check, want, actual, MISMATCH, "; ".join(details))
    if resting:
        return row(check, want, actual, OK, f"GPU {','.join(resting)} idle below P0: link speed lowered for power")
    return row(check, want, actual, OK)


def compare_hugepages(meminfo, pools, expected, host_kernel):
    """HugePages rows. pools: {size_kb: {"total": n, "nodes": {node: n}}} from sysfs.
    expected: {"2M": {"count": n, "per_node": {node: n}}, "1G": {...}} (only planned sizes)."""
    if not planned(expected):
        default_pages = meminfo.get("HugePages_Total", "n/a")
        return [row("hugepages", "not planned", f"{default_pages} default-size pages", NOT_PLANNED)]
    if not host_kernel:
        return [row("hugepages", "as planned", "pools belong to the host kernel", SKIPPED,
                    "container: HugePages pools are the host's")]
    rows = []
    by_name = {name: kb for kb, name in SIZE_NAMES.items()}
    for size, plan in sorted(expected.items()):
        kb = by_name[size]
        pool = pools.get(kb)
        per_node = {int(k): int(v) for k, v in (plan.get("per_node") or {}).items()}
        if pool is None:
            rows.append(row(f"hugepages {size}", plan, f"no {size} pool (kernel/CPU lacks {kb}kB pages)", MISMATCH))
            continue
        if per_node:
            for node, want in sorted(per_node.items()):
                have = pool["nodes"].get(node)
                rows.append(row(f"hugepages {size} node{node}", want, "no such node" if have is None else have,
                                OK if have == want else MISMATCH))
        else:
            want = int(plan.get("count") or 0)
            rows.append(row(f"hugepages {size} total", want, pool["total"], OK if pool["total"] == want else MISMATCH))
    return rows


def compare_cmdline(running, bootloader, expected, host_kernel):
    """Kernel command line rows: the bootloader's (configured) and the running kernel's."""
    if not planned(expected):
        return [row("kernel cmdline", "not planned", f"{len(running)} parameters running", NOT_PLANNED)]
    rows = []
    if bootloader is None:
        rows.append(row("kernel cmdline (bootloader)", " ".join(expected), "no bootloader stamp", MISMATCH,
                        "host_tuning/hugepages never handed a command line to the bootloader"))
    else:
        missing = [p for p in expected if p not in bootloader]
        rows.append(row("kernel cmdline (bootloader)", " ".join(expected),
                        "all present" if not missing else "missing " + " ".join(missing),
                        OK if not missing else MISMATCH))
    if not host_kernel:
        rows.append(row("kernel cmdline (running)", " ".join(expected), "running kernel is the host's", SKIPPED,
                        "container: /proc/cmdline is the host's"))
    else:
        missing = [p for p in expected if p not in running]
        rows.append(row("kernel cmdline (running)", " ".join(expected),
                        "all present" if not missing else "missing " + " ".join(missing),
                        OK if not missing else MISMATCH, "reboot pending" if missing else ""))
    return rows


def compare_governor(governors, expected, host_kernel):
    """governors: the scaling_governor of every CPU, or None when cpufreq is absent."""
    if not planned(expected):
        actual = ", ".join(sorted(set(governors or []))) or "no cpufreq"
        return [row("cpu governor", "not planned", actual, NOT_PLANNED)]
    if not host_kernel:
        return [row("cpu governor", expected, "cpufreq belongs to the host", SKIPPED, "container")]
    if governors is None:
        return [row("cpu governor", expected, "no cpufreq interface", SKIPPED,
                    "no cpufreq here (VM or BIOS-controlled P-states): governor cannot be read")]
    others = sorted(set(governors) - {expected})
    return [row("cpu governor", f"{expected} on all CPUs",
                f"{expected} on {len(governors)} CPUs" if not others else f"{', '.join(others)} on some CPUs",
                OK if not others else MISMATCH)]


def compare_cstates(idle, expected_limited, host_kernel):
    """idle: {"driver": str, "enabled": [state names of cpu0 not disabled]} or None (no cpuidle)."""
    if expected_limited is None:
        return [row("C-states", "not planned", (idle or {}).get("driver", "no cpuidle"), NOT_PLANNED)]
    if not host_kernel:
        return [row("C-states", "limited to C1", "cpuidle belongs to the host", SKIPPED, "container")]
    if idle is None:
        return [row("C-states", "limited to C1" if expected_limited else "not limited", "no cpuidle interface", SKIPPED,
                    "no cpuidle here (VM or idle states off in firmware)")]
    deep = [s for s in idle["enabled"] if s not in SHALLOW_IDLE_STATES]
    actual = f"{idle['driver']}: {' '.join(idle['enabled']) or 'none'}"
    if expected_limited:
        return [row("C-states", "limited to C1", actual, OK if not deep else MISMATCH,
                    f"deep states enabled: {' '.join(deep)}" if deep else "")]
    return [row("C-states", "not limited", actual, OK)]


def compare_pcie_acs(acs, expected_disabled, host_kernel, reason=""):
    """acs: {bridge bdf: ACSCtl hex} of the PCI bridges with ACS, or None (unreadable: reason).
    host_tuning plans ACS off on bare metal (GPUDirect P2P through PCIe switches)."""
    if expected_disabled is None:
        return [row("pcie acs", "not planned", "not read", NOT_PLANNED)]
    want = "off on every bridge" if expected_disabled else "left on"
    if not host_kernel:
        return [row("pcie acs", want, "PCI bridges belong to the host", SKIPPED, "container")]
    if acs is None:
        return [row("pcie acs", want, "unknown", SKIPPED, reason)]
    on = sorted(bdf for bdf, ctl in acs.items() if ctl != "0000")
    actual = f"on at {', '.join(on)}" if on else f"off on {len(acs)} bridge(s)"
    if expected_disabled:
        detail = "GPUDirect P2P goes through the root complex; superpod-pcie-acs.service clears it at boot"
        return [row("pcie acs", want, actual, MISMATCH if on else OK, detail if on else "")]
    return [row("pcie acs", want, actual, OK)]


def compare_firmware(firmware):
    """firmware: the rdma role's report of the rail HCAs' ConnectX settings (its local fact), or
    None. What could not be read is said so, never reported as set."""
    if firmware is None:
        return [row("connectx firmware", "not planned", "no rdma report", NOT_PLANNED)]
    state = firmware.get("state", "not managed")
    if state == "not managed":
        return [row("connectx firmware", "not planned", state, NOT_PLANNED)]
    if state != "read":
        missing = ", ".join(firmware.get("missing_hcas") or [])
        detail = f"rail HCA(s) {missing} absent" if missing else "LINK_TYPE/ATS unchecked until a run installs the tool"
        return [row("connectx firmware", "as planned by rdma", state, SKIPPED, detail)]
    off = [s for s in firmware.get("settings") or [] if s.get("pending") or s.get("set")]
    actual = "; ".join(f"{s['hca']} {s['param']} {s['current']} (next boot {s['next']})" for s in off)
    return [row("connectx firmware", "as planned by rdma", actual or "as planned", MISMATCH if off else OK,
                "" if not off else "not written yet: run rdma" if any(s.get("set") for s in off)
                else "written, waits for a reboot")]


def compare_links(links, expected, require):
    """links: {netdev: {"operstate", "mtu", "speed"} or None when absent}.
    expected: [{"name": label, "netdev": str, "mtu": int|None, "speed": int|None (Mb/s),
    "speed_unchecked": why the speed is not compared, when switched off}]."""
    if not expected:
        return [row("rail links", "not planned", "no rails in the inventory", NOT_PLANNED)]
    rows = []
    for want in expected:
        label = f"link {want['name']} {want['netdev']}"
        parts = ["up"] + ([f"mtu {want['mtu']}"] if planned(want.get("mtu")) else []) \
            + ([f"{want['speed']} Mb/s"] if planned(want.get("speed")) else [])
        have = links.get(want["netdev"])
        if have is None:
            rows.append(row(label, ", ".join(parts), "no such netdev", MISMATCH if require else SKIPPED,
                            "" if require else "node_check_require_rail_links is false"))
            continue
        bad = []
        if have["operstate"] != "up":
            bad.append(f"state {have['operstate']}")
        if planned(want.get("mtu")) and have["mtu"] != int(want["mtu"]):
            bad.append(f"mtu {have['mtu']}")
        if planned(want.get("speed")) and have["speed"] != int(want["speed"]):
            bad.append(f"speed {have['speed']}")
        speed = "speed n/a" if have["speed"] is None else f"{have['speed']} Mb/s"
        actual = f"{have['operstate']}, mtu {have['mtu']}, {speed}"
        # a speed switched off is said on the row, never passed over in silence
        rows.append(row(label, ", ".join(parts), actual, MISMATCH if bad else OK,
                        "; ".join(bad) or (f"speed not checked: {want['speed_unchecked']}"
                                           if want.get("speed_unchecked") else "")))
    return rows


def parse_lldp_neighbors(doc):
    """{local ifname: [(system name, port)]} from `lldpctl -f json` or `-f json0` output (lldpd
    collapses one-element lists to objects in json; json0 keeps lists and {"value": x})."""
    def listed(v):
        return [] if v is None else v if isinstance(v, list) else [v]

    def plain(v):
        while isinstance(v, list):
            v = v[0] if v else None
        return v["value"] if isinstance(v, dict) and "value" in v else v

    out = {}
    for lldp in listed((doc or {}).get("lldp")):
        for item in listed(lldp.get("interface") if isinstance(lldp, dict) else None):
            if not isinstance(item, dict):
                continue
            pairs = [(plain(item["name"]), item)] if "name" in item else list(item.items())
            for ifname, rec in pairs:
                if not isinstance(rec, dict):
                    continue
                name = None
                for ch in listed(rec.get("chassis")):
                    if "name" in ch:
                        name = plain(ch["name"])
                    else:
                        name = next((k for k, v in ch.items() if isinstance(v, dict) and k != "id"), name)
                port = None
                for p in listed(rec.get("port")):
                    pid = (listed(p.get("id")) or [{}])[0]
                    kind, value = plain(pid.get("type")), plain(pid.get("value"))
                    port = value if kind in ("ifname", "local") else (plain(p.get("descr")) or value)
                if name and port:
                    out.setdefault(str(ifname), []).append((str(name), str(port)))
    return out


def compare_rail_lldp(neighbors, expected, mode, reason="", absent=(), require=True):
    """neighbors: parse_lldp_neighbors() output, None when lldpctl did not answer (reason says why).
    expected: the links rows with "leaf" and "leaf_port"; absent: their netdevs that do not exist
    (a mismatch when `require`, as for the link check). A rail whose cable reaches another rail's
    leaf still links up: only LLDP shows the swap that halves NCCL's bandwidth."""
    planned_rails = [w for w in expected if planned(w.get("leaf")) and planned(w.get("leaf_port"))]
    if mode == "off":
        return [row("rail LLDP", "off", "not checked", SKIPPED, "node_check_rail_lldp is off")]
    if not planned_rails:
        return [row("rail LLDP", "not planned", "no rail leaf ports in the inventory", NOT_PLANNED)]
    if neighbors is None:
        return [row("rail LLDP", "lldpd neighbors", reason or "lldpctl did not answer",
                    MISMATCH if mode == "required" else SKIPPED,
                    "" if mode == "required" else "run the lldp role (node_check_rail_lldp: auto)")]
    leaf_of = {w["leaf"]: w["name"] for w in planned_rails}
    rows = []
    for want in planned_rails:
        label = f"lldp {want['name']} {want['netdev']}"
        target = (want["leaf"], want["leaf_port"])
        if want["netdev"] in absent:
            rows.append(row(label, f"{target[0]} {target[1]}", "no such netdev", MISMATCH if require else SKIPPED,
                            "" if require else "node_check_require_rail_links is false"))
            continue
        seen = neighbors.get(want["netdev"]) or []
        actual = ", ".join(f"{n} {p}" for n, p in seen) or "no LLDP neighbor"
        if target in seen:
            rows.append(row(label, f"{target[0]} {target[1]}", actual, OK))
            continue
        if not seen:
            detail = "cable unplugged, link down or lldpd off on the leaf"
        elif seen[0][0] in leaf_of and seen[0][0] != want["leaf"]:
            detail = f"cable reaches {leaf_of[seen[0][0]]}'s leaf: rails swapped"
        elif seen[0][0] == want["leaf"]:
            detail = f"wrong port on {want['leaf']}: move to {want['leaf_port']}"
        else:
            detail = "cable reaches a device that is not this rail's leaf"
        rows.append(row(label, f"{target[0]} {target[1]}", actual, MISMATCH, detail))
    return rows


# `NVRM: Xid (PCI:0000:44:00): 79, pid=..., GPU has fallen off the bus.` (older drivers: no pid)
XID_LINE = re.compile(r"NVRM: Xid \((PCI:[0-9A-Fa-f:.]+)\): (\d+),")
# /sys/class/infiniband/<hca>/ports/<n>/rate, as the kernel prints it: "400 Gb/sec (4X NDR)"
IB_RATE = re.compile(r"^(\d+(?:\.\d+)?) Gb/sec")
# the kernel's link layer names per planned fabric kind (spec compute_fabric.kind)
LINK_LAYER = {"infiniband": "InfiniBand", "roce": "Ethernet"}


def parse_smi_xml(text):
    """Per GPU from `nvidia-smi -q -x`: PCI bus id, NVLink fabric state/status and remapped rows.
    N/A fields (no NVSwitch, no row remapper) become None."""
    def value(gpu, path):
        text = gpu.findtext(path)
        text = text.strip() if text is not None else None
        return None if text is None or text in NOT_AVAILABLE else text

    root = ET.fromstring(text)
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"not nvidia-smi -q -x output (root element {root.tag})")
    return [{"bus_id": g.get("id"),
             "fabric_state": value(g, "fabric/state"), "fabric_status": value(g, "fabric/status"),
             "remap_pending": value(g, "remapped_rows/remapped_row_pending"),
             "remap_failure": value(g, "remapped_rows/remapped_row_failure"),
             "remap_uncorrectable": value(g, "remapped_rows/remapped_row_unc")}
            for g in root.findall("gpu")]


def parse_xids(text):
    """{PCI address: {xid: count}} from kernel log lines."""
    out = {}
    for m in XID_LINE.finditer(text or ""):
        per_gpu = out.setdefault(m.group(1), {})
        per_gpu[int(m.group(2))] = per_gpu.get(int(m.group(2)), 0) + 1
    return out


def parse_ib_value(text):
    """sysfs "4: ACTIVE" / "5: LinkUp" -> the name; None when unreadable."""
    return None if text is None else text.split(":", 1)[-1].strip()


def parse_ib_rate(text):
    """sysfs "400 Gb/sec (4X NDR)" -> 400.0; None when unreadable or in another format."""
    m = IB_RATE.match(text or "")
    return float(m.group(1)) if m else None


def compare_fabric(xml_gpus, nvswitch, reason=""):
    """NVLink fabric registration. With NVSwitches (the node model's), the fabric manager must have
    registered every GPU: state Completed, status Success (NVML: status counts only when complete)."""
    if nvswitch is None:
        return [row("gpu fabric", "not planned", reason or "not compared", NOT_PLANNED)]
    if xml_gpus is None:
        return [row("gpu fabric", "read", reason, MISMATCH if nvswitch else SKIPPED, "nvidia-smi -q -x failed")]
    seen = ", ".join(sorted({f"{g['fabric_state'] or 'n/a'}/{g['fabric_status'] or 'n/a'}" for g in xml_gpus}))
    if not nvswitch:
        return [row("gpu fabric", "no NVSwitch planned", seen, OK)]
    bad = [g for g in xml_gpus if (g["fabric_state"], g["fabric_status"]) != ("Completed", "Success")]
    actual = (f"Completed/Success on {len(xml_gpus)}/{len(xml_gpus)}" if not bad else
              "; ".join(f"{g['fabric_state'] or 'n/a'}/{g['fabric_status'] or 'n/a'} on {g['bus_id']}" for g in bad))
    states = {g["fabric_state"] for g in bad}
    if not bad:
        detail = ""
    elif states & {None, "Not Started"}:
        detail = "fabric manager not running or GPUs not registered (n/a: no fabric seen)"
    elif states == {"In Progress"}:
        detail = "registration still in progress: check again, then the fabric manager log"
    else:
        detail = "NVLink training or registration failed: see the fabric manager log"
    return [row("gpu fabric", "Completed/Success on all (NVSwitch node)", actual, MISMATCH if bad else OK, detail)]


def compare_row_remap(xml_gpus):
    """A pending remap waits for a GPU reset; a failed remap means the GPU must be replaced."""
    if xml_gpus is None:
        return []
    if all(g["remap_pending"] is None and g["remap_failure"] is None for g in xml_gpus):
        return [row("gpu row remap", "none pending, none failed", "n/a (no row remapper)", OK)]
    pending = [g["bus_id"] for g in xml_gpus if g["remap_pending"] == "Yes"]
    failed = [g["bus_id"] for g in xml_gpus if g["remap_failure"] == "Yes"]
    parts = (([f"pending on {', '.join(pending)}"] if pending else [])
             + ([f"failed on {', '.join(failed)}"] if failed else []))
    detail = "; ".join((["drain and reset the GPU to apply the remap"] if pending else [])
                       + (["row remapping failed: replace the GPU"] if failed else []))
    return [row("gpu row remap", "none pending, none failed",
                "; ".join(parts) or f"none on {len(xml_gpus)} GPU(s)", MISMATCH if parts else OK, detail)]


def compare_xids(xids, allowed, host_kernel, reason=""):
    """xids: parse_xids() of the kernel log since boot, or None (unreadable: reason)."""
    want = "none since boot" + (f" except {', '.join(str(x) for x in sorted(allowed))}" if allowed else "")
    if not host_kernel:
        return [row("gpu XIDs", want, "kernel log is the host's", SKIPPED, "container")]
    if xids is None:
        return [row("gpu XIDs", want, reason or "kernel log not readable", MISMATCH,
                    "XIDs cannot be ruled out without the kernel log")]
    counts = [(bus, x, n) for bus, per in sorted(xids.items()) for x, n in sorted(per.items())]
    bad = [(bus, x, n) for bus, x, n in counts if x not in allowed]
    actual = "; ".join(f"Xid {x} x{n} on {bus}" for bus, x, n in counts) or "none"
    named = ", ".join(sorted({str(x) for _, x, _ in bad}))
    return [row("gpu XIDs", want, actual, MISMATCH if bad else OK,
                f"see NVIDIA's XID catalog for Xid {named}" if bad else "")]


def compare_gpudirect(mode, state, host_kernel):
    """mode: the GPUDirect RDMA path nvidia_driver chose (its recorded report), None when it did not
    run here. state: {"peermem": bool, "open_modules": bool|None, "kernel": str}."""
    if mode in (None, "", "none"):
        return [row("gpudirect rdma", "not planned", f"nvidia_driver chose {mode or 'nothing here'}", NOT_PLANNED)]
    if not host_kernel:
        return [row("gpudirect rdma", mode, "kernel modules are the host's", SKIPPED, "container")]
    if mode == "peermem":
        return [row("gpudirect rdma", "nvidia_peermem loaded", "loaded" if state["peermem"] else "not loaded",
                    OK if state["peermem"] else MISMATCH,
                    "" if state["peermem"] else "not loaded: nvidia_driver loads it at boot after ib_core")]
    kernel = tuple(int(x) for x in re.findall(r"\d+", state.get("kernel") or "0")[:2])
    missing = (["nvidia module is not the open one" if state["open_modules"] is False else "nvidia module not loaded"]
               if not state["open_modules"] else []) + (["kernel < 5.12"] if kernel < (5, 12) else [])
    actual = "open modules, kernel " + (state.get("kernel") or "?") if not missing else "; ".join(missing)
    return [row("gpudirect rdma", "DMA-BUF (open modules, kernel >= 5.12)", actual, MISMATCH if missing else OK)]


def compare_rail_ports(ports, expected, kind, speed_gbps, require, host_kernel):
    """ports: {hca: {"state", "phys_state", "rate", "link_layer"} or None (no such HCA)}.
    expected: the links rows with "hca"; kind: the planned fabric kind; speed_gbps: planned NIC speed."""
    rails = [w for w in expected if planned(w.get("hca"))]
    if not rails:
        return [row("rail ports", "not planned", "no rail HCAs in the inventory", NOT_PLANNED)]
    if not host_kernel:
        return [row("rail ports", "ACTIVE", "HCAs belong to the host", SKIPPED, "container")]
    layer = LINK_LAYER.get(kind or "")
    rows = []
    for want in rails:
        label = f"port {want['name']} {want['hca']}"
        parts = ["ACTIVE", "LinkUp"] + ([f"{speed_gbps:g} Gb/sec"] if planned(speed_gbps) else []) \
            + ([layer] if layer else [])
        have = ports.get(want["hca"])
        if have is None:
            rows.append(row(label, ", ".join(parts), "no such HCA port", MISMATCH if require else SKIPPED,
                            "" if require else "node_check_require_rail_links is false"))
            continue
        state, phys, rate = parse_ib_value(have["state"]), parse_ib_value(have["phys_state"]), have["rate"]
        bad = ([f"state {state}"] if state != "ACTIVE" else []) + ([f"phys_state {phys}"] if phys != "LinkUp" else [])
        if planned(speed_gbps) and parse_ib_rate(rate) != float(speed_gbps):
            bad.append(f"rate {rate or 'n/a'}")
        if layer and have["link_layer"] != layer:
            bad.append(f"link layer {have['link_layer']}")
        rows.append(row(label, ", ".join(parts), f"{state}, {phys}, {rate or 'rate n/a'}, {have['link_layer']}",
                        MISMATCH if bad else OK, "; ".join(bad)))
    return rows


def render_table(host, rows):
    heads = ("CHECK", "EXPECTED", "ACTUAL", "STATUS")
    cells = [(r["check"], r["expected"], r["actual"], r["status"] + (f" ({r['detail']})" if r["detail"] else ""))
             for r in rows]
    widths = [min(48, max(len(h), *(len(c[i]) for c in cells))) for i, h in enumerate(heads[:3])]
    counts = {s: sum(r["status"] == s for r in rows) for s in (MISMATCH, OK, SKIPPED, NOT_PLANNED)}
    lines = [f"node_check {host}: {counts[MISMATCH]} MISMATCH, {counts[OK]} ok, "
             f"{counts[SKIPPED]} skipped, {counts[NOT_PLANNED]} not planned"]
    for c in [heads] + cells:
        lines.append("  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3])
    return lines


# ----------------------------------------------------------------------------- gathering


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def read_recorded_plans(files):
    """(owner -> its recorded plan, error): an owner whose file is missing did not run here; a
    file that is not a JSON object is an error naming it."""
    plans = {}
    for owner, path in sorted((files or {}).items()):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            return None, f"recorded_plans.{owner}: cannot read {path}: {e.strerror}"
        try:
            plan = json.loads(text)
        except ValueError as e:
            return None, f"recorded_plans.{owner}: {path} is not JSON: {e}"
        if not isinstance(plan, dict):
            return None, f"recorded_plans.{owner}: {path} must hold a JSON object"
        plans[owner] = plan
    return plans, ""


def read_hugepage_pools():
    pools = {}
    for d in glob.glob("/sys/kernel/mm/hugepages/hugepages-*kB"):
        kb = int(re.search(r"(\d+)kB$", d).group(1))
        nodes = {}
        for nd in glob.glob(f"/sys/devices/system/node/node*/hugepages/hugepages-{kb}kB/nr_hugepages"):
            nodes[int(re.search(r"/node(\d+)/", nd).group(1))] = int(_read(nd) or 0)
        pools[kb] = {"total": int(_read(os.path.join(d, "nr_hugepages")) or 0), "nodes": nodes}
    return pools


def read_governors():
    files = glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
    return [_read(f) for f in files] or None


def read_cpuidle():
    driver = _read("/sys/devices/system/cpu/cpuidle/current_driver")
    states = sorted(glob.glob("/sys/devices/system/cpu/cpu0/cpuidle/state[0-9]*"),
                    key=lambda p: int(p.rsplit("state", 1)[1]))
    if driver in (None, "none") or not states:
        return None
    enabled = [_read(os.path.join(s, "name")) for s in states if _read(os.path.join(s, "disable")) == "0"]
    return {"driver": driver, "enabled": enabled}


def read_link(netdev):
    base = f"/sys/class/net/{netdev}"
    if not os.path.isdir(base):
        return None
    speed = _read(os.path.join(base, "speed"))  # reading speed of a down link fails (EINVAL)
    return {"operstate": _read(os.path.join(base, "operstate")) or "unknown",
            "mtu": int(_read(os.path.join(base, "mtu")) or 0),
            # -1 (or EINVAL) when the driver does not know the speed (virtual, down)
            "speed": int(speed) if speed and speed.isdigit() else None}


def read_pcie_acs(module, sysfs="/sys/bus/pci/devices", setpci="setpci"):
    """({bdf: ACSCtl} of the PCI bridges with an ACS capability, reason); None when setpci is missing."""
    path = setpci if os.path.isabs(setpci) else module.get_bin_path(setpci)
    if not path or not os.path.exists(path):
        return None, "setpci (pciutils) not installed"
    acs = {}
    for dev in sorted(glob.glob(os.path.join(sysfs, "*"))):
        if not (_read(os.path.join(dev, "class")) or "").startswith("0x0604"):
            continue
        rc, out, _ = module.run_command([path, "-s", os.path.basename(dev), "ECAP_ACS+0x6.w"])
        if rc == 0 and out.strip():  # rc != 0: no ACS capability on this bridge
            acs[os.path.basename(dev)] = out.strip()
    return acs, ""


def read_lldp(module, lldpctl):
    """(neighbors, reason): neighbors None when lldpctl is missing or fails."""
    path = lldpctl if os.path.isabs(lldpctl) else module.get_bin_path(lldpctl)
    if not path or not os.path.exists(path):
        return None, "lldpctl not installed"
    rc, out, err = module.run_command([path, "-f", "json"])
    if rc != 0:
        return None, f"lldpctl rc={rc}: {(err or out).strip()[:200]}"
    try:
        return parse_lldp_neighbors(json.loads(out)), ""
    except ValueError as e:
        return None, f"lldpctl printed no JSON: {e}"


def read_gpus(module, nvidia_smi):
    """(gpus, reason): gpus None when there is no usable nvidia-smi or no GPU."""
    path = nvidia_smi if os.path.isabs(nvidia_smi) else module.get_bin_path(nvidia_smi)
    if not path or not os.path.exists(path):
        return None, "nvidia-smi not installed"
    rc, out, err = module.run_command([path, "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"])
    if rc != 0:
        return None, f"nvidia-smi rc={rc}: {(err or out).strip()[:200]}"
    gpus = parse_gpu_csv(out)
    return gpus, "" if gpus else "nvidia-smi lists no GPU"


def read_smi_xml(module, nvidia_smi):
    """(per-GPU rows of `nvidia-smi -q -x`, reason); None when it fails."""
    path = nvidia_smi if os.path.isabs(nvidia_smi) else module.get_bin_path(nvidia_smi)
    rc, out, err = module.run_command([path, "-q", "-x"])
    if rc != 0:
        return None, f"nvidia-smi -q -x rc={rc}: {(err or out).strip()[:200]}"
    try:
        return parse_smi_xml(out), ""
    except (ET.ParseError, ValueError) as e:
        return None, f"nvidia-smi -q -x printed no usable XML: {e}"


def read_kernel_log(module):
    """(kernel messages of this boot, reason): journalctl -k, else dmesg; None when neither answers."""
    reason = "neither journalctl nor dmesg installed"
    for argv in (["journalctl", "-k", "-b", "0", "-o", "cat", "--no-pager", "-q"], ["dmesg"]):
        path = module.get_bin_path(argv[0])
        if not path:
            continue
        rc, out, err = module.run_command([path, *argv[1:]])
        if rc == 0:
            return out, ""
        reason = f"{argv[0]} rc={rc}: {(err or out).strip()[:200]}"
    return None, reason


def read_rail_ports(hcas, root="/sys/class/infiniband", port=1):
    """{hca: port sysfs values or None}: each rail NIC is single-port (port 1)."""
    out = {}
    for hca in hcas:
        base = os.path.join(root, hca, "ports", str(port))
        out[hca] = None if not os.path.isdir(base) else {
            name: _read(os.path.join(base, name)) for name in ("state", "phys_state", "rate", "link_layer")}
    return out


def read_gpudirect(sys_module="/sys/module", proc_version="/proc/driver/nvidia/version"):
    """What GPUDirect RDMA rests on: nvidia_peermem loaded; the loaded nvidia module open or not
    ("NVIDIA UNIX Open Kernel Module" in its banner; None when no nvidia module is loaded)."""
    banner = _read(proc_version)
    return {"peermem": os.path.isdir(os.path.join(sys_module, "nvidia_peermem")),
            "open_modules": None if banner is None else "Open Kernel Module" in banner,
            "kernel": os.uname().release}


def main():
    module = AnsibleModule(
        argument_spec={
            "expected": {"type": "dict", "required": True},
            "require_gpu": {"type": "bool", "default": True},
            "require_rail_links": {"type": "bool", "default": True},
            "host_kernel_checks": {"type": "bool", "default": True},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "bootloader_stamp": {"type": "path", "default": "/var/lib/superpod/bootloader-cmdline"},
            "rail_lldp": {"type": "str", "choices": ["auto", "required", "off"], "default": "auto"},
            "lldpctl": {"type": "str", "default": "lldpctl"},
            "xid_allowed": {"type": "list", "elements": "int", "default": []},
            "recorded_plans": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    recorded, problem = read_recorded_plans(p["recorded_plans"])
    if problem:
        module.fail_json(msg=problem)
    exp = recorded_expectations(p["expected"], recorded)
    host_kernel = p["host_kernel_checks"]
    try:
        gpus, reason = read_gpus(module, p["nvidia_smi"])
    except ValueError as e:
        module.fail_json(msg=f"cannot parse nvidia-smi output: {e}")
    bootloader = _read(p["bootloader_stamp"])
    links = {link["netdev"]: read_link(link["netdev"]) for link in exp.get("links") or []}
    neighbors, lldp_reason = read_lldp(module, p["lldpctl"]) if p["rail_lldp"] != "off" else (None, "")
    acs_planned = exp.get("pcie_acs_disabled") is not None and host_kernel
    acs, acs_reason = read_pcie_acs(module) if acs_planned else (None, "")
    gpu_health = []
    if gpus:
        xml_gpus, xml_reason = read_smi_xml(module, p["nvidia_smi"])
        log, log_reason = read_kernel_log(module) if host_kernel else (None, "")
        gpu_health = (compare_fabric(xml_gpus, exp.get("nvswitch"), xml_reason) + compare_row_remap(xml_gpus)
                      + compare_xids(None if log is None else parse_xids(log), p["xid_allowed"], host_kernel,
                                     log_reason)
                      + compare_gpudirect(exp.get("gpudirect_rdma"), read_gpudirect(), host_kernel))
    hcas = [link["hca"] for link in exp.get("links") or [] if planned(link.get("hca"))]
    rows = (compare_gpus(gpus, exp, p["require_gpu"], reason) + gpu_health
            + compare_hugepages(parse_meminfo(_read("/proc/meminfo") or ""), read_hugepage_pools(),
                                exp.get("hugepages") or {}, host_kernel)
            + compare_cmdline(parse_cmdline(_read("/proc/cmdline") or ""),
                              None if bootloader is None else parse_cmdline(bootloader),
                              exp.get("cmdline") or [], host_kernel)
            + compare_governor(read_governors(), exp.get("governor"), host_kernel)
            + compare_cstates(read_cpuidle(), exp.get("cstates_limited"), host_kernel)
            + compare_pcie_acs(acs, exp.get("pcie_acs_disabled"), host_kernel, acs_reason)
            + compare_firmware(exp.get("firmware"))
            + compare_links(links, exp.get("links") or [], p["require_rail_links"])
            + compare_rail_ports(read_rail_ports(hcas) if host_kernel else {}, exp.get("links") or [],
                                 exp.get("fabric_kind"), exp.get("rail_speed_gbps"), p["require_rail_links"],
                                 host_kernel)
            + compare_rail_lldp(neighbors, exp.get("links") or [], p["rail_lldp"], lldp_reason,
                                {n for n, have in links.items() if have is None}, p["require_rail_links"]))
    module.exit_json(changed=False, checks=rows, mismatches=[r for r in rows if r["status"] == MISMATCH],
                     report=render_table(exp.get("host", ""), rows))


if __name__ == "__main__":
    main()
