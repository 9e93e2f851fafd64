"""The build set and the inventory's links change in one step or not at all (issue 40, item 3).

A first `superpod plan` killed right after its generation switch left the inventory without its
links (made after the switch); a read-only inventory folder, or a folder where hosts.yml goes,
failed only after the new build set was already published. Here the process is killed at the
exact moment `build/<stack>` is switched (os.replace / os.rename of that path), and the bad
inventories are met by a real plan, as a user meets them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.plan_kill import visible

INVENTORY_FILES = ("hosts.yml", "group_vars/all/00_generated.yml")

# Runs `superpod plan` and dies (like kill -9: no cleanup, no atexit) right after the rename that
# switches argv[1]; `when=before` dies right before it instead.
KILL_AT_SWITCH = """
import os, sys
out, when = os.path.abspath(sys.argv[1]), sys.argv[2]
real = {"replace": os.replace, "rename": os.rename}

def wrap(name):
    def call(src, dst, *a, **k):
        hit = os.path.abspath(dst) == out and os.path.islink(src)
        if hit and when == "before":
            os._exit(137)
        real[name](src, dst, *a, **k)
        if hit:
            os._exit(137)
    return call

os.replace, os.rename = wrap("replace"), wrap("rename")
from topology.cli import app
app(sys.argv[3:])
"""


def project(folder: Path, budget: float | None = None) -> Path:
    """The lab stack in `folder`; a power budget changes racks.csv, layout.json and the inventory."""
    doc = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())
    if budget is not None:
        doc["config"]["superpod:pod"].setdefault("racks", {})["power_budget_kw"] = budget
    (folder / "Pulumi.lab.yaml").write_text(yaml.safe_dump(doc))
    return folder


def plan_killed_at_switch(proj: Path, when: str) -> int:
    proc = subprocess.run([sys.executable, "-c", KILL_AT_SWITCH, str(proj / "build" / "lab"), when,
                           "plan", "--stack", "lab", "-C", str(proj)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return proc.returncode


def plan(proj: Path, *, as_user: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*as_user, sys.executable, "-m", "topology.cli", "plan", "--stack", "lab", "-C", str(proj)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def inventory_matches_build(proj: Path) -> None:
    """Every generated inventory file is there and shows the published generation's copy."""
    inv, linked = visible(proj / "inventories" / "lab"), proj / "build" / "lab" / ".inventory"
    for rel in INVENTORY_FILES:
        assert rel in inv, f"{rel} missing from the inventory: {sorted(inv)}"
        assert inv[rel] == (linked / rel).read_bytes()


def test_first_plan_killed_right_after_the_switch_leaves_a_whole_inventory(tmp_path):
    proj = project(tmp_path)
    assert plan_killed_at_switch(proj, "after") == 137
    assert "layout.json" in visible(proj / "build" / "lab")  # the set was switched in
    inventory_matches_build(proj)


def test_first_plan_killed_right_before_the_switch_shows_no_inventory(tmp_path):
    proj = project(tmp_path)
    assert plan_killed_at_switch(proj, "before") == 137
    assert visible(proj / "build" / "lab") == {}
    shown = visible(proj / "inventories" / "lab") if (proj / "inventories" / "lab").exists() else {}
    assert not set(INVENTORY_FILES) & set(shown)  # no half inventory: none of the generated files
    assert plan(proj).returncode == 0  # and the next plan completes it
    inventory_matches_build(proj)


def test_re_plan_killed_right_after_the_switch_shows_the_new_inventory(tmp_path):
    proj = project(tmp_path)
    assert plan(proj).returncode == 0
    old = visible(proj / "inventories" / "lab")
    project(tmp_path, budget=44.0)
    assert plan_killed_at_switch(proj, "after") == 137
    assert visible(proj / "inventories" / "lab") != old  # the budget is in 00_generated.yml
    inventory_matches_build(proj)


@pytest.mark.parametrize("replan", [False, True], ids=["first-plan", "re-plan"])
def test_a_folder_where_hosts_yml_goes_is_refused_before_the_switch(tmp_path, replan):
    proj = project(tmp_path)
    inv = proj / "inventories" / "lab"
    if replan:
        assert plan(proj).returncode == 0
        before = visible(proj / "build" / "lab")
        (inv / "hosts.yml").unlink()
        project(tmp_path, budget=44.0)
    (inv / "hosts.yml").mkdir(parents=True)
    (inv / "hosts.yml" / "mine.yml").write_text("all: {}\n")
    proc = plan(proj)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: ") and "hosts.yml" in proc.stderr and "folder" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (inv / "hosts.yml" / "mine.yml").read_text() == "all: {}\n"
    if replan:
        assert visible(proj / "build" / "lab") == before
    else:
        assert not os.path.lexists(proj / "build" / "lab")
    assert [p.name for p in (proj / "build").iterdir() if ".gen-" in p.name or ".link-" in p.name] == (
        [os.readlink(proj / "build" / "lab")] if replan else [])


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="root writes into read-only folders")
def test_read_only_inventory_folder_is_refused_before_the_switch():
    folder = Path(tempfile.mkdtemp())  # not under pytest's 0700 tmp: the unprivileged plan must reach it
    try:
        folder.chmod(0o755)
        proj = project(folder)
        (proj / "Pulumi.lab.yaml").chmod(0o644)
        (proj / "build").mkdir(mode=0o777)
        (proj / "build").chmod(0o777)
        inv = proj / "inventories" / "lab"
        inv.mkdir(parents=True)
        for p in (proj / "inventories", inv):
            p.chmod(0o555)
        as_user = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups") if os.geteuid() == 0 else ()
        proc = plan(proj, as_user=as_user)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.startswith("error: ") and "Permission denied" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not os.path.lexists(proj / "build" / "lab")  # nothing published
        assert [p.name for p in (proj / "build").iterdir() if not p.name.endswith(".lock")] == []
    finally:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_first_plans_killed_right_after_the_switch_show_a_whole_inventory(tmp_path):
    """The issue's trial: a first plan killed with SIGKILL as soon as `build/lab` appears (6 of
    12 left the inventory incomplete before; the first trial here already did), 4 times: the
    inventory shows every generated file,
    matching the published set. Where the kill came too late for a trial to tell, it still must
    be whole."""
    for trial in range(4):
        proj = tmp_path / f"t{trial}"
        proj.mkdir()
        project(proj)
        out = proj / "build" / "lab"
        proc = subprocess.Popen([sys.executable, "-m", "topology.cli", "plan", "--stack", "lab", "-C", str(proj)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while not os.path.lexists(out) and proc.poll() is None and time.monotonic() < deadline:
            pass  # no sleep: the window after the switch is short
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert "layout.json" in visible(out)
        inventory_matches_build(proj)
