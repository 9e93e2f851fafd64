"""The generated files as Pulumi resources: one dynamic resource per file.

State holds each file's path and content hash, never its content: an 8192-GPU pod's artifacts
are about 25 MB, and Pulumi checkpoints the whole state after every step. The provider renders
the content again from the pod spec (once per provider process and spec), checks it against the
hash the program computed, and writes it atomically. Program and provider call the same
`render_artifacts` as `superpod plan`, so the files are byte-identical to the plan's.

`overrides.yml` is the user's: created with its seed when absent, never rewritten, and removed on
delete only if it was created here and is still untouched.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, NamedTuple

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from topology.gc_tuning import collector_paused
from topology.pulumi.files import remove_file, sha256_text, write_file
from topology.render.pieces import Pieces, pieces_of

PROVIDER_VERSION = "1"  # in every resource's inputs: bump it when the provider's behaviour changes
GENERATED, SEED = "generated", "seed"

_rendered: dict[str, dict[str, str]] = {}  # one entry: the last spec rendered in this process
# the engine calls the provider from several threads at once: one renders, the others wait for it
_render_lock = threading.Lock()


def render_files(pod: dict, out_dir: str, inventory_dir: str, layout=None) -> dict[str, str]:
    """Path (as given, usually relative to the project) -> content of the generated files,
    exactly what `superpod plan` renders for this spec (`layout`: already built from it).
    The overrides seed is not among them."""
    from topology.layout.build import build
    from topology.render.artifacts import render_artifacts
    from topology.render.inventory import OVERRIDES
    from topology.spec import parse

    key = json.dumps([pod, out_dir, inventory_dir], sort_keys=True)
    with _render_lock:
        if key not in _rendered:
            with collector_paused():  # as `superpod plan` and the program plan (topology/gc_tuning.py)
                files = render_artifacts(layout or build(parse(pod)), Path(out_dir), Path(inventory_dir))
            seed = Path(inventory_dir) / OVERRIDES
            _rendered.clear()
            _rendered[key] = {str(p): c for p, c in files.items() if p != seed}
        return _rendered[key]


class Digest(NamedTuple):
    """What the program keeps of a generated file: the provider renders the content again."""

    sha256: str
    size: int


def digest_of(content: str | Pieces) -> Digest:
    """A file's hash and size, its pieces hashed as they come (the file is never joined)."""
    sha, size = hashlib.sha256(), 0
    for piece in pieces_of(content):
        data = piece.encode("utf-8")
        sha.update(data)
        size += len(data)
    return Digest(sha.hexdigest(), size)


def file_digests(layout, out_dir: Path, inventory_dir: Path) -> dict[Path, Digest]:
    """Path -> Digest of what render_files renders for the layout, each file hashed piece by
    piece as it is rendered and then dropped: the program never holds the set (0.8 GB at 100k
    GPUs) nor a large file whole."""
    from topology.render.artifacts import iter_artifact_pieces
    from topology.render.inventory import OVERRIDES

    seed = Path(inventory_dir) / OVERRIDES
    return {path: digest_of(pieces)
            for path, pieces in iter_artifact_pieces(layout, Path(out_dir), Path(inventory_dir)) if path != seed}


class ArtifactProvider(ResourceProvider):
    """Writes one file on create/update (diff by content hash), removes it on delete."""

    def _content(self, props: dict[str, Any]) -> str:
        if props["mode"] == SEED:
            return props["content"]
        files = render_files(props["pod"], props["out_dir"], props["inventory_dir"])
        content = files.get(props["path"])
        if content is None or sha256_text(content) != props["sha256"]:
            raise RuntimeError(
                f"{props['path']}: the provider rendered other content than the program planned "
                "(different topology versions in the program and the provider?); run `pulumi up` again"
            )
        return content

    def _outs(self, props: dict[str, Any], created_dirs: list[str], owned: bool) -> dict[str, Any]:
        seed = {"content": props["content"]} if props["mode"] == SEED else {}
        return seed | {
            "root": props["root"],
            "path": props["path"],
            "mode": props["mode"],
            "sha256": props["sha256"],
            "size": props["size"],
            "created_dirs": created_dirs,
            "owned": owned,
            "version": props["version"],
        }

    def create(self, props: dict[str, Any]) -> CreateResult:
        root, path = Path(props["root"]), props["path"]
        if props["mode"] == SEED and (root / path).exists():
            return CreateResult(path, self._outs(props, [], owned=False))  # the user's file: adopt, never touch
        created = write_file(root, path, self._content(props))
        return CreateResult(path, self._outs(props, created, owned=True))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        moved = [k for k in ("root", "path", "mode") if olds.get(k) != news.get(k)]
        if moved:
            return DiffResult(changes=True, replaces=moved, delete_before_replace=False)
        # a seed is written once; after that the file is the user's
        changed = news["mode"] == GENERATED and any(olds.get(k) != news[k] for k in ("sha256", "version"))
        return DiffResult(changes=changed)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        root = Path(news["root"])
        created = write_file(root, news["path"], self._content(news))
        created = sorted(set(olds.get("created_dirs") or []) | set(created))
        return UpdateResult(self._outs(news, created, olds.get("owned", True)))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        root, path = Path(props["root"]), props["path"]
        if props["mode"] == SEED:
            try:
                edited = (root / path).read_text(encoding="utf-8") != props.get("content")
            except FileNotFoundError:
                edited = False
            if not props.get("owned") or edited:
                return  # the user's file (adopted, or edited since): it stays
        remove_file(root, path, props.get("created_dirs"))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """`pulumi refresh`: a file removed by hand drops out of the state (the next `up` writes it
        again); a file edited by hand gets its real hash (the next `up` rewrites it)."""
        target = Path(props["root"]) / props["path"]
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ReadResult(None, props)
        if props["mode"] == SEED:
            return ReadResult(id_, props)
        return ReadResult(id_, props | {"sha256": sha256_text(text), "size": len(text.encode("utf-8"))})


class Artifact(Resource, module="superpod", name="Artifact"):
    """One generated file. Outputs: path, sha256, size."""

    path: pulumi.Output[str]
    sha256: pulumi.Output[str]
    size: pulumi.Output[int]

    def __init__(
        self,
        name: str,
        *,
        root: str,
        path: str,
        content: str | None = None,
        digest: Digest | None = None,
        pod: dict | None = None,
        out_dir: str = "",
        inventory_dir: str = "",
        mode: str = GENERATED,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """A generated file by its `digest` (the program keeps no content), a seed by its `content`."""
        if digest is None:
            digest = digest_of(content)
        props: dict[str, Any] = {
            "root": root,
            "path": path,
            "mode": mode,
            "sha256": digest.sha256,
            "size": digest.size,
            "version": PROVIDER_VERSION,
            "created_dirs": None,
            "owned": None,
        }
        if mode == SEED:
            props["content"] = content  # a few lines, the same for every pod
        else:
            props.update(pod=pod, out_dir=out_dir, inventory_dir=inventory_dir)
        super().__init__(ArtifactProvider(), name, props, opts)
