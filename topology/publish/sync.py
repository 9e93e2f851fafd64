"""The difference between the plan's objects and what Nautobot holds, and applying it in bulk.

Each object type is one `Kind`: how to read it (endpoint, natural key, the fields we manage, in
names rather than ids), what the plan wants, and how to write it (ids resolved from what was read
or just created). Types go parents first, so a child is written once its parent has an id.
Ownership: what we create carries the `superpod` tag; only tagged objects are ever deleted, and
only with prune. Tags someone added by hand are kept; an object we did not create is never given
our tag (so it never becomes ours to delete)."""

from __future__ import annotations

from collections.abc import Callable

from topology.publish.kinds import cable_ends, kinds
from topology.publish.nautobot import Nautobot
from topology.publish.sync_types import Change, Ctx, Kind, Report, ref_id
from topology.render.dcim import OWNER_TAG, Desired


def _same(want, have) -> bool:
    if isinstance(want, (set, frozenset)):  # tags, content types: ours must be there, others may be too
        return set(want) <= set(have or ())
    if isinstance(want, dict):
        return all(_same(v, (have or {}).get(k)) for k, v in want.items())
    if isinstance(want, float) or isinstance(have, float):
        return have is not None and want is not None and abs(float(want) - float(have)) < 1e-6
    return want == have


def _differences(want: dict, have: dict) -> dict[str, tuple]:
    return {k: (have.get(k), v) for k, v in want.items() if not _same(v, have.get(k))}


def _show(v) -> str:
    if isinstance(v, (set, frozenset)):
        return "{" + ",".join(sorted(map(str, v))) + "}"
    return str(v)


# ---- the engine ---------------------------------------------------------------------------------

def _owner_scope(kind: Kind, obj: dict, ctx: Ctx) -> bool:
    """May `obj` be pruned: it carries our tag (assignments: their address does) and is this pod's."""
    if kind.name == "ip_assignments":
        return ref_id(obj.get("ip_address")) in ctx.owned.get("ip_addresses", set())
    if OWNER_TAG not in ctx.tag_names(obj):
        return False
    site = ctx.desired.site
    if kind.name == "locations":
        return obj["name"] == site
    if kind.name in ("rack_groups", "racks", "devices"):
        return ctx.name("locations", obj.get("location")) == site
    if kind.name == "interfaces":
        return ctx.id("devices", ctx.name("devices", obj["device"])) in ctx.owned.get("devices", set())
    return True  # cables (tagged, touching this pod), prefixes and addresses (this pod's namespace)


def sync(client: Nautobot, desired: Desired, apply: bool = False, prune: bool = False,
         progress: Callable[[str], None] | None = None) -> Report:
    """Compare (and with apply, write) the plan's objects against Nautobot. Deletions of our
    objects no longer in the plan are listed always and applied only with prune, children first."""
    ctx = Ctx(desired)
    report = Report()
    deletions: list[tuple[Kind, list[str]]] = []
    for kind in kinds():
        params = kind.params(ctx)
        if kind.counted and params is not None and client.count(kind.endpoint, **params) >= len(kind.want(ctx)):
            continue  # all there (Nautobot made them from the templates): thousands of rows not read
        light = {} if kind.m2m else {"exclude_m2m": "true"}  # smaller pages, fewer joins on the server
        existing = [] if params is None else client.list(kind.endpoint, **params, **light)
        have: dict = {}
        for obj in existing:
            key = kind.key(obj, ctx)
            if key is not None:
                have[key] = obj
                ctx.remember(kind.name, key, obj["id"], OWNER_TAG in ctx.tag_names(obj))
        want = kind.want(ctx)
        creates, updates, recreate = [], [], []
        for key, fields in want.items():
            if key not in have:
                creates.append(key)
                report.add(kind.name, Change("create", kind.label(key)))
                continue
            if "tags" in fields and OWNER_TAG not in ctx.tag_names(have[key]):
                fields = want[key] = {**fields, "tags": fields["tags"] - {OWNER_TAG}}  # not ours: never claimed
            diff = _differences(fields, kind.fields(have[key], ctx))
            if not diff:
                continue
            detail = "; ".join(f"{k}: {_show(old)} -> {_show(new)}" for k, (old, new) in diff.items())
            if "ends" in diff:  # Nautobot cannot move a cable's ends: ours is replaced, another's is left
                if have[key]["id"] in ctx.owned.get(kind.name, set()):
                    recreate.append(key)
                    report.add(kind.name, Change("update", kind.label(key), detail))
                else:
                    report.add(kind.name, Change("conflict", kind.label(key), detail + " (not ours: left as is)"))
                continue
            updates.append((key, fields))
            report.add(kind.name, Change("update", kind.label(key), detail))
        stale = [key for key, obj in have.items() if key not in want and kind.prunable and _owner_scope(kind, obj, ctx)]
        for key in stale:
            report.add(kind.name, Change("delete", kind.label(key), "" if prune else "(needs --prune)"))
        if prune and stale:
            deletions.append((kind, [have[k]["id"] for k in stale]))
        if not apply:
            continue
        if progress:
            progress(f"{kind.name}: +{len(creates) + len(recreate)} ~{len(updates)}")
        if recreate:
            client.delete(kind.endpoint, [have[k]["id"] for k in recreate], parallel=kind.parallel)
            creates += recreate
        if kind.name == "cables":
            creates = _free_ends_only(creates, want, have, ctx, report)
        if creates:
            made = client.create(kind.endpoint, [kind.body(k, want[k], ctx) for k in creates], parallel=kind.parallel)
            for key, obj in zip(creates, made, strict=True):
                ctx.remember(kind.name, key, obj["id"], True)
        if updates:
            client.update(kind.endpoint, [{"id": have[k]["id"], **_update_body(kind, k, f, have[k], ctx)}
                                          for k, f in updates], parallel=kind.parallel)
    if apply:
        for kind, ids in reversed(deletions):
            client.delete(kind.endpoint, ids, parallel=kind.parallel)
    report.requests = client.requests
    return report


def _update_body(kind: Kind, key, fields: dict, obj: dict, ctx: Ctx) -> dict:
    body = kind.body(key, fields, ctx)
    if "tags" in fields:  # keep tags added by hand; never claim an object we did not create
        tags = set(fields["tags"]) | set(ctx.tag_names(obj))
        if OWNER_TAG not in ctx.tag_names(obj):
            tags.discard(OWNER_TAG)
        body["tags"] = ctx.tag_ids(tags)
    for name in ("content_types",):
        if name in fields:
            body[name] = sorted(set(fields[name]) | set(obj.get(name) or ()))
    return body


def _free_ends_only(creates: list, want: dict, have: dict, ctx: Ctx, report: Report) -> list:
    """A planned cable whose port already carries someone else's cable is reported, not forced."""
    taken = {e for key, obj in have.items() if key not in creates for e in (cable_ends(obj, ctx) or ())}
    out = []
    for key in creates:
        busy = [e for e in want[key]["ends"] if e in taken]
        if busy:
            report.add("cables", Change("conflict", str(key), f"port {busy[0][0]}:{busy[0][1]} has another cable"))
        else:
            out.append(key)
    return out
