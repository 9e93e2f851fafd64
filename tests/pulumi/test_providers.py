"""The dynamic providers driven directly on a temporary folder, as the Pulumi engine's
provider process drives them: create / diff / update / delete / read."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from tests.pulumi.harness import stack_pod
from topology.pulumi.ansible_run import AnsibleRunProvider, tree_digest
from topology.pulumi.artifacts import GENERATED, PROVIDER_VERSION, SEED, ArtifactProvider, render_files
from topology.pulumi.files import sha256_text
from topology.pulumi.vault import VaultFileProvider, fingerprint, vault_text
from topology.render.inventory import OVERRIDES_SEED

POD = stack_pod("lab")
OUT, INV = "build/lab", "inventories/lab"


def artifact(root: Path, path: str, **over) -> dict:
    content = render_files(POD, OUT, INV)[path]
    props = {"root": str(root), "path": path, "mode": GENERATED, "sha256": sha256_text(content),
             "size": len(content.encode()), "version": PROVIDER_VERSION, "pod": POD, "out_dir": OUT,
             "inventory_dir": INV}
    return props | over


def test_artifact_create_writes_the_rendered_file_atomically(tmp_path):
    p = ArtifactProvider()
    props = artifact(tmp_path, f"{INV}/hosts.yml")
    res = p.create(props)
    target = tmp_path / INV / "hosts.yml"
    assert target.read_text() == render_files(POD, OUT, INV)[f"{INV}/hosts.yml"]
    assert res.id == f"{INV}/hosts.yml" and res.outs["sha256"] == props["sha256"]
    assert res.outs["created_dirs"] == ["inventories", INV]  # outermost first; delete takes them away
    assert [f.name for f in target.parent.iterdir()] == ["hosts.yml"]  # no temp file left behind


def test_artifact_diff_is_by_content_hash_and_path(tmp_path):
    p = ArtifactProvider()
    props = artifact(tmp_path, f"{OUT}/cabling.csv")
    outs = p.create(props).outs
    assert p.diff("x", outs, props).changes is False
    assert p.diff("x", outs, props | {"sha256": "0" * 64}).changes is True
    assert p.diff("x", outs, props | {"version": "2"}).changes is True
    moved = p.diff("x", outs, props | {"path": f"{OUT}/cables.csv"})
    assert moved.changes is True and moved.replaces == ["path"]


def test_artifact_update_rewrites_and_delete_removes_file_and_its_folders(tmp_path):
    p = ArtifactProvider()
    (tmp_path / "build").mkdir()  # there before: delete must leave it
    props = artifact(tmp_path, f"{OUT}/devices.csv")
    outs = p.create(props).outs
    target = tmp_path / OUT / "devices.csv"
    target.write_text("edited by hand\n")
    outs = p.update("x", outs, props).outs
    assert target.read_text() == render_files(POD, OUT, INV)[f"{OUT}/devices.csv"]
    assert outs["created_dirs"] == [OUT]
    p.delete("x", outs)
    assert not target.exists() and not (tmp_path / OUT).exists() and (tmp_path / "build").is_dir()


def test_artifact_delete_keeps_folders_that_hold_other_files(tmp_path):
    p = ArtifactProvider()
    a = p.create(artifact(tmp_path, f"{OUT}/devices.csv")).outs
    p.create(artifact(tmp_path, f"{OUT}/racks.csv"))
    p.delete("x", a)
    assert not (tmp_path / OUT / "devices.csv").exists() and (tmp_path / OUT / "racks.csv").exists()
    p.delete("x", a)  # deleting again (file already gone) is fine


def test_artifact_refuses_content_other_than_planned(tmp_path):
    with pytest.raises(RuntimeError, match="other content than the program planned"):
        ArtifactProvider().create(artifact(tmp_path, f"{OUT}/devices.csv", sha256="0" * 64))
    assert not (tmp_path / OUT / "devices.csv").exists()


def test_artifact_read_reports_hand_edits_and_removals(tmp_path):
    p = ArtifactProvider()
    outs = p.create(artifact(tmp_path, f"{OUT}/asns.csv")).outs
    assert p.read("x", outs).outs["sha256"] == outs["sha256"]
    (tmp_path / OUT / "asns.csv").write_text("x\n")
    assert p.read("x", outs).outs["sha256"] == sha256_text("x\n")  # the next `up` rewrites it
    (tmp_path / OUT / "asns.csv").unlink()
    assert p.read("x", outs).id is None  # dropped from state; the next `up` creates it


def seed(root: Path) -> dict:
    return {"root": str(root), "path": f"{INV}/group_vars/all/overrides.yml", "mode": SEED, "content": OVERRIDES_SEED,
            "sha256": sha256_text(OVERRIDES_SEED), "size": len(OVERRIDES_SEED), "version": PROVIDER_VERSION}


def test_overrides_seed_is_created_once_and_never_overwritten(tmp_path):
    p = ArtifactProvider()
    outs = p.create(seed(tmp_path)).outs
    target = tmp_path / INV / "group_vars/all/overrides.yml"
    assert target.read_text() == OVERRIDES_SEED and outs["owned"] is True
    assert p.diff("x", outs, seed(tmp_path) | {"sha256": "1" * 64}).changes is False
    target.write_text("---\nsuperpod_pod: mine\n")
    p.delete("x", outs)
    assert target.read_text() == "---\nsuperpod_pod: mine\n"  # edited: the user's now
    target.write_text(OVERRIDES_SEED)
    p.delete("x", outs)
    assert not target.exists() and not (tmp_path / "inventories").exists()  # untouched seed: ours to remove


def test_overrides_present_before_is_adopted_and_left_alone(tmp_path):
    target = tmp_path / INV / "group_vars/all/overrides.yml"
    target.parent.mkdir(parents=True)
    target.write_text(OVERRIDES_SEED)
    p = ArtifactProvider()
    outs = p.create(seed(tmp_path)).outs
    assert outs["owned"] is False
    p.delete("x", outs)
    assert target.read_text() == OVERRIDES_SEED


def vault_props(root: Path, password: str = "s3cr3t-bmc-pw") -> dict:
    return {"root": str(root), "path": f"{INV}/group_vars/all/vault.yml", "pod": "lab", "username": "admin",
            "password": password, "vault_password": "vault-pw", "version": "1"}


def test_vault_file_is_encrypted_and_decrypts_to_the_credentials(tmp_path):
    p = VaultFileProvider()
    outs = p.create(vault_props(tmp_path)).outs
    text = (tmp_path / INV / "group_vars/all/vault.yml").read_text()
    assert text.startswith("$ANSIBLE_VAULT;1.1;AES256\n")
    assert "s3cr3t-bmc-pw" not in text and "admin" not in text
    assert "s3cr3t-bmc-pw" not in repr(outs) and "vault-pw" not in repr(outs)
    plain = VaultLib([("default", VaultSecret(b"vault-pw"))]).decrypt(text.encode()).decode()
    assert "vault_bmc_username: admin\n" in plain and "vault_bmc_password: s3cr3t-bmc-pw\n" in plain
    assert ((tmp_path / INV / "group_vars/all/vault.yml").stat().st_mode & 0o077) == 0  # owner only


def test_vault_file_diff_update_delete(tmp_path):
    p = VaultFileProvider()
    outs = p.create(vault_props(tmp_path)).outs
    assert p.diff("x", outs, vault_props(tmp_path)).changes is False  # re-encryption is not a change
    new = vault_props(tmp_path, "rotated")
    assert p.diff("x", outs, new).changes is True
    assert p.diff("x", outs, vault_props(tmp_path) | {"vault_password": "other"}).changes is True
    outs = p.update("x", outs, new).outs
    assert outs["fingerprint"] == fingerprint(new)
    plain = VaultLib([("default", VaultSecret(b"vault-pw"))]).decrypt(
        (tmp_path / INV / "group_vars/all/vault.yml").read_bytes()).decode()
    assert "vault_bmc_password: rotated" in plain
    p.delete("x", outs)
    assert not (tmp_path / "inventories").exists()


def role_tree(root: Path) -> None:
    (root / "roles/demo/tasks").mkdir(parents=True)
    (root / "roles/demo/tasks/main.yml").write_text("---\n- name: Say hello\n  ansible.builtin.debug:\n      msg: hi\n")
    (root / "roles/demo/molecule/default").mkdir(parents=True)
    (root / "roles/demo/molecule/default/verify.yml").write_text("---\n")
    (root / "site.yml").write_text("---\n- name: Demo\n  hosts: all\n  gather_facts: false\n"
                                   "  roles:\n    - demo\n")


def test_roles_digest_follows_role_files_not_their_tests(tmp_path):
    role_tree(tmp_path)
    before = tree_digest(tmp_path, ["site.yml", "roles", "playbooks"])
    (tmp_path / "roles/demo/molecule/default/verify.yml").write_text("---\n# changed\n")
    assert tree_digest(tmp_path, ["site.yml", "roles", "playbooks"]) == before
    (tmp_path / "roles/demo/tasks/main.yml").write_text("---\n")
    assert tree_digest(tmp_path, ["site.yml", "roles", "playbooks"]) != before


def test_ansible_run_provider_runs_the_playbook_through_ansible_runner(tmp_path):
    role_tree(tmp_path)
    (tmp_path / "roles/demo/tasks/main.yml").write_text(
        "---\n- name: The vault file decrypts with the password Pulumi handed over\n"
        "  ansible.builtin.assert:\n    that: vault_bmc_password == 's3cr3t'\n")
    (tmp_path / "inv/group_vars/all").mkdir(parents=True)
    (tmp_path / "inv/group_vars/all/vault.yml").write_text(vault_text("lab", "admin", "s3cr3t", "vault-pw"))
    (tmp_path / "inv/hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    props = {"root": str(tmp_path), "playbook": "site.yml", "inventory": "inv", "inventory_digest": "a",
             "roles_digest": "b", "version": "1", "vault_password": "vault-pw"}
    p = AnsibleRunProvider()
    outs = p.create(props).outs
    assert outs["status"] == "successful" and outs["rc"] == 0
    assert p.diff("x", outs, props).changes is False
    assert p.diff("x", outs, props | {"roles_digest": "c"}).changes is True
    (tmp_path / "roles/demo/tasks/main.yml").write_text("---\n- name: Fail\n  ansible.builtin.fail:\n")
    with pytest.raises(RuntimeError, match="site.yml failed .*failed hosts: localhost"):
        p.update("x", outs, props)


def test_serialized_provider_works_in_a_fresh_process(tmp_path):
    """The engine pickles the provider (dill) into the resource and unpickles it in its own
    provider process: that process, started elsewhere, must find our code and write the file."""
    import base64
    import json
    import subprocess
    import sys

    from pulumi.dynamic.dynamic import serialize_provider

    pickled = serialize_provider(ArtifactProvider())
    props = artifact(tmp_path / "project", f"{OUT}/racks.csv")
    script = (
        "import base64, dill, json, sys\n"
        "provider = dill.loads(base64.b64decode(sys.argv[1]))\n"
        "print(provider.create(json.loads(sys.argv[2])).id)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, pickled, json.dumps(props)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(base64.b64decode(pickled)) < 1000  # by reference to topology.pulumi, not a copy of it
    assert (tmp_path / "project" / OUT / "racks.csv").read_text() == render_files(POD, OUT, INV)[f"{OUT}/racks.csv"]


def test_concurrent_creates_render_the_spec_once(tmp_path, monkeypatch):
    """The engine drives the provider from several threads: the spec is rendered once for all."""
    from concurrent.futures import ThreadPoolExecutor

    import topology.pulumi.artifacts as artifacts_mod
    import topology.render.artifacts as render

    names = [f"{OUT}/{n}" for n in ("devices.csv", "cabling.csv", "ipplan.csv", "asns.csv", "racks.csv")]
    props = [artifact(tmp_path, n) for n in names]
    calls = []
    original = render.render_artifacts

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(render, "render_artifacts", counting)
    artifacts_mod._rendered.clear()  # a fresh provider process
    with ThreadPoolExecutor(5) as pool:
        list(pool.map(ArtifactProvider().create, props))
    assert len(calls) == 1
    assert all((tmp_path / n).is_file() for n in names)
