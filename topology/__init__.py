"""superpod topology: a pod spec becomes the whole layout of a GPU SuperPOD."""

from topology.errors import SpecError
from topology.layout.build import build

__all__ = ["build", "SpecError"]
