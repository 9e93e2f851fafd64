"""The switch configs as one Pulumi resource per folder (ArtifactTree): written, updated and
removed by its provider exactly as `superpod plan` renders them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import stack_spec
from topology.pulumi.artifact_tree import ArtifactTreeProvider
from topology.pulumi.artifacts import render_files
from topology.pulumi.files import sha256_text


def _props(pod: dict, root: Path) -> dict:
    files = render_files(pod, "build/lab", "inventories/lab")
    switches = {p: c for p, c in files.items() if p.startswith("build/lab/switches/")}
    return {
        "root": str(root),
        "path": "build/lab/switches",
        "files": {p: sha256_text(c) for p, c in switches.items()},
        "pod": pod,
        "out_dir": "build/lab",
        "inventory_dir": "inventories/lab",
        "version": "1",
        "created_dirs": None,
    }, switches


def test_tree_writes_updates_and_removes_the_switch_configs(tmp_path):
    pod = stack_spec("lab").model_dump(mode="json", exclude_none=True)
    props, switches = _props(pod, tmp_path)
    provider = ArtifactTreeProvider()
    outs = provider.create(props).outs
    assert len(switches) > 10
    for p, c in switches.items():
        assert (tmp_path / p).read_text() == c
    # the compute fabric moves to SONiC: NVUE files go, config_db.json + frr.conf come
    sonic = pod | {"compute_fabric": pod["compute_fabric"] | {"switch_os": "sonic"}}
    news, new_files = _props(sonic, tmp_path)
    assert provider.diff("id", outs, news).changes
    outs = provider.update("id", outs, news).outs
    assert not (tmp_path / "build/lab/switches/su01-leaf-rail0/startup.yaml").exists()
    assert (tmp_path / "build/lab/switches/su01-leaf-rail0/frr.conf").read_text() == new_files[
        "build/lab/switches/su01-leaf-rail0/frr.conf"
    ]
    assert not provider.diff("id", outs, news).changes
    provider.delete("id", outs)
    assert not (tmp_path / "build").exists()
