"""Every Cumulus Linux release the spec accepts, judged by its own NVUE model on the lab pod and
one switch per role of roce-1k (tests/test_nvue_model.py covers 5.6, 5.14, 5.15 and 5.18 in
the suite; importing one release's models costs 1.5-2 s, so the sweep lives here).

    .venv/bin/python bench/bench_nvue_releases.py

Prints per release: files checked, files refused, the first problem, and the seconds taken."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

from tests.conftest import spec_with  # noqa: E402
from topology.layout.build import build  # noqa: E402
from topology.render.switches.build import build_intents  # noqa: E402
from topology.render.switches.nvue import render_nvue  # noqa: E402
from topology.render.switches.nvue_model import check_startup  # noqa: E402
from topology.spec import CUMULUS_RELEASES, GNMI_SINCE, release_key  # noqa: E402

SERVICES = {"ntp_servers": ["192.0.2.10"], "dns_servers": ["192.0.2.53"], "syslog_servers": ["192.0.2.20"],
            "bgp_graceful_restart": "full"}


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def main() -> int:
    failed = 0
    for release in CUMULUS_RELEASES:
        start = time.perf_counter()
        checked, refused, first = 0, 0, ""
        for stack in ("lab", "roce-1k"):
            seen = set()
            # every service on, in the release's own places (gNMI only from GNMI_SINCE: the spec refuses it before)
            services = {**SERVICES, "gnmi_server": release_key(release) >= release_key(GNMI_SINCE)}
            spec = spec_with(stack, switch_software={"cumulus_release": release}, switch_services=services)
            for sw in build_intents(build(spec)):
                if sw.os != "cumulus" or (stack != "lab" and (sw.role, sw.model) in seen):
                    continue
                seen.add((sw.role, sw.model))
                errors = check_startup(yaml.load(render_nvue(sw), Loader=LOADER), release)  # noqa: S506
                checked += 1
                if errors:
                    refused += 1
                    first = first or f"{sw.name}: {errors[0]}"
        failed += refused > 0
        took = time.perf_counter() - start
        print(f"{release:>5}  {checked:3d} checked  {refused:3d} refused  {took:5.1f} s  {first}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
