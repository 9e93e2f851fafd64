"""File operations the dynamic providers share: atomic writes that remember which folders
they created, and removal that takes those folders away again once empty."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from topology.render.files import write_atomic


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def missing_dirs(target: Path, root: Path) -> list[str]:
    """Folders between `root` and `target`'s folder that do not exist yet, outermost first
    (relative to root when inside it): delete removes exactly these, so nothing the user made."""
    missing = []
    d = target.parent
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    return [_rel(p, root) for p in reversed(missing)]


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def write_file(root: Path, rel_path: str, content: str) -> list[str]:
    """Writes atomically (temp file + os.replace); returns the folders it had to create."""
    target = root / rel_path
    created = missing_dirs(target, root)
    write_atomic(target, content)
    return created


def remove_file(root: Path, rel_path: str, created_dirs: list[str] | None) -> None:
    """Removes the file (gone already is fine) and, innermost first, the folders its create
    made, as long as they are empty."""
    try:
        (root / rel_path).unlink()
    except FileNotFoundError:
        pass
    for d in reversed(created_dirs or []):
        try:
            os.rmdir(root / d)
        except FileNotFoundError:
            continue
        except OSError:
            break  # not empty (other files live there): leave it and its parents
