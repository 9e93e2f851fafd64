"""`superpod apply --canary SWITCH` and the rollout's report.

The batches are the plan's (inventory groups switch_rollout_<n>, topology/render/rollout.py);
site.yml runs one play per batch and stops the whole run at the first failed push or gate. Here:
the canary becomes the only member of the inventory's switch_canary group (an overlay written
beside the runs, so site.yml's first switch play takes it alone), and after a run that stopped,
a report says which switches were changed, where it stopped, and which were left untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import yaml
from rich.console import Console
from rich.markup import escape

from topology.operate.runs import OperateError, RunRequest
from topology.render.inventory import ETHERNET_SWITCHES
from topology.render.rollout import BATCHES, CANARY_GROUP


def _children(req: RunRequest) -> dict:
    hosts = req.inventory_dir / "hosts.yml"
    if not hosts.is_file():  # a run replayed from its recorded events: no inventory, so no switch is known
        return {}
    doc = yaml.safe_load(hosts.read_text(encoding="utf-8")) or {}
    return (doc.get("all") or {}).get("children") or {}


def _hosts(children: dict, group: str) -> list[str]:
    return list((children.get(group) or {}).get("hosts") or {})


def with_canary(req: RunRequest, canary: str) -> RunRequest:
    """The request with an overlay that puts `canary` alone in switch_canary."""
    children = _children(req)
    switches = _hosts(children, ETHERNET_SWITCHES)
    if canary not in switches:
        raise OperateError(f"--canary: {canary} is not an Ethernet switch of {req.inventory_dir}/hosts.yml "
                           f"(group {ETHERNET_SWITCHES}; InfiniBand switches are the subnet manager's)")
    if CANARY_GROUP not in children:
        raise OperateError(f"--canary: {req.inventory_dir}/hosts.yml has no {CANARY_GROUP} group; run "
                           f"`superpod plan --stack {req.stack}` again (the rollout batches are in newer inventories)")
    req.runs_root.mkdir(parents=True, exist_ok=True)
    overlay = req.runs_root / "canary.yml"
    overlay.write_text("# written by `superpod apply --canary`: the rollout's first switch, alone\n"
                       + yaml.safe_dump({"all": {"children": {CANARY_GROUP: {"hosts": {canary: None}}}}}),
                       encoding="utf-8")
    return replace(req, overlays=(*req.overlays, overlay))


@dataclass(frozen=True)
class RolloutStop:
    failed: list[str]  # the switches whose push or gate failed
    changed: list[str]  # switches this run changed (the failed ones included when they were)
    untouched: list[str]  # switches of the plan's batches this run never reached


@cache
def _plugins() -> None:
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()  # once per process: the inventory plugins the manager needs


def _in_scope(req: RunRequest, hosts: list[str]) -> set[str]:
    """The hosts among `hosts` that the run's --limit selects, as ansible resolves it."""
    if not req.limit:
        return set(hosts)
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    _plugins()
    inventory = InventoryManager(DataLoader(), [str(req.inventory_dir), *(str(p.resolve()) for p in req.overlays)])
    inventory.subset(req.limit)
    return {h.name for h in inventory.get_hosts(ETHERNET_SWITCHES)} & set(hosts)


def stopped(req: RunRequest, ran: set[str], changed: set[str], failed: set[str]) -> RolloutStop | None:
    """None unless a switch failed. `ran`: the hosts that ran tasks in this run."""
    children = _children(req)
    switches = _hosts(children, ETHERNET_SWITCHES)
    bad = sorted(failed & set(switches))
    if not bad:
        return None
    in_batches = [h for g in (CANARY_GROUP, *BATCHES) for h in _hosts(children, g)]
    order = list(dict.fromkeys(in_batches + switches))
    scope = _in_scope(req, order)
    return RolloutStop(bad, [h for h in order if h in changed], [h for h in order if h in scope and h not in ran])


def print_stop(console: Console, stop: RolloutStop) -> None:
    console.print(f"[bold red]rollout stopped[/] at {escape(', '.join(stop.failed))}: "
                  "the switches after it were not pushed", highlight=False)
    console.print(f"  changed in this run: {escape(', '.join(stop.changed)) or 'none'}", highlight=False)
    console.print(f"  left untouched: {escape(', '.join(stop.untouched)) or 'none'}", highlight=False)
