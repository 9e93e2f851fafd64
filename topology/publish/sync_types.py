"""What a Nautobot sync compares and reports: a `Kind` per object type (topology/publish/kinds.py),
the `Ctx` of ids and natural keys read or created so far, and the `Report` of changes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from topology.render.dcim import Desired


@dataclass(frozen=True)
class Change:
    action: str  # create, update, delete, conflict
    key: str
    detail: str = ""


@dataclass
class Report:
    changes: dict[str, list[Change]] = field(default_factory=dict)
    requests: int = 0

    def add(self, kind: str, change: Change) -> None:
        self.changes.setdefault(kind, []).append(change)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for kind, changes in self.changes.items():
            c = out.setdefault(kind, {"create": 0, "update": 0, "delete": 0, "conflict": 0})
            for ch in changes:
                c[ch.action] += 1
        return out

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.changes.values())


@dataclass
class Ctx:
    desired: Desired
    ids: dict[str, dict] = field(default_factory=dict)  # kind -> natural key -> id
    keys: dict[str, dict] = field(default_factory=dict)  # kind -> id -> natural key
    owned: dict[str, set] = field(default_factory=dict)  # kind -> ids carrying our tag

    def remember(self, kind: str, key: Hashable, obj_id: str, owned: bool) -> None:
        self.ids.setdefault(kind, {})[key] = obj_id
        self.keys.setdefault(kind, {})[obj_id] = key
        if owned:
            self.owned.setdefault(kind, set()).add(obj_id)

    def name(self, kind: str, ref) -> Hashable | None:
        """The natural key of a related object as the API gives it ({"id": ...} or null)."""
        return None if not ref else self.keys.get(kind, {}).get(ref_id(ref))

    def id(self, kind: str, key: Hashable) -> str | None:
        return None if key is None else self.ids.get(kind, {}).get(key)

    def tag_names(self, obj: dict) -> frozenset[str]:
        return frozenset(self.name("tags", t) for t in obj.get("tags") or ())

    def tag_ids(self, names) -> list[str]:
        return [self.ids["tags"][n] for n in sorted(names)]


@dataclass(frozen=True)
class Kind:
    name: str
    endpoint: str
    key: Callable[[dict, Ctx], Hashable | None]  # existing object -> natural key (None: not ours to look at)
    fields: Callable[[dict, Ctx], dict]  # existing object -> the managed fields, by name
    want: Callable[[Ctx], dict]  # natural key -> managed fields
    body: Callable[[Hashable, dict, Ctx], dict]  # natural key + fields -> API body
    params: Callable[[Ctx], dict | None] = lambda ctx: {}  # list filters; None: nothing can exist yet
    prunable: bool = True  # taggable and scoped to this pod: ours may be deleted
    parallel: bool = False  # objects independent of each other: chunks may be sent concurrently
    m2m: bool = True  # False: nothing compared is many-to-many (tags, content types), read with exclude_m2m
    counted: bool = False  # made by templates, never pruned: read only when the server holds fewer than planned
    label: Callable[[Hashable], str] = str



def ref_id(ref) -> str | None:
    """The id of a related object as the API gives it ({"id": ...}, a bare id, or null)."""
    return ref.get("id") if isinstance(ref, dict) else ref

