"""superpod topology: a pod spec becomes the whole layout of a GPU SuperPOD."""

from topology.build import build
from topology.errors import SpecError

__all__ = ["build", "SpecError"]
