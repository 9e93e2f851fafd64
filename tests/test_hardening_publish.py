"""The artifact set is published whole or not at all (issue 20, items 6, 8 and 12): kill -9,
a full disk or a read-only folder leave the old set and no temp files, and say so as an
`error:` line; the user's files and links in inventories/<stack>/ are never touched; modes
follow the umask."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT
from tests.plan_kill import run_trials, visible
from topology.cli import app
from topology.render import files as files_mod
from topology.render.files import write_atomic

runner = CliRunner()


def plan(*args):
    return runner.invoke(app, ["plan", *args], catch_exceptions=False)


def project(tmp_path, budget: float | None = None):
    text = (ROOT / "Pulumi.lab.yaml").read_text()
    if budget is not None:
        doc = yaml.safe_load(text)
        doc["config"]["superpod:pod"].setdefault("racks", {})["power_budget_kw"] = budget
        text = yaml.safe_dump(doc)
    (tmp_path / "Pulumi.lab.yaml").write_text(text)
    return tmp_path


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and ".gen-" not in p.name
                  and not p.name.endswith(".lock")) + [p.name for p in folder.rglob("*.tmp")]


def the_set(proj):
    return visible(proj / "build" / "lab") | {f"inv/{k}": v for k, v in visible(proj / "inventories" / "lab").items()}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EIO])
def test_io_error_mid_set_leaves_old_set_no_temp_files_and_an_error_line(tmp_path, monkeypatch, code):
    proj = project(tmp_path)
    assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
    before = the_set(proj)
    project(tmp_path, budget=44.0)  # the re-plan changes racks.csv, layout.json, the inventory
    real, calls = files_mod._write_new, []

    def failing(path, data, mode):
        calls.append(path)
        if len(calls) == 2:  # one changed file staged, the next fails
            raise OSError(code, os.strerror(code), str(path))
        return real(path, data, mode)

    monkeypatch.setattr(files_mod, "_write_new", failing)
    result = plan("--stack", "lab", "-C", str(proj))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and os.strerror(code) in result.output
    assert "Traceback" not in result.output
    assert the_set(proj) == before
    assert leftovers(proj / "build") == []
    assert len([p for p in (proj / "build").iterdir() if ".gen-" in p.name]) == 1  # only the published one


def test_out_at_a_file_or_a_foreign_folder_is_an_error_line(tmp_path):
    (tmp_path / "file").write_text("mine\n")
    result = plan("--stack", "lab", "-C", str(ROOT), "--out", str(tmp_path / "file"))
    assert result.exit_code == 2 and result.output.startswith("error: --out: ") and "Traceback" not in result.output
    assert (tmp_path / "file").read_text() == "mine\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine\n")
    result = plan("--stack", "lab", "-C", str(ROOT), "--out", str(tmp_path / "docs"))
    assert result.exit_code == 2 and "holds no plan" in result.output
    assert (tmp_path / "docs").is_dir() and not (tmp_path / "docs").is_symlink()


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="root writes into read-only folders")
def test_read_only_folder_keeps_the_old_set_and_is_an_error_line(tmp_path):
    folder = Path(tempfile.mkdtemp())  # not under pytest's 0700 tmp: the unprivileged plan must reach it
    try:
        folder.chmod(0o755)
        ro = folder / "ro"
        ro.mkdir()
        assert plan("--stack", "lab", "-C", str(ROOT), "--out", str(ro / "out")).exit_code == 0
        before = visible(ro / "out")
        for path in [ro, *ro.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o555 if path.is_dir() else 0o444)
        spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
        spec.setdefault("racks", {})["power_budget_kw"] = 44.0
        (folder / "b.yaml").write_text(yaml.safe_dump(spec))
        (folder / "b.yaml").chmod(0o644)
        # as root a chmod stops nothing: plan as nobody, the way a user meets a read-only folder
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        proc = subprocess.run([*as_user, sys.executable, "-m", "topology.cli", "plan", "--spec", str(folder / "b.yaml"),
                               "--out", str(ro / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.startswith("error: --out: cannot write") and "Permission denied" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert visible(ro / "out") == before
        assert leftovers(ro) == []
    finally:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def test_non_utf8_artifact_is_repaired(tmp_path):
    out = tmp_path / "out"
    assert plan("--stack", "lab", "-C", str(ROOT), "--out", str(out)).exit_code == 0
    good = (out / "layout.json").read_bytes()
    os.chmod(out / "layout.json", 0o644)
    (out / "layout.json").write_bytes(b"\xff\xfe garbage \x80")
    result = plan("--stack", "lab", "-C", str(ROOT), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "layout.json").read_bytes() == good


def test_user_files_and_links_in_the_inventory_survive(tmp_path):
    proj = project(tmp_path)
    inv = proj / "inventories" / "lab"
    (inv / "group_vars" / "all").mkdir(parents=True)
    overrides = inv / "group_vars" / "all" / "overrides.yml"
    overrides.symlink_to("/nonexistent/site-overrides.yml")  # dangling: still the user's
    (inv / "host_vars").mkdir()
    (inv / "host_vars" / "su01-node01.yml").write_text("x: 1\n")
    (inv / "group_vars" / "all" / "vault.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n00\n")
    for budget in (None, 44.0):
        project(tmp_path, budget)
        assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
    assert overrides.is_symlink() and os.readlink(overrides) == "/nonexistent/site-overrides.yml"
    assert (inv / "host_vars" / "su01-node01.yml").read_text() == "x: 1\n"
    assert (inv / "group_vars" / "all" / "vault.yml").read_text().startswith("$ANSIBLE_VAULT")
    assert "hosts.yml" in visible(inv) and "group_vars/all/00_generated.yml" in visible(inv)


def test_user_file_in_out_inventory_survives_a_changed_plan(tmp_path):
    out = tmp_path / "out"
    assert plan("--stack", "lab", "-C", str(ROOT), "--out", str(out)).exit_code == 0
    seeded = out / "inventory" / "group_vars" / "all" / "overrides.yml"
    seeded.write_text("mine: true\n")
    (out / "NOTES.md").write_text("mine\n")
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    spec.setdefault("racks", {})["power_budget_kw"] = 44.0
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(spec))
    assert plan("--spec", str(tmp_path / "b.yaml"), "--out", str(out)).exit_code == 0
    assert seeded.read_text() == "mine: true\n" and (out / "NOTES.md").read_text() == "mine\n"


def test_modes_follow_the_umask_and_a_chmod_survives(tmp_path):
    old = os.umask(0o022)
    try:
        proj = project(tmp_path)
        assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
        racks = proj / "build" / "lab" / "racks.csv"
        assert stat.S_IMODE(racks.stat().st_mode) == 0o644
        racks.chmod(0o640)
        project(tmp_path, budget=44.0)
        assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
        assert stat.S_IMODE(racks.stat().st_mode) == 0o640  # rewritten, the user's mode kept
        write_atomic(tmp_path / "vault.yml", "secret\n")
        assert stat.S_IMODE((tmp_path / "vault.yml").stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_legacy_plain_folder_becomes_a_published_set(tmp_path):
    """build/<stack>/ and inventories/<stack>/ as plain files, from plans before the set writer: adopted."""
    proj = project(tmp_path)
    assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
    inv = proj / "inventories" / "lab"
    generated = {rel: inv / rel for rel in ("hosts.yml", "group_vars/all/00_generated.yml")}
    for path in generated.values():
        text = path.read_text()
        path.unlink()
        path.write_text(text)
    shutil.copytree(proj / "build" / "lab", proj / "legacy", ignore=shutil.ignore_patterns(".*"))
    shutil.rmtree(proj / "build")
    (proj / "build").mkdir()
    (proj / "legacy").rename(proj / "build" / "lab")
    project(tmp_path, budget=44.0)
    assert plan("--stack", "lab", "-C", str(proj)).exit_code == 0
    assert (proj / "build" / "lab").is_symlink() and (proj / "build" / "lab" / "layout.json").is_file()
    assert all(p.is_symlink() and p.is_file() for p in generated.values())
    assert b"44.0" in (proj / "build" / "lab" / "racks.csv").read_bytes()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_kill_9_during_re_plan_leaves_old_or_new_set_never_a_mix(tmp_path):
    """10 kills of a roce-1k re-plan here (the old file-by-file writer showed a mix in about 1 of 8);
    bench/bench_plan_kill.py runs 50 of roce-8k."""
    result = run_trials("roce-1k", tmp_path, trials=10)
    assert result["mixed"] == 0, result
    assert result["old"] + result["new"] == 10 and result["killed"] >= 4, result
    assert result["left_after_next_plan"] == 0 and result["final_is_a"], result
