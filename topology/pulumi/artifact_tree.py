"""A folder of generated files as one Pulumi resource: the switch configs (one file per switch,
1,087 at 8k GPUs) would otherwise be a resource each and blow the stack's resource budget.

State holds each file's path and content hash (never content), like Artifact; the provider renders
the files again from the pod spec through the same `render_files` as `superpod plan`, checks them
against the hashes the program computed, writes changed files atomically and removes dropped ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from topology.pulumi.artifacts import render_files
from topology.pulumi.files import sha256_text, write_file

TREE_VERSION = "1"


class ArtifactTreeProvider(ResourceProvider):
    def _render(self, props: dict[str, Any], paths) -> dict[str, str]:
        files = render_files(props["pod"], props["out_dir"], props["inventory_dir"])
        out = {}
        for p in paths:
            content = files.get(p)
            if content is None or sha256_text(content) != props["files"][p]:
                raise RuntimeError(f"{p}: the provider rendered other content than the program planned; run again")
            out[p] = content
        return out

    def _write(self, props: dict[str, Any], paths, created: set[str]) -> dict[str, Any]:
        root = Path(props["root"])
        for p, content in self._render(props, paths).items():
            created.update(write_file(root, p, content))
        return props | {"created_dirs": sorted(created, key=lambda d: (d.count("/"), d))}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["path"], self._write(props, props["files"], set()))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        moved = [k for k in ("root", "path") if olds.get(k) != news.get(k)]
        if moved:
            return DiffResult(changes=True, replaces=moved, delete_before_replace=False)
        return DiffResult(changes=any(olds.get(k) != news[k] for k in ("files", "version")))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old_files = olds.get("files") or {}
        root = Path(news["root"])
        changed = [p for p, h in news["files"].items() if old_files.get(p) != h or not (root / p).exists()]
        for gone in old_files.keys() - news["files"].keys():
            _unlink(Path(news["root"]) / gone)
        return UpdateResult(self._write(news, changed, set(olds.get("created_dirs") or [])))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        root = Path(props["root"])
        for p in props.get("files") or {}:
            _unlink(root / p)
        for d in sorted(props.get("created_dirs") or [], key=lambda d: -d.count("/")):
            try:
                os.rmdir(root / d)
            except OSError:
                continue  # gone, or holds files that are not ours

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """`pulumi refresh`: real hashes of the files on disk (edited or removed ones get rewritten)."""
        root = Path(props["root"])
        files = {}
        for p in props.get("files") or {}:
            try:
                files[p] = sha256_text((root / p).read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
        return ReadResult(id_, props | {"files": files})


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


class ArtifactTree(Resource, module="superpod", name="ArtifactTree"):
    """A folder of generated files. Outputs: path, files (path -> sha256)."""

    path: pulumi.Output[str]
    files: pulumi.Output[dict]

    def __init__(
        self,
        name: str,
        *,
        root: str,
        path: str,
        digests: dict[str, str],
        pod: dict,
        out_dir: str,
        inventory_dir: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "root": root,
            "path": path,
            "files": dict(sorted(digests.items())),  # path -> sha256 of its content
            "pod": pod,
            "out_dir": out_dir,
            "inventory_dir": inventory_dir,
            "version": TREE_VERSION,
            "created_dirs": None,
        }
        super().__init__(ArtifactTreeProvider(), name, props, opts)
