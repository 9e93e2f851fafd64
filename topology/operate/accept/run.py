"""`superpod accept`: playbooks/accept.yml over the stack's inventory (ansible-runner, as apply
and drift), its outputs collected into .runs/<stack>/accept/<time>-accept/results/, then judged
against the plan's figures. The run folder keeps the outputs, verdicts.json and worklist.txt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from topology.errors import SpecError
from topology.operate.accept import report
from topology.operate.accept.judge import FAIL, judge
from topology.operate.accept.plan import AcceptPlan, load_plan
from topology.operate.runs import OperateError, RunRequest, check_request, new_run_dir, run_playbook
from topology.spec import AcceptanceSpec

RAIL_PORT_BASE = 18515  # perftest's default port; each pair of a server gets its own


def targeted_hosts(req: RunRequest) -> dict[str, dict]:
    """The gpu_nodes that --limit selects, as Ansible itself resolves the pattern
    (ansible-inventory), with their variables from the inventory and its overlays (an overlay
    may scale a node, e.g. to the one GPU a test machine has)."""
    # ansible-inventory from superpod's environment first, as runs.py finds ansible-playbook
    exe = shutil.which("ansible-inventory", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                                  os.environ.get("PATH", "")]))
    if exe is None:
        raise SpecError("--stack", "ansible-inventory is not installed (pip install 'superpod[ansible]')")
    cmd = [exe, "--list", "--export",
           "-i", str(req.inventory_dir), *(a for p in req.overlays for a in ("-i", str(p.resolve())))]
    if req.limit:
        cmd += ["--limit", req.limit]
    env = dict(os.environ, ANSIBLE_CONFIG=str(req.project_dir.resolve() / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=req.project_dir, check=False)
    if done.returncode != 0:
        raise SpecError("--stack", f"ansible-inventory failed: {done.stderr.strip()[-500:]}")
    inv = json.loads(done.stdout)
    hostvars = inv.get("_meta", {}).get("hostvars", {})

    def hosts_of(group: str) -> set[str]:
        g = inv.get(group, {})
        return set(g.get("hosts", ())) | {h for child in g.get("children", ()) for h in hosts_of(child)}

    return {h: hostvars.get(h, {}) for h in sorted(hosts_of("gpu_nodes"))}


def extravars(plan: AcceptPlan, results: Path, dcgm_level: int, rails: bool) -> dict:
    pairs = [{"su": su, "rail": rail, "server": a, "client": b, "port": RAIL_PORT_BASE + i, "round": rnd}
             for i, (su, rail, a, b, rnd) in enumerate(plan.rail_pairs())] if rails else []
    groups = [{"name": f"su{su:02d}", "nodes": names} for su, names in plan.sus().items() if len(names) > 1]
    if len(plan.sus()) > 1:
        groups.append({"name": "pod", "nodes": sorted(plan.nodes)})
    return {"acceptance_results_dir": str(results), "acceptance_rail_pairs": pairs,
            "acceptance_groups": groups if rails else [], "acceptance_dcgm_level": dcgm_level}


def stack_overrides(project_dir: Path, stack: str) -> AcceptanceSpec:
    """The spec's acceptance overrides (the stack file), or none when the stack has no file here."""
    from topology.spec import load_stack_file

    path = project_dir / f"Pulumi.{stack}.yaml"
    return load_stack_file(str(path)).acceptance if path.is_file() else AcceptanceSpec()


def accept(req: RunRequest, console: Console, *, as_json: bool = False, dcgm_level: int = 2, rails: bool = True,
           plan_dir: Path | None = None) -> int:
    """Exit 0 all pass, 1 a check failed, 2 the run could not start."""
    import yaml

    try:
        check_request(req)
    except OperateError as e:
        field, _, rule = str(e).partition(": ")
        raise SpecError(field, rule) from None
    hosts = targeted_hosts(req)
    if not hosts:
        raise SpecError("--limit", f"selects no GPU node of stack {req.stack} (gpu_nodes)")
    labels = (plan_dir or req.project_dir / "build" / req.stack) / "labels.csv"
    plan = load_plan(hosts, labels)
    overrides = stack_overrides(req.project_dir, req.stack)
    run_root = new_run_dir(req.runs_root / "accept", "run")
    results = run_root / "results"
    # every folder the playbook writes into, made here: a host that turns out unreachable leaves
    # its folder empty, and shows as FAILs with no output, never as a node nobody asked about
    for sub in [*(f"node/{n}" for n in plan.nodes), *{f"rail/{r.rail}" for n in plan.nodes.values() for r in n.rails},
                "su"]:
        (results / sub).mkdir(parents=True, exist_ok=True)
    extra = run_root / "extravars.yml"  # a file, so the run's record shows what it was given
    extra.write_text(yaml.safe_dump(extravars(plan, results, dcgm_level, rails)), encoding="utf-8")
    outcome = run_playbook(replace(req, kind="accept", extra_vars_file=extra))
    checks = judge(plan, results, overrides, rails=rails)
    doc = report.to_json(req.stack, str(run_root), checks)
    doc["ansible"] = {"status": outcome.status, "rc": outcome.rc, "stdout": str(outcome.stdout_path)}
    (run_root / "verdicts.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (run_root / "worklist.txt").write_text("".join(f"{line}\n" for line in doc["work_list"]), encoding="utf-8")
    if as_json:
        print(json.dumps(doc, indent=1))
    else:
        report.print_report(console, req.stack, str(run_root), checks)
    return 1 if any(c.verdict == FAIL for c in checks) else 0
