"""A rendered file as pieces of text: what the writers hand `publish` and the Pulumi program's
hash, so the largest files (labels.csv and layout.json, 100 MB each at 100k GPUs) are never held
whole (issue 39). A piece is any str; the file is their concatenation."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator

Pieces = Iterable[str]


def joined(render: Callable[..., Pieces]) -> Callable[..., str]:
    """`render`'s file as one str (for callers that want the whole text: tests, the report)."""

    @functools.wraps(render)
    def text(*args, **kwargs) -> str:
        return "".join(render(*args, **kwargs))

    return text


def pieces_of(content: str | Pieces) -> Iterator[str]:
    """A file's pieces, whether it came whole (a str) or in pieces."""
    if isinstance(content, str):
        return iter((content,))
    return iter(content)
