"""Parsers for what the acceptance tools print, written against their real output
(testdata/h100-node/): nccl-tests, nvbandwidth -j, perftest ib_write_bw, nvidia-smi -q -x,
dcgmi diag -j. Each returns plain data; a malformed output raises ParseError naming the tool."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass


class ParseError(ValueError):
    """The output is not what the tool prints (cut short, an error message, another tool)."""


# ---- nccl-tests (all_reduce_perf, sendrecv_perf, ...) -------------------------------------------
@dataclass(frozen=True)
class NcclRow:
    size: int  # bytes
    time_us: float
    algbw: float  # GB/s, out-of-place
    busbw: float
    wrong: int | None  # None: "N/A" (no check for this op)


@dataclass(frozen=True)
class NcclResult:
    test: str  # all_reduce_perf
    ranks: int  # GPUs in the run ("Rank  N" lines)
    rows: tuple[NcclRow, ...]
    avg_busbw: float
    oob_ok: bool  # "Out of bounds values : 0 OK"

    @property
    def peak(self) -> NcclRow:
        """The largest message: where bandwidth, not latency, is measured."""
        return max(self.rows, key=lambda r: r.size)

    @property
    def wrong(self) -> int:
        return sum(r.wrong or 0 for r in self.rows)


_NCCL_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([\d.e+]+)\s+([\d.e+]+)\s+([\d.e+]+)\s+(\d+|N/A)\s")


def nccl_tests(text: str) -> NcclResult:
    started = re.search(r"^# Collective test starting: (\S+)", text, re.M)
    if not started:
        raise ParseError("nccl-tests: no '# Collective test starting' line (the test did not run)")
    rows = []
    for line in text.splitlines():
        m = _NCCL_ROW.match(line)
        if m:
            rows.append(NcclRow(int(m[1]), float(m[3]), float(m[4]), float(m[5]), None if m[6] == "N/A" else int(m[6])))
    if not rows:
        raise ParseError(f"nccl-tests {started[1]}: no result rows")
    avg = re.search(r"^# Avg bus bandwidth\s*:\s*([\d.e+]+)", text, re.M)
    if not avg:
        raise ParseError(f"nccl-tests {started[1]}: cut short (no '# Avg bus bandwidth' line)")
    oob = re.search(r"^# Out of bounds values : (\d+) (\w+)", text, re.M)
    ranks = len(re.findall(r"^#\s+Rank\s+\d+ ", text, re.M))
    return NcclResult(started[1], ranks, tuple(rows), float(avg[1]), bool(oob and oob[1] == "0" and oob[2] == "OK"))


# ---- nvbandwidth -j -------------------------------------------------------------------------
@dataclass(frozen=True)
class BandwidthCase:
    name: str  # host_to_device_memcpy_ce
    status: str  # Passed | Waived | Error | Not Found
    matrix: tuple[tuple[float | None, ...], ...]  # GB/s; None where N/A

    def per_column(self) -> dict[int, float]:
        """host<->device cases: one row (the CPU), a column per GPU."""
        return {j: v for row in self.matrix for j, v in enumerate(row) if v is not None}

    def per_gpu_worst(self) -> dict[int, float]:
        """device<->device: the slowest pair each GPU is in (row or column)."""
        worst: dict[int, float] = {}
        for i, row in enumerate(self.matrix):
            for j, v in enumerate(row):
                if v is not None:
                    for g in (i, j):
                        worst[g] = min(worst.get(g, v), v)
        return worst


def nvbandwidth(text: str) -> dict[str, BandwidthCase]:
    try:
        doc = json.loads(text[text.index("{"):])
        cases = doc["nvbandwidth"]["testcases"]
    except (ValueError, KeyError, TypeError) as e:
        raise ParseError(f"nvbandwidth: not its -j JSON output ({e})") from None

    def num(v) -> float | None:
        try:
            return float(v)
        except (TypeError, ValueError):
            return None

    return {
        c["name"]: BandwidthCase(c["name"], c.get("status", "?"),
                                 tuple(tuple(num(v) for v in row) for row in c.get("bandwidth_matrix") or ()))
        for c in cases
    }


# ---- perftest ib_write_bw (client side) -----------------------------------------------------
@dataclass(frozen=True)
class WriteBw:
    device: str
    link: str  # IB | Ethernet
    peak_gbps: float
    average_gbps: float


def ib_write_bw(text: str) -> WriteBw:
    """`ib_write_bw --report_gbits` output: the result line under '#bytes #iterations BW peak[Gb/sec]'."""
    dev = re.search(r"\bDevice\s*:\s*(\S+)", text)  # shares its line with "Dual-port"
    link = re.search(r"^\s*Link type\s*:\s*(\S+)", text, re.M)
    head = re.search(r"#bytes\s+#iterations\s+BW peak\[(\w+)/sec\]\s+BW average\[\w+/sec\]", text)
    if not head:
        raise ParseError("ib_write_bw: no result table (connection failed or not --report_gbits)")
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s*$", text[head.end():], re.M)
    if not rows:
        raise ParseError("ib_write_bw: no result line under its table head")
    unit = 1.0 if head[1] == "Gb" else 8 / 1000  # --report_gbits: Gb/s; else MB/s
    _, _, peak, avg = rows[-1]
    return WriteBw(dev[1] if dev else "?", link[1] if link else "?", float(peak) * unit, float(avg) * unit)


# ---- nvidia-smi -q -x ----------------------------------------------------------------------
# Clock event reasons that mean the GPU is held below its clocks by heat or power, not by being idle
THROTTLE_REASONS = {
    "clocks_event_reason_sw_power_cap": "power cap",
    "clocks_event_reason_hw_slowdown": "HW slowdown",
    "clocks_event_reason_hw_thermal_slowdown": "HW thermal slowdown",
    "clocks_event_reason_hw_power_brake_slowdown": "HW power brake",
    "clocks_event_reason_sw_thermal_slowdown": "SW thermal slowdown",
}


@dataclass(frozen=True)
class GpuState:
    index: int  # minor number: /dev/nvidiaN, the index CUDA and the plan use
    bus_id: str
    name: str
    throttled: tuple[str, ...]  # active throttle reasons
    ecc_uncorrectable: int  # volatile DRAM + SRAM uncorrectable
    remap_failure: bool
    remap_pending: bool

    def faults(self) -> list[str]:
        out = [f"throttled: {', '.join(self.throttled)}"] if self.throttled else []
        if self.ecc_uncorrectable:
            out.append(f"{self.ecc_uncorrectable} uncorrectable ECC errors (volatile)")
        if self.remap_failure:
            out.append("row remapping failed")
        if self.remap_pending:
            out.append("row remap pending (reset the GPU)")
        return out


def _int(text: str | None) -> int:
    return int(text) if text and text.strip().isdigit() else 0


def nvidia_smi_xml(text: str) -> list[GpuState]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ParseError(f"nvidia-smi -q -x: not XML ({e})") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"nvidia-smi -q -x: root element is <{root.tag}>, not <nvidia_smi_log>")
    gpus = []
    for g in root.iter("gpu"):
        reasons = g.find("clocks_event_reasons")
        if reasons is None:  # drivers before 535 call it clocks_throttle_reasons
            reasons = g.find("clocks_throttle_reasons")
        active = tuple(
            label for tag, label in THROTTLE_REASONS.items()
            if reasons is not None and (reasons.findtext(tag) or reasons.findtext(tag.replace("event", "throttle"))
                                        or "").strip() == "Active"
        )
        vol = g.find("ecc_errors/volatile")
        unc = 0
        if vol is not None:
            unc = sum(_int(e.text) for e in vol if "uncorrectable" in e.tag or e.tag in ("dram_uncorrectable",))
        remap = g.find("remapped_rows")
        gpus.append(GpuState(
            index=_int(g.findtext("minor_number")), bus_id=g.get("id", "?"), name=g.findtext("product_name", "?"),
            throttled=active, ecc_uncorrectable=unc,
            remap_failure=remap is not None and (remap.findtext("remapped_row_failure") or "").strip() == "Yes",
            remap_pending=remap is not None and (remap.findtext("remapped_row_pending") or "").strip() == "Yes",
        ))
    return gpus


# ---- dcgmi diag -j --------------------------------------------------------------------------
@dataclass(frozen=True)
class DiagResult:
    name: str
    status: str  # Pass | Fail | Warn | Skip
    info: str


def dcgmi_diag(text: str) -> list[DiagResult]:
    """`dcgmi diag -r N -j`: the tests of each category with their status; DCGM 3 and 4 layouts."""
    try:
        doc = json.loads(text[text.index("{"):])
    except ValueError as e:
        raise ParseError(f"dcgmi diag: not its -j JSON output ({e})") from None
    out: list[DiagResult] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            name = node.get("test_name") or node.get("name")
            results = node.get("results")
            if name and isinstance(results, list):
                statuses = [str(r.get("status", "")) for r in results if isinstance(r, dict)]
                infos = [str(r.get("info") or r.get("warnings") or "") for r in results if isinstance(r, dict)]
                worst = next((s for s in ("Fail", "Warn", "Pass", "Skip") if s in statuses),
                             statuses[0] if statuses else "?")
                out.append(DiagResult(str(name), worst, "; ".join(i for i in infos if i)))
                return
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    if not out:
        raise ParseError("dcgmi diag: no test results in its JSON")
    return out
