"""The Pulumi program: settings in, layout built once, resources registered, outputs exported.
`__main__.py` only calls `deploy(read_settings(...))`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pulumi

from topology import catalog
from topology.errors import SpecError
from topology.gc_tuning import collector_paused
from topology.layout.build import build
from topology.layout.model import Layout
from topology.pulumi.ansible_run import AnsibleRun
from topology.pulumi.artifact_tree import ArtifactTree
from topology.pulumi.artifacts import SEED, Artifact, Digest, file_digests
from topology.pulumi.components import Pod
from topology.pulumi.files import sha256_text
from topology.pulumi.settings import Settings
from topology.pulumi.vault import VaultFile
from topology.render.inventory import OVERRIDES, OVERRIDES_SEED
from topology.render.switches import SUBDIR as SWITCHES

VAULT = Path("group_vars/all/vault.yml")  # beside 00_generated.yml, which refers to its variables


class Artifacts(pulumi.ComponentResource):
    """The generated files (one Artifact each), the overrides seed and the vault file."""

    def __init__(self, name: str, s: Settings, files: dict[Path, Digest],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("superpod:index:Artifacts", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # switch configs (one file per switch) are one resource for the folder, not one each
        trees = {s.out_dir / SWITCHES}
        in_tree = {p: dg for p, dg in files.items() if any(t in p.parents for t in trees)}
        self.files = {
            str(path): Artifact(str(path), root=str(s.root), path=str(path), digest=digest, pod=s.pod,
                                out_dir=str(s.out_dir), inventory_dir=str(s.inventory_dir), opts=child)
            for path, digest in files.items()
            if path not in in_tree
        }
        for tree in sorted(trees):
            members = {str(p): dg.sha256 for p, dg in in_tree.items() if tree in p.parents}
            if members:
                self.files[str(tree)] = ArtifactTree(str(tree), root=str(s.root), path=str(tree), digests=members,
                                                     pod=s.pod, out_dir=str(s.out_dir),
                                                     inventory_dir=str(s.inventory_dir), opts=child)
        seed = s.inventory_dir / OVERRIDES
        self.files[str(seed)] = Artifact(str(seed), root=str(s.root), path=str(seed), content=OVERRIDES_SEED,
                                         mode=SEED, opts=child)
        self.vault = None
        if s.bmc_password is not None:
            vault = s.inventory_dir / VAULT
            self.vault = VaultFile(str(vault), root=str(s.root), path=str(vault), pod=s.spec.name,
                                   username=s.bmc_username, password=s.bmc_password,
                                   vault_password=s.vault_password, opts=child)
        self.register_outputs({"files": sorted(self.files)})


def layout_of(s: Settings) -> Layout:
    try:
        return build(s.spec)
    except SpecError as e:
        raise pulumi.RunError(f"superpod:pod.{e.field}: {e.rule}") from None


def deploy(s: Settings) -> Pod:
    # planned as `superpod plan` plans: without the cycle collector, which walks the plan's millions
    # of acyclic objects as the heap grows (topology/gc_tuning.py). It stays paused until the layout
    # is dropped: resumed while the layout lived, its first collections walked every object of it
    # again (three full walks, 1.5-2 s of a 100k-GPU program's CPU, 0.25 s at 8k)
    with collector_paused():
        layout = layout_of(s)
        # what `superpod plan` renders (iter_artifacts), less the overrides seed: plan adds it only
        # while the file is absent, the program always manages it (as a seed, see artifacts.py). Only
        # each file's hash and size are kept: the state holds no content, and at 100k GPUs the files
        # are 0.8 GB, which the program held all at once before (issue 39)
        files = file_digests(layout, s.out_dir, s.inventory_dir)
        gpus_per_node = catalog.load().nodes[s.spec.node_model].gpu_count
        pod = Pod(s.stack, layout, gpus_per_node)
        export(layout, s)
        del layout  # freed here by reference counts, before the collector resumes
    artifacts = pod.artifacts = Artifacts("artifacts", s, files, pulumi.ResourceOptions(parent=pod))
    if s.run_ansible:
        inventory = {str(p): dg.sha256 for p, dg in files.items() if s.inventory_dir in p.parents}
        AnsibleRun(
            "site",
            root=s.root,
            playbook=s.playbook,
            inventory=s.inventory_dir,
            inventory_digest=sha256_text(repr(sorted(inventory.items()))),
            vault_password=s.vault_password,
            opts=pulumi.ResourceOptions(parent=pod, depends_on=[*artifacts.files.values(),
                                                                *([artifacts.vault] if artifacts.vault else [])]),
        )
    return pod


def export(layout: Layout, s: Settings) -> None:
    pulumi.export("gpus", layout.facts["gpus"])
    pulumi.export("nodes", layout.facts["nodes"])
    pulumi.export("fabricTiers", layout.facts["tiers"])
    pulumi.export("switches", {t.role: t.switches for t in layout.tiers})
    pulumi.export("cables", dict(Counter(lk.tier for lk in layout.links)))
    pulumi.export("racks", len(layout.racks))
    pulumi.export("inventoryPath", str(s.inventory_dir))
    pulumi.export("artifactsPath", str(s.out_dir))
    pulumi.export("vaultFile", str(s.inventory_dir / VAULT) if s.bmc_password is not None else None)
