"""Switch configurations from the layout: one OS-neutral intent per switch (build.py, from the
section functions), one thin renderer per OS. Files land in build/<stack>/switches/<device>/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from topology import catalog
from topology.layout.model import Layout
from topology.render.switches.build import IntentInputs
from topology.render.switches.credentials import FILENAME as CREDENTIALS
from topology.render.switches.credentials import render_credentials
from topology.render.switches.frr import render_frr
from topology.render.switches.intent import SwitchIntent
from topology.render.switches.nvue_fabric import FabricShapes
from topology.render.switches.nvue_shape import ShapeCache
from topology.render.switches.opensm import opensm_conf, partitions_conf, storage_opensm_conf, storage_partitions_conf
from topology.render.switches.sonic import port_map, render_config_db

SUBDIR = "switches"


def sonic_frr_conf(sw: SwitchIntent, model: catalog.SwitchModel | None = None) -> str:
    """A SONiC switch's frr.conf: FRR names SONiC's ports (EthernetN, from the platform), not the plan's."""
    model = model or catalog.load().switches[sw.model]
    return render_frr(sw, port_map(sw, model).name_of)


def render_switch_configs(layout: Layout, out_dir: Path) -> dict[Path, str]:
    return dict(iter_switch_configs(layout, out_dir))


def iter_switch_configs(layout: Layout, out_dir: Path) -> Iterator[tuple[Path, str]]:
    """The switches' files one at a time (each rendered when asked for)."""
    cat = catalog.load()
    base = Path(out_dir) / SUBDIR
    inputs = IntentInputs(layout)
    nvue = ShapeCache()  # this render's templates: a switch's text by its role's shape
    fabric = FabricShapes(inputs, nvue)  # a compute or rack OOB switch of a known shape: from its cables
    for d, fabric_name, model in inputs.switches:
        folder = base / d.name
        got = fabric.render(d, fabric_name, model)
        if got is not None:
            text, slots = got
            yield folder / "startup.yaml", text
            if slots:
                yield folder / CREDENTIALS, slots
            continue
        sw = inputs.intent(d, fabric_name, model)
        if sw.os == "sonic":
            yield folder / "config_db.json", render_config_db(sw, model)
            yield folder / "frr.conf", sonic_frr_conf(sw, model)
        else:
            yield folder / "startup.yaml", nvue.render(sw)
        slots = render_credentials(sw)
        if slots:  # what the push fills in from the vault: names and protocols, never a secret
            yield folder / CREDENTIALS, slots
    if layout.spec.compute_fabric.kind == "infiniband":
        yield base / "subnet-manager" / "opensm.conf", opensm_conf(layout)
        yield base / "subnet-manager" / "partitions.conf", partitions_conf(layout)
    storage = layout.spec.storage_fabric
    if storage.enabled and cat.switches[storage.switch_model].kind == "infiniband":
        yield base / "storage-subnet-manager" / "opensm.conf", storage_opensm_conf(layout)
        yield base / "storage-subnet-manager" / "partitions.conf", storage_partitions_conf(layout)
