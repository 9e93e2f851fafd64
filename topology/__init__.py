"""superpod topology: a pod spec becomes the whole layout of a GPU SuperPOD."""

from topology.errors import SpecError

__all__ = ["build", "SpecError"]


def __getattr__(name: str):
    # `build` pulls in the whole layout (pydantic models, the catalog): imported when asked for,
    # so `superpod apply`/`drift` and the playbooks' filter plugins, which import topology.operate,
    # do not pay for it on every start
    if name == "build":
        from topology.layout.build import build

        return build
    raise AttributeError(f"module 'topology' has no attribute {name!r}")
