"""The site's NVUE snippet (switch_fabric_extra_nvue) merged into the plan, judged by NVIDIA's NVUE
object model before the push: the plan's own files are checked by `superpod check-nvue` and the
suite, the inventory's lines only here. The judge is the project's (topology/render/switches/
nvue_model.py: nvueschema's models walked key by key), for the release the plan was written for
(its startup.yaml header)."""

from __future__ import annotations

import re

_RELEASE = re.compile(r"NVIDIA Cumulus Linux (\d+\.\d+) NVUE")


def switch_fabric_nvue_problems(body: dict, startup_text: str) -> list[str]:
    """`path: message` for every problem of the merged `set` body; [] when the model accepts it."""
    try:
        from topology.render.switches.nvue_model import NEWEST_RELEASE, NvueModelUnavailable, check_set
    except ImportError as e:
        return [f"(controller): cannot check the site's NVUE lines without the project's NVUE model ({e}): "
                "run from the superpod project with `pip install 'superpod[nvue]'`"]
    m = _RELEASE.search(startup_text or "")
    try:
        return check_set(body, m.group(1) if m else NEWEST_RELEASE)
    except NvueModelUnavailable as e:
        return [f"(controller): {e}: pip install 'superpod[nvue]'"]


class FilterModule:
    def filters(self):
        return {"switch_fabric_nvue_problems": switch_fabric_nvue_problems}
