"""Buffer tables as SONiC builds them: the switch SKU's own buffers.json.j2 (Mellanox templates
from sonic-buildimage, testdata/sonic-platforms/) rendered with jinja2 over the planned PORT
table, the way `sonic-cfggen` renders it for `config qos reload`; then CABLE_LENGTH set to each
planned port's cable, rounded up to a length the SKU's pg_profile_lookup.ini has for the port's
speed (buffermgrd builds a lossless port's headroom profile from that row, and finds none for a
length it does not list)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jinja2

from topology.errors import SpecError
from topology.render.switches.sonic_platform import PLATFORMS, load

BUFFER_TABLES = ("BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE",
                 "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST", "CABLE_LENGTH")


def sku_dir(platform: str) -> Path:
    return PLATFORMS / platform / load(platform).sku


@cache
def _environment(platform: str) -> jinja2.Environment:
    dirs = [sku_dir(platform), PLATFORMS / "build_templates"]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"],
        trim_blocks=True,
        autoescape=False,  # noqa: S701 - JSON out, SONiC's own templates
    )
    # the two helpers sonic-cfggen gives its templates
    env.globals["template_exists"] = lambda name: any((d / name).is_file() for d in dirs)
    env.filters["sort_by_port_index"] = lambda names: names.sort(key=lambda n: int(n.removeprefix("Ethernet")))
    return env


@cache
def cable_rows(platform: str) -> dict[int, tuple[int, ...]]:
    """pg_profile_lookup.ini: port speed (Mb/s) -> the cable lengths (m) it has a profile for."""
    rows: dict[int, list[int]] = {}
    for line in (sku_dir(platform) / "pg_profile_lookup.ini").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            rows.setdefault(int(fields[0]), []).append(int(fields[1].removesuffix("m")))
    return {speed: tuple(sorted(lengths)) for speed, lengths in rows.items()}


def buffer_tables(field: str, platform: str, config: dict, cables_m: dict[str, float]) -> dict:
    """The SKU's buffer tables for `config` (its PORT and DEVICE_METADATA), with CABLE_LENGTH of
    the planned ports (`cables_m`: SONiC port -> planned cable length in m)."""
    context = {"PORT": config["PORT"], "DEVICE_METADATA": config["DEVICE_METADATA"], "asic_type": "mellanox"}
    rendered = json.loads(_environment(platform).get_template("buffers.json.j2").render(context))
    tables = {t: rendered[t] for t in BUFFER_TABLES if t in rendered}
    lengths = next(iter(tables["CABLE_LENGTH"].values()))
    rows = cable_rows(platform)
    for port, metres in cables_m.items():
        speed = int(config["PORT"][port]["speed"])
        fits = [m for m in rows.get(speed, ()) if m >= metres]
        if not fits:
            raise SpecError(field, f"sonic: {port} runs at {speed // 1000}G over {metres:g} m, and {platform}'s "
                                   f"pg_profile_lookup.ini has no lossless profile that long for that speed "
                                   f"(lengths {', '.join(f'{m}m' for m in rows.get(speed, ())) or 'none'})")
        lengths[port] = f"{fits[0]}m"
    return tables
