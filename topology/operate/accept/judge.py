"""Verdicts: each measurement against its expectation, per node, rail and SU, with the work
list lines that name the node, GPU or NIC and the cable to touch.

The results folder (written by playbooks/accept.yml, one file per tool run):
  node/<host>/gpus.xml  nvidia-smi -q -x      node/<host>/nvbandwidth.json  nvbandwidth -j
  node/<host>/all_reduce.txt  all_reduce_perf -g <GPUs>   node/<host>/dcgmi.json  dcgmi diag -j
  node/<host>/node_check.json  the node_check module's mismatches
  rail/<rail>/<server>--<client>.txt  ib_write_bw (client)     su/<su01|pod>.txt  all_reduce_perf over MPI
A run that failed leaves <file>.failed (its exit code and stderr) instead; a file absent means
the host never got there (unreachable, or an earlier task failed): both are FAILs, never skips.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from topology.operate.accept import parse
from topology.operate.accept.figures import Figures
from topology.operate.accept.plan import AcceptPlan, NodePlan
from topology.spec import AcceptanceSpec

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Work:
    """One line of the work list: where the hands go and what to do."""

    rack: str
    node: str
    part: str  # "GPU 3", "NIC mlx5_5 (enp94s0np0, rail 3)"
    cable: str  # label ID from labels.csv, "" when no cable is involved
    action: str

    def line(self) -> str:
        where = f"{self.node} {self.part}".rstrip() + (f", cable {self.cable}" if self.cable else "")
        return f"{self.rack}, {where}: {self.action}"


@dataclass(frozen=True)
class Check:
    scope: str  # node | rail | su | pod
    subject: str  # su01-node03 | su01 rail 3 su01-node01<->su01-node02 | su01 | pod
    check: str
    measured: str
    expected: str
    verdict: str
    detail: str = ""
    work: tuple[Work, ...] = field(default=())

    def as_json(self) -> dict:
        return {"scope": self.scope, "subject": self.subject, "check": self.check, "measured": self.measured,
                "expected": self.expected, "verdict": self.verdict, "detail": self.detail,
                "work": [w.line() for w in self.work]}


def _read(path: Path) -> tuple[str | None, str]:
    """(text, why missing): the tool's output, or why there is none."""
    failed = path.with_name(path.name + ".failed")
    if failed.is_file():  # "exit N: stderr" then stdout: the exit code and the last words said
        lines = [x.strip() for x in failed.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
        head = lines[0] if lines else "failed"
        said = next((x for x in reversed(lines[1:]) if not x.startswith("#")), "")
        return None, f"{head} {said}".strip()[:300]
    if not path.is_file():
        return None, "no output: the host was unreachable or an earlier step failed (see the run's stdout)"
    return path.read_text(encoding="utf-8", errors="replace"), ""


def _node_work(n: NodePlan, part: str, action: str, cable: str = "") -> Work:
    return Work(n.rack, n.name, part, cable, action)


def _gpu_part(n: NodePlan, gpu: int) -> str:
    r = next((r for r in n.rails if r.gpu == gpu), None)
    return f"GPU {gpu}" + (f" (rail {r.rail}, NIC {r.hca})" if r else "")


def node_checks(n: NodePlan, folder: Path, fig: Figures) -> list[Check]:
    out: list[Check] = []
    base = folder / "node" / n.name

    def fail(check: str, why: str, expected: str = "", work: tuple[Work, ...] = ()) -> None:
        out.append(Check("node", n.name, check, "-", expected, FAIL, why,
                         work or (_node_work(n, "", f"{check}: {why}"),)))

    # node_check: the node against its plan (drivers, PCIe, rails, kernel)
    text, why = _read(base / "node_check.json")
    if text is None:
        fail("node_check", why, "0 mismatches")
    else:
        doc = json.loads(text)
        if doc.get("skipped"):
            out.append(Check("node", n.name, "node_check", "-", "0 mismatches", SKIP, doc["skipped"]))
        else:
            mism = doc.get("mismatches") or []
            detail = "; ".join(f"{m.get('check')}: expected {m.get('expected')}, actual {m.get('actual')}"
                               for m in mism)
            out.append(Check("node", n.name, "node_check", f"{len(mism)} mismatches", "0 mismatches",
                             PASS if not mism else FAIL, detail,
                             tuple(_node_work(n, "", f"node_check: {m.get('check')} expected {m.get('expected')}, "
                                                     f"actual {m.get('actual')}") for m in mism)))

    # GPU health: every planned GPU present, none throttled, no uncorrectable ECC, row remapping sound
    text, why = _read(base / "gpus.xml")
    if text is None:
        fail("GPU health", why, f"{n.gpu_count} healthy GPUs")
    else:
        try:
            gpus = parse.nvidia_smi_xml(text)
        except parse.ParseError as e:
            gpus = None
            fail("GPU health", str(e), f"{n.gpu_count} healthy GPUs")
        if gpus is not None:
            seen = {g.index for g in gpus}
            lost = [i for i in range(n.gpu_count) if i not in seen]
            work = [_node_work(n, _gpu_part(n, i), "not seen by the driver: check dmesg for XID 79 (fallen off "
                                                   "the bus), reseat or replace the GPU") for i in lost]
            faults = []
            for g in gpus:
                for f in g.faults():
                    faults.append(f"GPU {g.index}: {f}")
                    work.append(_node_work(n, _gpu_part(n, g.index), f"{f} (bus {g.bus_id}): "
                                           + ("check cooling and power (fans, inlet temperature, PSUs)"
                                              if f.startswith("throttled") else "drain and RMA the GPU")))
            healthy = len(gpus) - len({f.partition(':')[0] for f in faults})
            detail = "; ".join([f"GPU {i} missing" for i in lost] + faults)
            out.append(Check("node", n.name, "GPU health", f"{healthy} of {len(gpus)} healthy, {len(gpus)} seen",
                             f"{n.gpu_count} healthy GPUs", PASS if not lost and not faults else FAIL, detail,
                             tuple(work)))

    # DCGM diagnostics, where DCGM is installed
    text, why = _read(base / "dcgmi.json")
    absent = base / "dcgmi.absent"
    if absent.is_file():
        out.append(Check("node", n.name, "dcgmi diag", "-", "all Pass", SKIP, "DCGM is not installed on the node"))
    elif text is None:
        # dcgmi exits non-zero when a test fails: its JSON (after the exit line) names which
        failed_text = (base / "dcgmi.json.failed").read_text(encoding="utf-8", errors="replace") \
            if (base / "dcgmi.json.failed").is_file() else ""
        try:
            bad = [r for r in parse.dcgmi_diag(failed_text) if r.status == "Fail"] if "{" in failed_text else []
        except parse.ParseError:
            bad = []
        detail = "; ".join(f"{r.name}: {r.info}" for r in bad) or why
        fail("dcgmi diag", f"{why.split(':')[0]}: {detail}" if bad else why, "all Pass",
             tuple(_node_work(n, "", f"dcgmi diag {r.name} failed: {r.info}") for r in bad))
    else:
        try:
            results = parse.dcgmi_diag(text)
            bad = [r for r in results if r.status == "Fail"]
            out.append(Check("node", n.name, "dcgmi diag", f"{len(results) - len(bad)} of {len(results)} pass",
                             "all Pass", FAIL if bad else PASS, "; ".join(f"{r.name}: {r.info}" for r in bad),
                             tuple(_node_work(n, "", f"dcgmi diag {r.name} failed: {r.info}") for r in bad)))
        except parse.ParseError as e:
            fail("dcgmi diag", str(e), "all Pass")

    out += _nvbandwidth(n, base, fig, fail)
    out += _node_all_reduce(n, base, fig, fail)
    return out


def _nvbandwidth(n: NodePlan, base: Path, fig: Figures, fail) -> list[Check]:
    text, why = _read(base / "nvbandwidth.json")
    pcie = fig.pcie_copy()
    if text is None:
        fail("nvbandwidth", why, pcie.text())
        return []
    try:
        cases = parse.nvbandwidth(text)
    except parse.ParseError as e:
        fail("nvbandwidth", str(e), pcie.text())
        return []
    out = []
    wanted = [("host_to_device_memcpy_ce", "host->GPU copy (PCIe)", pcie, False),
              ("device_to_host_memcpy_ce", "GPU->host copy (PCIe)", pcie, False)]
    nvl = fig.nvlink()
    if n.gpu_count > 1 and nvl is not None:
        wanted.append(("device_to_device_memcpy_read_ce", "GPU<->GPU copy (NVLink)", nvl, True))
    for name, label, exp, pairs in wanted:
        case = cases.get(name)
        if case is None or case.status not in ("Passed", "Running"):
            fail(f"nvbandwidth {label}", f"{name}: {case.status if case else 'not run'}", exp.text())
            continue
        per_gpu = case.per_gpu_worst() if pairs else case.per_column()
        if len(per_gpu) != n.gpu_count:  # CUDA numbers the GPUs it sees 0..n-1: a lost one shifts the rest
            fail(f"nvbandwidth {label}", f"measured {len(per_gpu)} GPUs, the plan has {n.gpu_count}", exp.text(),
                 (_node_work(n, "", f"nvbandwidth saw {len(per_gpu)} of {n.gpu_count} GPUs: see GPU health"),))
            continue
        slow = {g: v for g, v in per_gpu.items() if v < exp.value}
        worst = min(per_gpu.values()) if per_gpu else 0.0
        out.append(Check("node", n.name, f"nvbandwidth {label}", f"min {worst:.1f} GB/s over {len(per_gpu)} GPUs",
                         exp.text(), FAIL if slow or not per_gpu else PASS,
                         "; ".join(f"GPU {g}: {v:.1f} GB/s" for g, v in sorted(slow.items())),
                         tuple(_node_work(n, _gpu_part(n, g), f"{label} {v:.1f} GB/s, expected {exp.text()}: check "
                                          f"the GPU's {'NVLink/NVSwitch' if pairs else 'PCIe link (gen, width)'}")
                               for g, v in sorted(slow.items()))))
    return out


def _node_all_reduce(n: NodePlan, base: Path, fig: Figures, fail) -> list[Check]:
    text, why = _read(base / "all_reduce.txt")
    if text is None:
        fail("all_reduce (node)", why)
        return []
    try:
        r = parse.nccl_tests(text)
    except parse.ParseError as e:
        fail("all_reduce (node)", str(e))
        return []
    wrong = [] if r.wrong == 0 and r.oob_ok else [f"{r.wrong} wrong results"]
    if r.ranks != n.gpu_count:
        return [Check("node", n.name, "all_reduce (node)", f"{r.ranks} GPUs", f"{n.gpu_count} GPUs", FAIL,
                      f"ran on {r.ranks} GPUs, the plan has {n.gpu_count}",
                      (_node_work(n, "", f"all_reduce_perf saw {r.ranks} of {n.gpu_count} GPUs: see GPU health"),))]
    if r.ranks == 1:
        # one GPU: busbw is 0 by definition (nothing crosses a link); the run is a device copy,
        # so algbw is judged against the GPU's memory bandwidth instead
        exp, value, what = fig.hbm_copy(), r.peak.algbw, "algbw (one GPU: a device copy)"
    else:
        exp, value, what = fig.nvlink(), r.peak.busbw, "busbw"
        if exp is None:
            return [Check("node", n.name, "all_reduce (node)", f"{value:.1f} GB/s busbw", "-", SKIP,
                          f"{n.model} has no NVLink figure in the catalog")]
    ok = value >= exp.value and not wrong
    return [Check("node", n.name, "all_reduce (node)", f"{value:.1f} GB/s {what} at {r.peak.size >> 20} MiB",
                  exp.text(), PASS if ok else FAIL, "; ".join(wrong),
                  () if ok else (_node_work(n, "", f"all_reduce_perf {what} {value:.1f} GB/s, expected "
                                                   f"{exp.text()}: check GPU health, NVLink (nvidia-smi nvlink -s) "
                                                   "and the fabric manager"),))]


def rail_checks(plan: AcceptPlan, folder: Path, figs: dict[str, Figures]) -> list[Check]:
    out = []
    for su, rail, a, b, _ in plan.rail_pairs():
        na, nb = plan.nodes[a], plan.nodes[b]
        exp = figs[na.model].rail_write_bw()
        subject = f"su{su:02d} rail {rail} {a}<->{b}"
        text, why = _read(folder / "rail" / str(rail) / f"{a}--{b}.txt")
        measured, detail = "-", why
        if text is not None:
            try:
                bw = parse.ib_write_bw(text)
                measured, detail = f"{bw.average_gbps:.1f} Gb/s", ""
                if bw.average_gbps >= exp.value:
                    out.append(Check("rail", subject, "ib_write_bw", measured, exp.text(), PASS))
                    continue
                detail = f"{bw.average_gbps:.1f} Gb/s average, expected {exp.text()}"
            except parse.ParseError as e:
                detail = str(e)
        work = []
        for node, other in ((na, b), (nb, a)):
            r = node.rail(rail)
            work.append(Work(node.rack, node.name, f"NIC {r.hca} ({r.netdev}, rail {rail})",
                             plan.cable(node.name, r.netdev),
                             f"ib_write_bw with {other}: {detail}; check the link's speed and errors, "
                             f"reseat or replace the optic/cable to {r.leaf} {r.leaf_port}"))
        out.append(Check("rail", subject, "ib_write_bw", measured, exp.text(), FAIL, detail, tuple(work)))
    return out


def network_checks(plan: AcceptPlan, folder: Path, figs: dict[str, Figures]) -> list[Check]:
    out = []
    groups = [(f"su{su:02d}", "su", names) for su, names in plan.sus().items() if len(names) > 1]
    if len(plan.sus()) > 1:
        groups.append(("pod", "pod", sorted(plan.nodes)))
    for name, scope, names in groups:
        first = plan.nodes[names[0]]
        rails = len(first.rails)
        exp = figs[first.model].network_all_reduce(rails)
        text, why = _read(folder / "su" / f"{name}.txt")
        if text is None:
            out.append(Check(scope, name, "all_reduce (MPI)", "-", exp.text(), FAIL, why))
            continue
        try:
            r = parse.nccl_tests(text)
        except parse.ParseError as e:
            out.append(Check(scope, name, "all_reduce (MPI)", "-", exp.text(), FAIL, str(e)))
            continue
        planned = sum(plan.nodes[x].gpu_count for x in names)
        ok = r.peak.busbw >= exp.value and r.wrong == 0 and r.oob_ok and r.ranks == planned
        detail = "" if ok else (f"{r.ranks} of {planned} GPUs took part" if r.ranks != planned else
                                f"{r.wrong} wrong results" if r.wrong or not r.oob_ok else
                                "below the plan's figure: see the rail rows above for the slow links")
        out.append(Check(scope, name, f"all_reduce (MPI, {len(names)} nodes, {r.ranks} GPUs)",
                         f"{r.peak.busbw:.1f} GB/s busbw", exp.text(), PASS if ok else FAIL, detail))
    return out


def judge(plan: AcceptPlan, folder: Path, overrides: AcceptanceSpec | None = None,
          rails: bool = True) -> list[Check]:
    figs = {m: Figures(m, overrides) for m in {n.model for n in plan.nodes.values()}}
    checks = [c for name in sorted(plan.nodes)
              for c in node_checks(plan.nodes[name], folder, figs[plan.nodes[name].model])]
    if rails:
        checks += rail_checks(plan, folder, figs) + network_checks(plan, folder, figs)
    return checks
