"""Device names. A name depends only on the device's position and the pod's end state
(`max_scalable_units` fixes the number widths), so growing a pod renames nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass


def width(count: int) -> int:
    return max(2, len(str(count)))


def row_letters(row: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: spreadsheet-style row names."""
    letters = ""
    row += 1
    while row:
        row, rem = divmod(row - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return letters


# %-formats with a `*` width: one C call where a nested f-string spec is parsed per call (the
# build names every node, leaf and spine end of every cable: a tenth of the 8k build)
_SU, _NODE, _LEAF = "su%0*d", "su%0*d-node%0*d", "su%0*d-leaf-rail%s"
_SPINE, _CORE, _STORAGE_LEAF = "spine-%0*d", "core-%0*d", "su%0*d-storage-leaf"


@dataclass(frozen=True)
class Names:
    su_width: int
    node_width: int
    spine_width: int
    core_width: int

    def su(self, su: int) -> str:
        return _SU % (self.su_width, su)

    def node(self, su: int, node: int) -> str:
        return _NODE % (self.su_width, su, self.node_width, node)

    def leaf(self, su: int, rail: int) -> str:
        return _LEAF % (self.su_width, su, rail)

    def spine(self, index: int) -> str:  # 0-based position
        return _SPINE % (self.spine_width, index + 1)

    def core(self, index: int) -> str:
        return _CORE % (self.core_width, index + 1)

    def storage_leaf(self, su: int) -> str:
        return _STORAGE_LEAF % (self.su_width, su)

    def inband(self, su: int, side: int) -> str:
        return f"{self.su(su)}-inband-{chr(ord('a') + side)}"

    @staticmethod
    def numbered(prefix: str, index: int, count: int) -> str:
        return f"{prefix}-{index + 1:0{width(count)}d}"

    @staticmethod
    def rack(row: int, position: int) -> str:
        return f"rack-{row_letters(row)}{position:02d}"


def natural_key(name: str) -> tuple:
    """Orders names as people read them: swp2 before swp10, rack-a2 before rack-a10."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name))
