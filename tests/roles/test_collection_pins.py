"""collections/requirements.yml pins every collection the project calls by FQCN to one exact
version, and the collections Ansible actually loads here are those versions (judged by
`ansible-galaxy collection list`, Ansible's own view of what is installed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.role_files import ROOT, load

BUILTIN = {"ansible.builtin", "ansible.legacy", "ansible.module_utils", "ansible.plugins"}  # ansible-core itself
FQCN = re.compile(r"\b(ansible\.[a-z_]+|community\.[a-z_]+|kubernetes\.core|containers\.[a-z_]+)\.[a-z_]+")
SOURCES = ["roles", "playbooks", "site.yml", "topology/operate/playbooks"]


def used_collections() -> set[str]:
    found = set()
    for source in SOURCES:
        base = ROOT / source
        suffixes = (".yml", ".yaml", ".j2", ".py")
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.suffix in suffixes]
        for path in files:
            if "molecule" in path.parts:  # scenario plumbing (community.docker) is molecule's, not the roles'
                continue
            found |= {".".join(m.group(0).split(".")[:2]) for m in FQCN.finditer(path.read_text())}
    return found - BUILTIN


def pins() -> dict[str, str]:
    return {c["name"]: c["version"] for c in load(ROOT / "collections/requirements.yml")["collections"]}


def test_every_collection_used_is_pinned_exactly():
    pinned = pins()
    assert used_collections() <= set(pinned), used_collections() - set(pinned)
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in pinned.values()), pinned


def test_installed_collections_are_the_pinned_versions():
    galaxy = Path(sys.executable).parent / "ansible-galaxy"
    out = subprocess.run([str(galaxy), "collection", "list", "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    installed: dict[str, str] = {}
    for path_entries in json.loads(out).values():
        for name, info in path_entries.items():
            installed.setdefault(name, info["version"])  # the first path wins, as Ansible loads it
    assert {name: installed.get(name) for name in pins()} == pins()
