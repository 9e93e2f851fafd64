"""Render a task's variable once per task, not once per template that reads it (issue 39).

ansible-core 2.19 hands Jinja a lazy copy of the templar's variables for every template it renders:
each of the (hundreds of) variables is wrapped again, and a variable is rendered when a template
reads it, the result kept in that copy only. A role var of `vars/main.yml` that reads five others
renders them in a new copy of its own, so a var that ten others read is rendered ten times in one
task, and every render wraps the whole variable set again (the lazy wrapping alone was an eighth of
the controller's profile samples in a no-op `apply --full`; docs/operations.md, "Eleventh pass").

This keeps, per templar, the lazy copy of its own variables and hands Jinja that one again while
the variables are the same: the same mapping, holding the same keys bound to the same objects
(checked by identity at every render, so a loop's next item, a registered result or a fact
written back gives a fresh copy). Whatever a render finds is then kept for the task's later
renders, as within one template already. Jinja's locals and the per-call variables of a
conditional or a loop are not the templar's own mapping and are wrapped as before.

The hook is ansible-core's `_flatten_and_lazify_vars` (an internal): where it is missing `install`
returns False and nothing changes."""

from __future__ import annotations

import collections.abc as c
import operator
import typing as t

try:
    from ansible._internal._templating import _jinja_bits as ansible_jinja
    from ansible._internal._templating._utils import TemplateContext
except ImportError:  # not ansible-core 2.19
    ansible_jinja = None

# templars alive at once in a worker: the task's, a loop's, an action plugin's copies
MAX_TEMPLARS = 8


class LazyVariables:
    """A templar's variables as last handed to Jinja, with what they were made from."""

    __slots__ = ("mapping", "keys", "values", "lazy")

    def __init__(self, mapping: dict, lazy: c.Mapping) -> None:
        self.mapping = mapping
        self.keys = tuple(mapping)
        self.values = tuple(mapping.values())
        self.lazy = lazy

    def still_for(self, mapping: dict) -> bool:
        """Whether MAPPING is the one this was made from, unchanged: the same keys, each bound to
        the same object (a replaced value is a new object; the old one is held here, so its
        identity cannot be reused)."""
        return (mapping is self.mapping and tuple(mapping) == self.keys
                and all(map(operator.is_, mapping.values(), self.values)))


# keyed by the templar itself (hashed by identity; held here, so no other templar takes its place)
by_templar: dict[t.Any, LazyVariables] = {}


def lazy_variables(templar: t.Any, mapping: dict, lazify: c.Callable[[dict], c.Iterable[c.Mapping]]) -> c.Mapping:
    """The lazy copy of TEMPLAR's own variables MAPPING: the one made before while they are
    unchanged, else a new one (LAZIFY, ansible-core's own)."""
    entry = by_templar.get(templar)
    if entry is not None and entry.still_for(mapping):
        return entry.lazy
    (lazy,) = lazify(mapping)
    if entry is None and len(by_templar) >= MAX_TEMPLARS:
        del by_templar[next(iter(by_templar))]
    by_templar[templar] = LazyVariables(mapping, lazy)
    return lazy


def install() -> bool:
    """Put the cache on ansible-core's lazy wrapping of Jinja's variables (once). False where this
    ansible-core lacks what it hooks."""
    if ansible_jinja is None or not hasattr(ansible_jinja, "_flatten_and_lazify_vars"):
        return False
    flatten_and_lazify = ansible_jinja._flatten_and_lazify_vars
    if getattr(flatten_and_lazify, "shares_templar_variables", False):
        return True

    def flatten_and_lazify_vars(mapping: c.Mapping) -> c.Iterable[c.Mapping]:
        if type(mapping) is dict and mapping:
            context = TemplateContext.current(optional=True)
            templar = context.templar if context is not None else None
            if templar is not None and mapping is templar.available_variables:
                yield lazy_variables(templar, mapping, flatten_and_lazify)
                return
        yield from flatten_and_lazify(mapping)

    flatten_and_lazify_vars.shares_templar_variables = True
    ansible_jinja._flatten_and_lazify_vars = flatten_and_lazify_vars
    return True
