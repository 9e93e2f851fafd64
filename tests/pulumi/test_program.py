"""The Pulumi program under Pulumi's mocks (no engine): resource tree, stack outputs, secret
handling, resource budget, and artifacts byte-identical to `superpod plan`'s."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pulumi
import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, STACKS, spec_with, stack_layout
from tests.pulumi.harness import Run, run_program, slice_maps, stack_pod
from topology.cli import app
from topology.pulumi.ansible_run import tree_digest
from topology.pulumi.artifact_tree import ArtifactTreeProvider
from topology.pulumi.artifacts import ArtifactProvider
from topology.pulumi.records import PARTS, RecordProvider, parts_of
from topology.pulumi.vault import VaultFileProvider
from topology.render.summary import summary


def is_secret(value) -> bool:
    """How a secret travels to the engine: wrapped in a map with the secret signature."""
    rpc = pulumi.runtime.rpc
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


CREDS = {"bmcUsername": "bmc-admin", "bmcPassword": "Pl41n-Pa55w0rd!", "vaultPassword": "vault-pass"}
_runs: dict[str, Run] = {}


def program_run(stack: str) -> Run:
    if stack not in _runs:
        _runs[stack] = run_program(stack, ROOT)
    return _runs[stack]


def plain(inputs: dict) -> dict:
    return {k: v for k, v in inputs.items() if k != "__provider"}


# the 8192-GPU stack's cases take seconds each (build + render of 33k cables, 25 MB of files)
STACK_CASES = [pytest.param(s, marks=pytest.mark.slow) if s == "roce-8k" else s for s in STACKS]


@pytest.mark.parametrize("stack", STACK_CASES)
def test_resource_tree_mirrors_the_layout(stack):
    run, layout = program_run(stack), stack_layout(stack)
    urn = {r.name: r for r in run.registered}
    pod = run.by_type("superpod:index:Pod")
    assert [p.name for p in pod] == [stack] and pod[0].parent.endswith("pulumi:pulumi:Stack::superpod-" + stack)
    sus = sorted({d.su for d in layout.devices if d.su is not None})
    assert sorted(r.name for r in run.by_type(":ScalableUnit")) == [f"su{n:02d}" for n in sus]
    for r in run.by_type(":ScalableUnit") + run.by_type(":Tier") + run.by_type(":Racks") + run.by_type(":Artifacts"):
        assert r.parent.endswith(f"superpod:index:Pod::{stack}")
    assert {r.name for r in run.by_type(":Tier")} <= {"spine", "core", "storage", "inband", "oob"}
    for rec in run.by_type(":LayoutRecord"):
        owner = rec.name.removesuffix("-layout").removeprefix("tier-")
        parent_type = "Racks::racks" if owner.startswith("row-") else ("ScalableUnit::" if owner.startswith("su")
                                                                        else "Tier::") + owner
        assert rec.parent.endswith(parent_type), (rec.name, rec.parent)
    # every device, cable and rack is in exactly one record
    records = [parts_of(r.inputs) for r in run.by_type(":LayoutRecord")]
    devices = Counter(k for r in records for k in r["devices"])
    cables = Counter(k for r in records for k in r["cables"])
    racks = Counter(k for r in records for k in r["racks"])
    assert devices == Counter(d.name for d in layout.devices)
    assert cables == Counter(f"{lk.a_device}:{lk.a_port}" for lk in layout.links)
    assert racks == Counter(r.name for r in layout.racks) and len(run.by_type(":Racks")) == 1
    rows = {r.row for r in layout.racks}
    assert len(run.by_type(":LayoutRecord")) == len(sus) + len(run.by_type(":Tier")) + len(rows)
    assert urn  # names are unique per registration (dict would hide duplicates otherwise)
    assert len(urn) == len(run.registered)


@pytest.mark.parametrize("stack", STACK_CASES)
def test_stack_outputs(stack):
    run, layout = program_run(stack), stack_layout(stack)
    s = summary(layout)
    assert run.outputs["gpus"] == s["gpus"] and run.outputs["nodes"] == s["nodes"]
    assert run.outputs["switches"] == s["switches"] and run.outputs["cables"] == s["cables"]
    assert run.outputs["fabricTiers"] == s["fabric_tiers"] and run.outputs["racks"] == s["racks"]
    assert run.outputs["inventoryPath"] == f"inventories/{stack}" and run.outputs["artifactsPath"] == f"build/{stack}"
    assert run.outputs["vaultFile"] is None  # no BMC credentials configured
    assert not run.by_type(":VaultFile") and not run.by_type(":AnsibleRun")  # Ansible runs only when asked


def write_as_pulumi_up(run: Run, root: Path) -> None:
    """What the engine does on `pulumi up`: create each file resource through its provider."""
    for r in run.by_type(":Artifact"):
        ArtifactProvider().create(plain(r.inputs) | {"root": str(root)})
    for r in run.by_type(":ArtifactTree"):
        ArtifactTreeProvider().create(plain(r.inputs) | {"root": str(root)})
    for r in run.by_type(":VaultFile"):
        props = {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in plain(r.inputs).items()}
        VaultFileProvider().create(props | {"root": str(root)})


def tree(root: Path) -> dict[str, bytes]:
    """The files a reader sees (through plan's links), without plan's hidden generation folders."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                p = Path(dirpath) / name
                seen[str(p.relative_to(root))] = p.read_bytes()
    return dict(sorted(seen.items()))


@pytest.mark.parametrize("stack", STACK_CASES)
def test_artifacts_are_byte_identical_to_superpod_plan(stack, tmp_path):
    planned = tmp_path / "plan"
    planned.mkdir()
    shutil.copy(ROOT / f"Pulumi.{stack}.yaml", planned)
    result = CliRunner().invoke(app, ["plan", "--stack", stack, "-C", str(planned)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (planned / f"Pulumi.{stack}.yaml").unlink()
    write_as_pulumi_up(program_run(stack), tmp_path / "up")
    by_plan, by_up = tree(planned), tree(tmp_path / "up")
    assert sorted(by_up) == sorted(by_plan)
    assert all(by_up[name] == by_plan[name] for name in by_plan)


@pytest.mark.slow
def test_8192_gpu_stack_stays_within_300_resources():
    run = program_run("roce-8k")
    assert run.outputs["gpus"] == 8192
    assert len(run.registered) <= 300, Counter(r.type for r in run.registered)


def test_bmc_credentials_are_secrets_and_never_plain_text(tmp_path):
    run = run_program("lab", tmp_path, CREDS, secret_keys=CREDS)
    [vault] = run.by_type(":VaultFile")
    assert run.outputs["vaultFile"] == "inventories/lab/group_vars/all/vault.yml"
    assert vault.parent.endswith("superpod:index:Artifacts::artifacts")
    # secret inputs go to the engine marked secret (encrypted in state), and every output the
    # provider derives from them is declared secret as well
    for key in ("username", "password", "vault_password"):
        assert is_secret(vault.inputs[key]) and run.secret[key] is True
    assert set(vault.secret_outputs) == {"username", "password", "vault_password", "fingerprint"}
    # nowhere else: not in stack outputs, not in any other resource's inputs
    for r in run.registered:
        if r is not vault:
            assert CREDS["bmcPassword"] not in repr(r.inputs) and CREDS["vaultPassword"] not in repr(r.inputs)
    assert CREDS["bmcPassword"] not in repr(run.outputs)
    # the files as `pulumi up` writes them: the password only as vault ciphertext
    write_as_pulumi_up(run, tmp_path)
    files = tree(tmp_path)
    in_trees = sum(len(plain(r.inputs)["files"]) for r in run.by_type(":ArtifactTree"))
    assert "inventories/lab/group_vars/all/vault.yml" in files
    assert len(files) == len(run.by_type(":Artifact")) + in_trees + 1
    for name, body in files.items():
        assert CREDS["bmcPassword"].encode() not in body and CREDS["bmcUsername"].encode() not in body, name
    generated = files["inventories/lab/group_vars/all/00_generated.yml"].decode()
    assert "superpod_bmc_password: '{{ vault_bmc_password" in generated  # what the vault file defines


def test_vault_password_file_is_read_as_a_secret(tmp_path):
    (tmp_path / "vault-pass.txt").write_text("from-a-file\n")
    creds = {k: v for k, v in CREDS.items() if k != "vaultPassword"} | {"vaultPasswordFile": "vault-pass.txt"}
    run = run_program("lab", tmp_path, creds, secret_keys=["bmcUsername", "bmcPassword"])
    [vault] = run.by_type(":VaultFile")
    assert is_secret(vault.inputs["vault_password"]) and vault.inputs["vault_password"]["value"] == "from-a-file"


@pytest.mark.parametrize(
    ("config", "secret_keys", "message"),
    [
        (CREDS, ["bmcUsername", "vaultPassword"], "superpod:bmcPassword: must be a secret"),
        ({"bmcUsername": "a", "bmcPassword": "b"}, ["bmcUsername", "bmcPassword"], "superpod:vaultPassword: required"),
        ({"bmcPassword": "b", "vaultPassword": "v"}, ["bmcPassword", "vaultPassword"],
         "superpod:bmcUsername: BMC username and password go together"),
        (CREDS | {"vaultPasswordFile": "x"}, list(CREDS), "superpod:vaultPasswordFile: set either"),
        ({"vaultPasswordFile": "missing.txt"}, [], "superpod:vaultPasswordFile: no such file"),
    ],
)
def test_bad_secret_settings_name_the_key_and_rule(tmp_path, config, secret_keys, message):
    with pytest.raises(pulumi.RunError, match=message):
        run_program("lab", tmp_path, config, secret_keys=secret_keys)


def test_bad_spec_names_the_field(tmp_path):
    pod = stack_pod("lab") | {"nodes_per_su": 0}
    with pytest.raises(pulumi.RunError, match=r"superpod:pod\.nodes_per_su: "):
        run_program("lab", tmp_path, pod=pod)


def records(run: Run) -> dict[str, dict]:
    return {r.name: plain(r.inputs) for r in run.by_type(":LayoutRecord")}


def test_growing_the_pod_changes_only_what_grows(tmp_path):
    """What `pulumi preview` shows for a second SU: a new SU record, additions to the tiers that
    connect it, and no existing device, cable or rack entry altered."""
    before = records(program_run("lab"))
    grown = spec_with("lab", scalable_units=2).model_dump(mode="json", exclude_none=True)
    after = records(run_program("lab", tmp_path, pod=grown))
    assert set(after) - set(before) == {"su02-layout"}
    p = RecordProvider()
    changed = {name for name in before if p.diff(name, p.create(before[name]).outs, after[name]).changes}
    assert "su01-layout" not in changed and changed  # the spine tier gains the new leaves' uplinks
    for name in changed:
        old_parts, new_parts = parts_of(before[name]), parts_of(after[name])
        for part in PARTS:
            old, new = old_parts[part], new_parts[part]
            assert {k: new.get(k) for k in old} == old, (name, part)  # only additions


def test_records_travel_as_one_json_string_per_map():
    """Each record's devices, cables and racks are one canonical JSON string (sorted keys, no
    spaces) holding the slice's map: the SDK serializes a string as one value, a map value by
    value in Python (334k values at 100k GPUs)."""
    expected = slice_maps("lab")
    got = records(program_run("lab"))
    assert set(got) == set(expected)
    for name, inputs in got.items():
        for part in PARTS:
            text = inputs[part]
            assert isinstance(text, str), (name, part, type(text))
            assert json.loads(text) == expected[name][part], (name, part)
            assert text == json.dumps(expected[name][part], sort_keys=True, separators=(",", ":"))


def role_tree(root: Path) -> None:
    (root / "roles/demo/tasks").mkdir(parents=True)
    (root / "roles/demo/tasks/main.yml").write_text("---\n")
    (root / "site.yml").write_text("---\n")


def test_ansible_run_is_opt_in_and_follows_inventory_and_roles(tmp_path):
    role_tree(tmp_path)
    run = run_program("lab", tmp_path, {"runAnsible": True})
    [site] = run.by_type(":AnsibleRun")
    assert site.inputs["roles_digest"] == tree_digest(tmp_path, ["site.yml", "roles", "playbooks"])
    assert site.inputs["playbook"] == "site.yml" and site.inputs["inventory"] == "inventories/lab"
    (tmp_path / "roles/demo/tasks/main.yml").write_text("---\n- name: Changed\n  ansible.builtin.meta: noop\n")
    [again] = run_program("lab", tmp_path, {"runAnsible": True}).by_type(":AnsibleRun")
    assert again.inputs["roles_digest"] != site.inputs["roles_digest"]
    assert again.inputs["inventory_digest"] == site.inputs["inventory_digest"]
    grown = spec_with("lab", scalable_units=2).model_dump(mode="json", exclude_none=True)
    [bigger] = run_program("lab", tmp_path, {"runAnsible": True}, pod=grown).by_type(":AnsibleRun")
    assert bigger.inputs["inventory_digest"] != site.inputs["inventory_digest"]


def test_the_program_holds_no_rendered_file_after_hashing_it(monkeypatch):
    """The program keeps each file's hash and size, never the set of contents (issue 39: 0.8 GB
    of text at 100k GPUs), nor a large file whole: by the time the renderer makes a piece of a
    file, every piece before the last is gone. Each piece is handed over as a str subclass,
    which can be weakly referenced."""
    import weakref

    from topology.pulumi import artifacts as pulumi_artifacts
    from topology.render import artifacts as render_artifacts
    from topology.render.pieces import pieces_of

    class Tracked(str):
        pass

    alive: list[int] = []
    refs: list[weakref.ref] = []
    real = render_artifacts.iter_artifact_pieces

    def tracked_pieces(pieces):
        for piece in pieces_of(pieces):
            alive.append(sum(r() is not None for r in refs[:-1]))  # the last may still be in the caller's hands
            tracked = Tracked(piece)
            refs.append(weakref.ref(tracked))
            del piece
            yield tracked
            del tracked

    def watched(*args, **kwargs):
        for path, pieces in real(*args, **kwargs):
            yield path, tracked_pieces(pieces)

    monkeypatch.setattr(render_artifacts, "iter_artifact_pieces", watched)
    pulumi_artifacts._rendered.clear()
    run_program("lab", ROOT)
    assert len(refs) > 10, "the program rendered nothing"
    assert max(alive) == 0, f"up to {max(alive)} earlier files' contents were still held while rendering"


def test_the_program_plans_with_the_cycle_collector_paused(monkeypatch):
    """The program builds and renders the layout as `superpod plan` does: without the cycle collector
    (topology/gc_tuning.py: a quarter of a 100k-GPU plan's CPU with it), and leaves it as it was."""
    import gc

    from topology.pulumi import artifacts as pulumi_artifacts
    from topology.pulumi import program

    seen: dict[str, bool] = {}
    real_build, real_digests = program.build, program.file_digests

    def build(spec):
        seen["build"] = gc.isenabled()
        return real_build(spec)

    def file_digests(*args):
        seen["render"] = gc.isenabled()
        return real_digests(*args)

    monkeypatch.setattr(program, "build", build)
    monkeypatch.setattr(program, "file_digests", file_digests)
    pulumi_artifacts._rendered.clear()
    assert gc.isenabled()
    run_program("lab", ROOT)
    assert seen == {"build": False, "render": False}
    assert gc.isenabled(), "the program left the collector paused"


def test_the_collector_resumes_only_once_the_layout_is_gone(monkeypatch):
    """The collector, paused for the plan, resumes only after the program dropped the layout:
    resumed while the layout lived, its first collections walked every object of it again (three
    full walks, 1.5-2 s of a 100k-GPU program's CPU)."""
    import gc
    import weakref

    from topology.pulumi import program

    refs: list[weakref.ref] = []
    real_layout_of = program.layout_of

    def layout_of(s):
        layout = real_layout_of(s)
        refs.append(weakref.ref(layout))
        return layout

    walks: list[int] = []

    def watch(phase, info):
        if phase == "start" and refs and refs[-1]() is not None:
            walks.append(info["generation"])

    monkeypatch.setattr(program, "layout_of", layout_of)
    gc.callbacks.append(watch)
    try:
        run_program("lab", ROOT)
    finally:
        gc.callbacks.remove(watch)
    assert len(refs) == 1 and refs[0]() is None, "the program kept the layout"
    assert walks == [], f"{len(walks)} collections ran while the layout was alive (generations {sorted(set(walks))})"
