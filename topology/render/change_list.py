"""Changes: what `superpod diff` lists per section (added, removed, changed), filled by
topology/render/diff.py and by each renderer that compares its own files (switches, slurm)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)
